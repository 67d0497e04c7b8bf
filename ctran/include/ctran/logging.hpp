// Leveled logging to stderr: "[rcclx host:pid:rank LEVEL] message", filtered by RCCLX_DEBUG.
#pragma once

#include <string>

#include "ctran/checks.hpp"

namespace ctran::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

/// Current level from RCCLX_DEBUG (read once per process, or again after refresh()).
Level level();
/// Re-reads RCCLX_DEBUG (tests change it at run time).
void refresh();
/// Sets the rank shown in the prefix of this thread's messages, and of the messages of threads
/// that set none (-1: none). A process driving several ranks (one thread each) keeps each
/// thread's own.
void setRank(int rank);
/// Sets the rank shown in this thread's messages only (a worker thread acting for a rank).
void setThreadRank(int rank);
/// The rank this thread's messages show (-1: none).
int rank();
/// Writes one line if `lvl` is enabled.
void write(Level lvl, const std::string& message);

}  // namespace ctran::log

#define CTRAN_LOG(LEVEL, ...)                                                           \
  do {                                                                                  \
    if (::ctran::log::level() >= ::ctran::log::Level::k##LEVEL)                         \
      ::ctran::log::write(::ctran::log::Level::k##LEVEL, ::ctran::strCat(__VA_ARGS__)); \
  } while (0)
#define CTRAN_WARN(...) CTRAN_LOG(Warn, __VA_ARGS__)
#define CTRAN_INFO(...) CTRAN_LOG(Info, __VA_ARGS__)
#define CTRAN_TRACE(...) CTRAN_LOG(Trace, __VA_ARGS__)
