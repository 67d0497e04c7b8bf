// Implementation of logging.hpp.
#include "ctran/logging.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "ctran/config.hpp"

namespace ctran::log {
namespace {

std::atomic<int> gLevel{-1};
std::atomic<int> gRank{-1};
thread_local int tRank = -1;

/// NCCL_DEBUG's value as RCCLX_DEBUG would spell it (programs written for NCCL set it).
std::string fromNcclDebug() {
  std::string v = knob::NCCL_DEBUG();
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "info" || v == "trace" || v == "none") return v;
  return "warn";  // VERSION, WARN, ABORT, unset or unknown
}

Level parse() {
  std::string v;
  try {
    const char* own = std::getenv("RCCLX_DEBUG");
    v = own == nullptr || *own == '\0' ? fromNcclDebug() : knob::RCCLX_DEBUG();
  } catch (const Error& e) {
    std::fprintf(stderr, "rcclx: %s; using WARN\n", e.what());
    return Level::kWarn;
  }
  if (v == "none") return Level::kNone;
  if (v == "info") return Level::kInfo;
  if (v == "trace") return Level::kTrace;
  return Level::kWarn;
}

}  // namespace

Level level() {
  int l = gLevel.load(std::memory_order_relaxed);
  if (l < 0) {
    l = static_cast<int>(parse());
    gLevel.store(l, std::memory_order_relaxed);
  }
  return static_cast<Level>(l);
}

void refresh() { gLevel.store(-1, std::memory_order_relaxed); }

void setRank(int rank) {
  gRank.store(rank, std::memory_order_relaxed);
  tRank = rank;
}

void setThreadRank(int rank) { tRank = rank; }

int rank() { return tRank >= 0 ? tRank : gRank.load(std::memory_order_relaxed); }

void write(Level lvl, const std::string& message) {
  static const char* kNames[] = {"NONE", "WARN", "INFO", "TRACE"};
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  const int r = rank();
  std::string who = r >= 0 ? std::to_string(r) : std::string("-");
  std::fprintf(stderr, "[rcclx %s:%d:%s %s] %s\n", host, static_cast<int>(getpid()), who.c_str(),
               kNames[static_cast<int>(lvl)], message.c_str());
}

}  // namespace ctran::log
