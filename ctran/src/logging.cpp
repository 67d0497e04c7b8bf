// Implementation of logging.hpp.
#include "ctran/logging.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "ctran/config.hpp"

namespace ctran::log {
namespace {

std::atomic<int> gLevel{-1};
std::atomic<int> gRank{-1};

Level parse() {
  std::string v;
  try {
    v = knob::RCCLX_DEBUG();
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

void setRank(int rank) { gRank.store(rank, std::memory_order_relaxed); }

void write(Level lvl, const std::string& message) {
  static const char* kNames[] = {"NONE", "WARN", "INFO", "TRACE"};
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  int rank = gRank.load(std::memory_order_relaxed);
  std::string who = rank >= 0 ? std::to_string(rank) : std::string("-");
  std::fprintf(stderr, "[rcclx %s:%d:%s %s] %s\n", host, static_cast<int>(getpid()), who.c_str(),
               kNames[static_cast<int>(lvl)], message.c_str());
}

}  // namespace ctran::log
