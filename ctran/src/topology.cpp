// Implementation of topology.hpp.
#include "ctran/topology.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"

namespace ctran {
namespace {

std::string readFirstLine(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string namespaceInode(const char* path) {
  struct stat st = {};
  if (::stat(path, &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

// This process's start time in clock ticks since boot (field 22 of /proc/self/stat), or "?".
std::string processStartTime() {
  std::string all = readFirstLine("/proc/self/stat");
  size_t close = all.rfind(')');
  if (close == std::string::npos) return "?";
  std::istringstream fields(all.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i) {
    if (i == 22) return field;
  }
  return "?";
}

}  // namespace

uint64_t processToken() {
  // Recomputed on each call (a few per communicator), so a forked child never reuses its
  // parent's value.
  const std::string id = strCat(readFirstLine("/proc/sys/kernel/random/boot_id"), "|",
                                namespaceInode("/proc/self/ns/pid"), "|",
                                static_cast<long long>(getpid()), "|", processStartTime());
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hostIdentity() {
  std::string forced = knob::RCCLX_HOST_ID();
  if (!forced.empty()) return forced;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return strCat(host, "|", readFirstLine("/proc/sys/kernel/random/boot_id"),
                "|mnt:", namespaceInode("/proc/self/ns/mnt"),
                "|pid:", namespaceInode("/proc/self/ns/pid"));
}

bool processAlive(int64_t pid) {
  if (pid <= 0) return true;
  auto gone = [&] { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; };
  if (gone()) return false;
  // A killed child that its parent has not reaped yet still answers kill(): read its state.
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all;
  // No state to read: reaped since the kill() above (gone now), or unreadable (assume alive).
  if (!std::getline(f, all)) return !gone();
  size_t close = all.rfind(')');
  if (close == std::string::npos || close + 2 >= all.size()) return true;
  char state = all[close + 2];
  return state != 'Z' && state != 'X';
}

Topology discoverTopology(Bootstrap& bootstrap) {
  Topology t;
  t.rank = bootstrap.rank();
  t.nranks = bootstrap.nranks();
  t.hostId = hostIdentity();
  // "<pid> <process token>\n<host id>"
  std::string mine = strCat(static_cast<long long>(getpid()), " ", processToken(), "\n", t.hostId);
  auto all = bootstrap.allGather(Bytes(mine.begin(), mine.end()));
  std::map<std::string, int> hostIndex;
  t.hostOf.resize(t.nranks);
  t.pids.resize(t.nranks);
  t.processTokens.resize(t.nranks);
  for (int r = 0; r < t.nranks; ++r) {
    std::string s(all[r].begin(), all[r].end());
    size_t nl = s.find('\n');
    size_t sp = s.find(' ');
    CTRAN_ASSERT(nl != std::string::npos && sp < nl, "malformed topology record from rank ", r);
    t.pids[r] = std::stoll(s.substr(0, sp));
    t.processTokens[r] = std::stoull(s.substr(sp + 1, nl - sp - 1));
    std::string id = s.substr(nl + 1);
    auto it = hostIndex.find(id);
    if (it == hostIndex.end()) {
      it = hostIndex.emplace(id, static_cast<int>(hostIndex.size())).first;
      t.hostNames.push_back(id.substr(0, id.find('|')));
    }
    t.hostOf[r] = it->second;
  }
  t.nHosts = static_cast<int>(hostIndex.size());
  for (int r = 0; r < t.nranks; ++r) {
    if (t.hostOf[r] == t.hostOf[t.rank]) {
      if (r == t.rank) t.localRank = t.localSize();
      t.localRanks.push_back(r);
    }
  }
  return t;
}

}  // namespace ctran
