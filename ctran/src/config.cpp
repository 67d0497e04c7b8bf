// The knob registry: declaration tables, parsing and the dump.
#include "ctran/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "ctran/checks.hpp"

namespace ctran::config {
namespace {

const KnobSpec kCtranKnobs[] = {
#define CTRAN_KNOB(NAME, TYPE, DEFAULT, CHOICES, DESCRIPTION) \
  {#NAME, KnobType::k##TYPE, DEFAULT, CHOICES, DESCRIPTION},
#include "ctran/knobs.def"
#undef CTRAN_KNOB
};

struct Registry {
  std::mutex mu;
  std::vector<const KnobSpec*> tables;
  // A deque: spec() hands out references that a later declare() (another library's table,
  // possibly from another thread creating its communicator) must not invalidate.
  std::deque<KnobSpec> specs;

  Registry() { add(kCtranKnobs, sizeof(kCtranKnobs) / sizeof(kCtranKnobs[0])); }

  void add(const KnobSpec* table, size_t n) {
    if (std::find(tables.begin(), tables.end(), table) != tables.end()) return;
    tables.push_back(table);
    for (size_t i = 0; i < n; ++i) {
      for (const auto& s : specs) {
        CTRAN_ASSERT(std::string(s.name) != table[i].name, "knob ", s.name, " declared twice");
      }
      specs.push_back(table[i]);
    }
  }
};

// Never destroyed: threads of the library (a store server's clients, a transport's progress
// thread) may still read knobs while the process runs its static destructors at exit.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n");
  size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Effective raw value: the override's when there is one, else the environment's when set (and
// non-empty), else the default. `source` says which, for error messages.
std::string raw(const KnobSpec& s, const Overrides* overrides, const char** source = nullptr) {
  if (overrides != nullptr) {
    auto it = overrides->find(s.name);
    if (it != overrides->end()) {
      if (source) *source = "hint";
      return trim(it->second);
    }
  }
  if (source) *source = "environment variable";
  const char* env = std::getenv(s.name);
  return env != nullptr && *env != '\0' ? trim(env) : std::string(s.defaultValue);
}

std::string raw(const KnobSpec& s, bool* fromEnv) {
  const char* env = std::getenv(s.name);
  bool set = env != nullptr && *env != '\0';
  if (fromEnv) *fromEnv = set;
  return set ? trim(env) : std::string(s.defaultValue);
}

std::vector<std::string> splitChoices(const char* choices) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = choices; *p; ++p) {
    if (*p == '|') {
      out.push_back(lower(cur));
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(lower(cur));
  return out;
}

[[noreturn]] void badValue(const char* source, const KnobSpec& s, const std::string& v,
                           const char* expected) {
  throw InvalidArgument(strCat(source, " ", s.name, "='", v, "' is not ", expected));
}

}  // namespace

void declare(const KnobSpec* specs, size_t count) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.add(specs, count);
}

const KnobSpec& spec(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& s : r.specs) {
    if (name == s.name) return s;
  }
  throw InvalidArgument(strCat("unknown knob '", name, "'"));
}

void checkOverrides(const Overrides& overrides) {
  for (const auto& [name, value] : overrides) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    bool known = false;
    for (const auto& s : r.specs) known |= name == s.name;
    CTRAN_CHECK(known, InvalidArgument, "hint ", name, "='", value,
                "' names no knob (hints take knob names, e.g. RCCLX_ALLREDUCE_ALGO; see "
                "config_dump())");
  }
}

std::vector<KnobValue> dump() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<KnobValue> out;
  for (const auto& s : r.specs) {
    bool fromEnv = false;
    std::string v = raw(s, &fromEnv);
    out.push_back({s, v, fromEnv});
  }
  return out;
}

bool getBool(const char* name, const Overrides* overrides) {
  const KnobSpec& s = spec(name);
  const char* source = nullptr;
  std::string v = lower(raw(s, overrides, &source));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  badValue(source, s, v, "a boolean (0/1, true/false, yes/no, on/off)");
}

int64_t getInt(const char* name, const Overrides* overrides) {
  const KnobSpec& s = spec(name);
  const char* source = nullptr;
  std::string v = raw(s, overrides, &source);
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used, 0);
    // Every integer knob is a count, a duration or a port.
    if (used == v.size() && x >= 0) return x;
  } catch (const std::exception&) {
  }
  badValue(source, s, v, "a non-negative integer");
}

int64_t getBytes(const char* name, const Overrides* overrides) {
  const KnobSpec& s = spec(name);
  const char* source = nullptr;
  std::string v = raw(s, overrides, &source);
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used, 0);
    std::string suffix = lower(v.substr(used));
    int64_t mult = 1;
    if (suffix == "k" || suffix == "kb" || suffix == "kib")
      mult = int64_t{1} << 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib")
      mult = int64_t{1} << 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib")
      mult = int64_t{1} << 30;
    else if (!suffix.empty())
      badValue(source, s, v, "a byte size (e.g. 4096, 64K, 16M, 1G)");
    if (x >= 0) return x * mult;
  } catch (const std::invalid_argument&) {
  } catch (const std::out_of_range&) {
  }
  badValue(source, s, v, "a non-negative byte size (e.g. 4096, 64K, 16M, 1G)");
}

std::string getString(const char* name, const Overrides* overrides) {
  return raw(spec(name), overrides);
}

std::string getEnum(const char* name, const Overrides* overrides) {
  const KnobSpec& s = spec(name);
  const char* source = nullptr;
  std::string v = lower(raw(s, overrides, &source));
  for (const auto& c : splitChoices(s.choices)) {
    if (c == v) return v;
  }
  badValue(source, s, v, strCat("one of ", s.choices).c_str());
}

}  // namespace ctran::config
