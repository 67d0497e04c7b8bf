// A minimal test harness for the native unit tests (no third-party framework: the build has no
// network). A test program is one .cpp of TEST_CASEs; including this header also defines its
// main(), which runs every case (or those whose name contains argv[1]), prints each failed check
// as file:line with the values compared, and returns 1 if any check failed. Define
// CHECK_NO_MAIN before including it in a program's other files, if it has more than one.
//
//   TEST_CASE("selector: 0 bytes go to dda_flat") {
//     CHECK_EQ(algoName(selectAllReduce(in, cfg).algo), "dda_flat");
//     CHECK_THROWS_AS(parseAlgo("x", "algo"), ctran::InvalidArgument, "unknown allreduce");
//   }
//
// Checks do not stop the case (every failure of a case is reported); an exception escaping a
// case fails it. check::ScopedEnv sets an environment variable for a scope (knobs are read from
// the environment on every call).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace check {

struct TestCase {
  const char* name;
  void (*fn)();
  const char* file;
  int line;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> cases;
  return cases;
}

inline bool addTest(const char* name, void (*fn)(), const char* file, int line) {
  registry().push_back({name, fn, file, line});
  return true;
}

/// Failed checks of the case that runs now.
inline int& failures() {
  static int n = 0;
  return n;
}

inline void fail(const char* file, int line, const std::string& what) {
  ++failures();
  std::printf("%s:%d: FAILED %s\n", file, line, what.c_str());  // stdout: in order with the rest
}

template <typename T, typename = void>
struct Streamable : std::false_type {};
template <typename T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<T>())>>
    : std::true_type {};

/// A value as the failure message shows it: strings quoted, enums as their number.
template <typename T>
std::string show(const T& v) {
  std::ostringstream os;
  if constexpr (std::is_convertible_v<const T&, const char*> ||
                std::is_convertible_v<const T&, std::string>) {
    os << '"' << std::string(v) << '"';
  } else if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_same_v<T, unsigned char> || std::is_same_v<T, signed char>) {
    os << static_cast<int>(v);  // uint8_t / int8_t are numbers here, not characters
  } else if constexpr (std::is_enum_v<T>) {
    os << "enum " << static_cast<long long>(v);
  } else if constexpr (Streamable<const T&>::value) {
    os << v;
  } else {
    os << "(unprintable)";
  }
  return os.str();
}

/// a == b, comparing C strings by their characters and integers of mixed signedness by value.
template <typename A, typename B>
bool equal(const A& a, const B& b) {
  if constexpr (std::is_convertible_v<const A&, const char*> &&
                std::is_convertible_v<const B&, const char*>) {
    return std::string(a) == std::string(b);
  } else if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                       !std::is_same_v<B, bool>) {
    if ((a < 0) != (b < 0)) return false;
    return a < 0 ? static_cast<long long>(a) == static_cast<long long>(b)
                 : static_cast<unsigned long long>(a) == static_cast<unsigned long long>(b);
  } else {
    return a == b;
  }
}

template <typename A, typename B>
void checkEq(const A& a, const B& b, const char* aText, const char* bText, const char* file,
             int line) {
  if (!equal(a, b)) {
    fail(file, line,
         std::string("CHECK_EQ(") + aText + ", " + bText + "): " + show(a) + " != " + show(b));
  }
}

/// Sets (or, given nullptr, unsets) an environment variable for its lifetime, then restores it:
/// the knobs are read from the environment on every call.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (hadOld_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (hadOld_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool hadOld_ = false;
};

inline int runAll(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  int run = 0, failed = 0;
  for (const TestCase& t : registry()) {
    if (!filter.empty() && std::string(t.name).find(filter) == std::string::npos) continue;
    ++run;
    failures() = 0;
    try {
      t.fn();
    } catch (const std::exception& e) {
      fail(t.file, t.line, std::string("uncaught exception: ") + e.what());
    } catch (...) {
      fail(t.file, t.line, "uncaught exception of unknown type");
    }
    std::printf("[%s] %s\n", failures() == 0 ? "  OK  " : "FAILED", t.name);
    failed += failures() != 0;
  }
  std::printf("%d test case(s), %d failed\n", run, failed);
  if (run == 0) {
    std::printf("no test case matches '%s'\n", filter.c_str());
    return 1;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace check

#define CHECK_CAT_(a, b) a##b
#define CHECK_CAT(a, b) CHECK_CAT_(a, b)

/// Defines and registers a test case; `name` is a string literal.
#define TEST_CASE(name)                                                             \
  static void CHECK_CAT(checkCase_, __LINE__)();                                    \
  static const bool CHECK_CAT(checkAdded_, __LINE__) =                              \
      ::check::addTest(name, &CHECK_CAT(checkCase_, __LINE__), __FILE__, __LINE__); \
  static void CHECK_CAT(checkCase_, __LINE__)()

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) ::check::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ(a, b) ::check::checkEq((a), (b), #a, #b, __FILE__, __LINE__)

/// `expr` throws a `Type` whose what() contains `substring`.
#define CHECK_THROWS_AS(expr, Type, substring)                                                   \
  do {                                                                                           \
    const std::string checkWant_ = (substring);                                                  \
    try {                                                                                        \
      (void)(expr);                                                                              \
      ::check::fail(__FILE__, __LINE__, "CHECK_THROWS_AS(" #expr ", " #Type "): no exception");  \
    } catch (const Type& checkError_) {                                                          \
      const std::string checkGot_ = checkError_.what();                                          \
      if (checkGot_.find(checkWant_) == std::string::npos) {                                     \
        ::check::fail(__FILE__, __LINE__,                                                        \
                      "CHECK_THROWS_AS(" #expr ", " #Type "): message \"" + checkGot_ +          \
                          "\" lacks \"" + checkWant_ + "\"");                                    \
      }                                                                                          \
    } catch (const std::exception& checkError_) {                                                \
      ::check::fail(__FILE__, __LINE__,                                                          \
                    std::string("CHECK_THROWS_AS(" #expr ", " #Type "): threw another type: ") + \
                        checkError_.what());                                                     \
    } catch (...) {                                                                              \
      ::check::fail(__FILE__, __LINE__,                                                          \
                    "CHECK_THROWS_AS(" #expr ", " #Type "): threw a non-std::exception");        \
    }                                                                                            \
  } while (0)

#ifndef CHECK_NO_MAIN
int main(int argc, char** argv) { return ::check::runAll(argc, argv); }
#endif
