// The one registry of environment knobs.
//
// Every knob of every RCCLX library is declared once, in a `knobs.def` table of its library
// (name, type, default, choices, description). Values are read from the environment at each
// access (never cached), so a process may change its environment between communicators.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ctran {

/// How a knob's string value is parsed.
enum class KnobType { kBool, kInt, kBytes, kString, kEnum };

/// The declaration of one knob.
struct KnobSpec {
  const char* name;          ///< environment variable, e.g. "RCCLX_TIMEOUT_MS"
  KnobType type;             ///< parsing rule
  const char* defaultValue;  ///< default, as it would be written in the environment
  const char* choices;       ///< for kEnum: values separated by '|'; otherwise ""
  const char* description;   ///< one sentence for the docs
};

/// A knob with its effective value and where that value came from.
struct KnobValue {
  KnobSpec spec;
  std::string value;  ///< effective value (environment or default)
  bool fromEnv;       ///< true when the environment set it
};

namespace config {

/// Adds a library's table to the registry (idempotent per table).
void declare(const KnobSpec* specs, size_t count);

/// Effective values of every declared knob, in declaration order.
std::vector<KnobValue> dump();

/// The declaration of `name`; throws InvalidArgument for an undeclared knob.
const KnobSpec& spec(const std::string& name);

/// Per-communicator values that take precedence over the environment: knob name -> value, as it
/// would be written in the environment (the hints of a torchcomms communicator, the fields of an
/// ncclConfig_t). A bad value is reported as "hint NAME='value'".
using Overrides = std::map<std::string, std::string>;

/// Throws InvalidArgument naming the key when `overrides` holds a name no table declares.
void checkOverrides(const Overrides& overrides);

// The typed reads: the override when `overrides` holds the name, else the environment, else
// the default; a value that does not parse throws InvalidArgument naming the knob and value.
bool getBool(const char* name, const Overrides* overrides = nullptr);
int64_t getInt(const char* name, const Overrides* overrides = nullptr);
/// Byte sizes accept suffixes K, M, G (powers of 1024), e.g. "16M".
int64_t getBytes(const char* name, const Overrides* overrides = nullptr);
std::string getString(const char* name, const Overrides* overrides = nullptr);
/// Returns the value lower-cased after checking it is one of the declared choices.
std::string getEnum(const char* name, const Overrides* overrides = nullptr);

}  // namespace config

/// Typed accessors for ctran's own knobs: ctran::knob::RCCLX_TIMEOUT_MS() and so on.
namespace knob {
#define CTRAN_KNOB(NAME, TYPE, DEFAULT, CHOICES, DESCRIPTION) \
  inline auto NAME() { return ::ctran::config::get##TYPE(#NAME); }
#include "ctran/knobs.def"
#undef CTRAN_KNOB
}  // namespace knob

}  // namespace ctran
