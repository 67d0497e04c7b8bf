// NCCL 2.31's parameter calls (ncclParamBind, ncclParamGet*, ncclParamGetParameter,
// ncclParamGetAllParameterKeys, ncclParamDumpAll) over RCCLX's one knob registry: the keys are
// the knobs' names (RCCLX_*, RCCL_* and the NCCL_* ones RCCLX honours), each read as the library
// reads it (the environment, else the default) at the time of the call. A key without its
// prefix is also found as NCCL_<key>, RCCLX_<key> or RCCL_<key>.
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "api.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "rcclx/knobs.hpp"

/// What a handle names: one knob of the registry (the handles live as long as the process).
struct ncclParamHandle {
  std::string name;
};

namespace rcclx::nccl {
namespace {

/// The knob `key` names, with its value now; throws InvalidArgument naming the key otherwise.
ctran::KnobValue lookup(const char* key, const char* what) {
  CTRAN_CHECK(key != nullptr, ctran::InvalidArgument, what, " is NULL");
  const std::string k(key);
  const auto all = rcclx::knobs();
  for (const char* prefix : {"", "NCCL_", "RCCLX_", "RCCL_"}) {
    for (const ctran::KnobValue& v : all)
      if (std::string(prefix) + k == v.spec.name) return v;
  }
  throw ctran::InvalidArgument(ctran::strCat(what, " '", k,
                                             "' names no parameter of this "
                                             "library (ncclParamGetAllParameterKeys lists them)"));
}

ncclParamHandle* handleFor(const std::string& name) {
  static std::mutex mu;
  static std::deque<ncclParamHandle> handles;  // stable addresses
  std::lock_guard<std::mutex> lock(mu);
  for (ncclParamHandle& h : handles)
    if (h.name == name) return &h;
  handles.push_back({name});
  return &handles.back();
}

/// The value of a numeric knob (booleans as 0 / 1, byte sizes in bytes).
int64_t numberOf(const ncclParamHandle* h) {
  CTRAN_CHECK(h != nullptr, ctran::InvalidArgument, "h is NULL");
  const ctran::KnobSpec& s = ctran::config::spec(h->name);
  switch (s.type) {
    case ctran::KnobType::kBool: return ctran::config::getBool(s.name) ? 1 : 0;
    case ctran::KnobType::kInt: return ctran::config::getInt(s.name);
    case ctran::KnobType::kBytes: return ctran::config::getBytes(s.name);
    case ctran::KnobType::kString:
    case ctran::KnobType::kEnum: break;
  }
  throw ctran::InvalidArgument(
      ctran::strCat("parameter ", s.name, " is a string (read it with ncclParamGetStr)"));
}

template <typename T>
ncclResult_t getAs(const char* entryPoint, ncclParamHandle_t h, T* out) {
  return boundary(entryPoint, [&] {
    CTRAN_CHECK(out != nullptr, ctran::InvalidArgument, "out is NULL");
    const int64_t v = numberOf(h);
    const bool fits = std::is_signed_v<T>
                          ? v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max()
                          : v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max();
    CTRAN_CHECK(fits, ctran::InvalidArgument, "parameter ", h->name, " = ", v, " does not fit ",
                std::is_signed_v<T> ? "a signed " : "an unsigned ", 8 * sizeof(T), "-bit integer");
    *out = static_cast<T>(v);
  });
}

/// The string a thread's last ncclParamGetStr / ncclParamGetParameter returned (valid until
/// its next such call, as nccl.h says).
std::string& threadString() {
  thread_local std::string s;
  return s;
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;

NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key) {
  return boundary("ncclParamBind", [&] {
    CTRAN_CHECK(out != nullptr, ctran::InvalidArgument, "out is NULL");
    *out = rcclx::nccl::handleFor(rcclx::nccl::lookup(key, "key").spec.name);
  });
}

#define RCCLX_PARAM_GET(Name, T)                                           \
  NCCL_API(ncclResult_t, ncclParamGet##Name, ncclParamHandle_t h, T* out); \
  ncclResult_t ncclParamGet##Name(ncclParamHandle_t h, T* out) {           \
    return rcclx::nccl::getAs("ncclParamGet" #Name, h, out);               \
  }
RCCLX_PARAM_GET(I8, int8_t)
RCCLX_PARAM_GET(I16, int16_t)
RCCLX_PARAM_GET(I32, int32_t)
RCCLX_PARAM_GET(I64, int64_t)
RCCLX_PARAM_GET(U8, uint8_t)
RCCLX_PARAM_GET(U16, uint16_t)
RCCLX_PARAM_GET(U32, uint32_t)
RCCLX_PARAM_GET(U64, uint64_t)
#undef RCCLX_PARAM_GET

NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out) {
  return boundary("ncclParamGetStr", [&] {
    CTRAN_CHECK(h != nullptr && out != nullptr, ctran::InvalidArgument, h == nullptr ? "h" : "out",
                " is NULL");
    std::string& s = rcclx::nccl::threadString();
    s = rcclx::nccl::lookup(h->name.c_str(), "parameter").value;
    *out = s.c_str();
  });
}

// The raw form: a numeric parameter as its 8-byte int64_t, a string as its bytes (no NUL).
NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len) {
  return boundary("ncclParamGet", [&] {
    CTRAN_CHECK(h != nullptr, ctran::InvalidArgument, "h is NULL");
    CTRAN_CHECK(out != nullptr && len != nullptr, ctran::InvalidArgument,
                out == nullptr ? "out" : "len", " is NULL");
    const ctran::KnobSpec& s = ctran::config::spec(h->name);
    const bool text = s.type == ctran::KnobType::kString || s.type == ctran::KnobType::kEnum;
    std::string bytes;
    if (text) {
      bytes = rcclx::nccl::lookup(s.name, "parameter").value;
    } else {
      const int64_t v = rcclx::nccl::numberOf(h);
      bytes.assign(reinterpret_cast<const char*>(&v), sizeof(v));
    }
    CTRAN_CHECK(maxLen >= 0 && bytes.size() <= static_cast<size_t>(maxLen), ctran::InvalidArgument,
                "maxLen ", maxLen, " is less than parameter ", s.name, "'s ", bytes.size(),
                " bytes");
    std::memcpy(out, bytes.data(), bytes.size());
    *len = static_cast<int>(bytes.size());
  });
}

NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen);
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen) {
  return boundary("ncclParamGetParameter", [&] {
    CTRAN_CHECK(value != nullptr && valueLen != nullptr, ctran::InvalidArgument,
                value == nullptr ? "value" : "valueLen", " is NULL");
    std::string& s = rcclx::nccl::threadString();
    s = rcclx::nccl::lookup(key, "key").value;
    *value = s.c_str();
    *valueLen = static_cast<int>(s.size());
  });
}

NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen) {
  return boundary("ncclParamGetAllParameterKeys", [&] {
    CTRAN_CHECK(table != nullptr && tableLen != nullptr, ctran::InvalidArgument,
                table == nullptr ? "table" : "tableLen", " is NULL");
    // Knob names are static strings of the libraries' tables: only the table is per thread.
    thread_local std::vector<const char*> keys;
    keys.clear();
    for (const ctran::KnobValue& v : rcclx::knobs()) keys.push_back(v.spec.name);
    *table = keys.data();
    *tableLen = static_cast<int>(keys.size());
  });
}

// Every parameter at INFO (RCCLX_DEBUG / NCCL_DEBUG=INFO shows them), one line each.
NCCL_API(void, ncclParamDumpAll, void);
void ncclParamDumpAll(void) {
  try {
    for (const ctran::KnobValue& v : rcclx::knobs())
      CTRAN_INFO("parameter ", v.spec.name, "=", v.value, v.fromEnv ? " (environment)" : "");
  } catch (...) {  // a void C function: nothing may escape, and there is nothing to report to
  }
}
