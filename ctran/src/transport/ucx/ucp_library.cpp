// Implementation of ucp_library.hpp: the search for libucp.so.0 and the symbol table.
#include "ucp_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"

namespace ctran::ucx {
namespace {

constexpr const char* kSoname = "libucp.so.0";

struct Candidate {
  std::string path;    // what dlopen is given
  std::string source;  // where it came from, for messages
};

bool isDirectory(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The candidates in search order, and notes on the places that offered none.
std::vector<Candidate> candidates(std::vector<std::string>* notes) {
  const std::string forced = knob::RCCLX_UCX_LIBRARY();
  if (!forced.empty()) {
    std::string path = isDirectory(forced) ? forced + "/" + kSoname : forced;
    return {{path, "RCCLX_UCX_LIBRARY=" + forced}};
  }
  std::vector<Candidate> out;
  const std::string wheel = knob::RCCLX_UCX_WHEEL_DIR();
  if (!wheel.empty()) {
    out.push_back({wheel + "/" + kSoname, "libucx wheel (RCCLX_UCX_WHEEL_DIR=" + wheel + ")"});
  } else {
    notes->push_back(
        "libucx wheel: none (RCCLX_UCX_WHEEL_DIR is unset: ctran's Python package sets it when "
        "the libucx package, PyPI libucx-cu12 or libucx-cu13, is installed)");
  }
  Candidate system{kSoname, "system (the dynamic linker's search path)"};
  if (knob::RCCLX_UCX_PREFER_SYSTEM()) {
    out.insert(out.begin(), system);
  } else {
    out.push_back(system);
  }
  return out;
}

// Opens `c` and fills `lib`; returns "" or why this candidate is unusable.
std::string tryLoad(const Candidate& c, UcpApi* api, std::string* resolved) {
  // RTLD_LOCAL: UCX's symbols stay out of the global namespace, where they could clash with
  // another copy of UCX that the process loads (as libucx.load_library() keeps them too).
  void* handle = ::dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return err ? err : "dlopen failed";
  }
  std::vector<std::string> missing;
#define RCCLX_UCP_RESOLVE(name)                                              \
  api->name = reinterpret_cast<decltype(api->name)>(::dlsym(handle, #name)); \
  if (api->name == nullptr) missing.push_back(#name);
  RCCLX_UCP_FUNCTIONS(RCCLX_UCP_RESOLVE)
#undef RCCLX_UCP_RESOLVE
  if (!missing.empty()) {
    ::dlclose(handle);
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return strCat("it lacks ", names, " (UCX older than 1.13?)");
  }
  unsigned major = 0, minor = 0, release = 0;
  api->ucp_get_version(&major, &minor, &release);
  if (major != kUcpApiMajor || minor < kUcpApiMinor) {
    ::dlclose(handle);
    return strCat("it is UCX ", major, ".", minor, ".", release, "; the ucx transport needs ",
                  kUcpApiMajor, ".", kUcpApiMinor, " or newer");
  }
  struct link_map* map = nullptr;
  *resolved = ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name
                  ? map->l_name
                  : c.path;
  return "";
}

struct LoadState {
  std::mutex mu;
  std::unique_ptr<UcpLibrary> loaded;
};

LoadState& state() {
  static LoadState s;
  return s;
}

}  // namespace

const UcpLibrary* UcpLibrary::tryGet(std::string* why) {
  LoadState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.loaded) return s.loaded.get();
  std::vector<std::string> notes;
  std::string tried;
  for (const Candidate& c : candidates(&notes)) {
    UcpApi api;
    std::string resolved;
    std::string err = tryLoad(c, &api, &resolved);
    if (err.empty()) {
      std::unique_ptr<UcpLibrary> lib(new UcpLibrary());
      lib->api_ = api;
      lib->path_ = resolved;
      lib->source_ = c.source;
      unsigned major = 0, minor = 0, release = 0;
      api.ucp_get_version(&major, &minor, &release);
      lib->version_ = strCat(major, ".", minor, ".", release);
      CTRAN_INFO("ucx transport: loaded UCX ", lib->version_, " from ", lib->path_, " (", c.source,
                 ")");
      s.loaded = std::move(lib);
      return s.loaded.get();
    }
    tried += strCat("; ", c.source, ": ", c.path, ": ", err);
  }
  if (why != nullptr) {
    std::string skipped;
    for (const auto& n : notes) skipped += "; " + n;
    *why = strCat("could not load ", kSoname, " (UCX ", kUcpApiMajor, ".", kUcpApiMinor,
                  " or newer)", tried, skipped,
                  ". Install it (pip install libucx-cu12, or apt-get install libucx0) or point "
                  "RCCLX_UCX_LIBRARY at a cluster's libucp.so.0");
  }
  return nullptr;
}

const UcpLibrary& UcpLibrary::get() {
  std::string why;
  const UcpLibrary* lib = tryGet(&why);
  CTRAN_CHECK(lib != nullptr, InvalidUsage, "ucx transport: ", why);
  return *lib;
}

std::string statusText(const UcpApi& api, ucs_status_t status) {
  return strCat(api.ucs_status_string(status), " (status ", static_cast<int>(status), ")");
}

}  // namespace ctran::ucx
