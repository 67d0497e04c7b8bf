// Topology: which ranks share a host, and this rank's place among them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctran/bootstrap.hpp"

namespace ctran {

/// The grouping of a bootstrap's ranks by host.
struct Topology {
  int rank = 0;
  int nranks = 1;
  std::string hostId;                  ///< this process's host identity
  std::vector<int> hostOf;             ///< host index of every rank (hosts numbered by lowest rank)
  std::vector<std::string> hostNames;  ///< each host's name (its identity up to the first '|')
  std::vector<int64_t> pids;           ///< process id of every rank (meaningful on its own host)
  std::vector<uint64_t> processTokens;  ///< processToken() of every rank's process
  std::vector<int> localRanks;          ///< global ranks on this host, ascending
  int localRank = 0;                    ///< index of `rank` in localRanks
  int nHosts = 1;

  int localSize() const { return static_cast<int>(localRanks.size()); }
  bool sameHost(int a, int b) const { return hostOf[a] == hostOf[b]; }
  /// True when ranks `a` and `b` live in one process (one process driving several GPUs, or
  /// ranks as threads): the same host, pid and process token.
  bool sameProcess(int a, int b) const {
    return sameHost(a, b) && pids[a] == pids[b] && processTokens[a] == processTokens[b];
  }
};

/// This process's host identity: RCCLX_HOST_ID if set, else hostname + boot id + the mount
/// and pid namespaces (so containers that cannot share /dev/shm or see each other's pids are
/// different hosts).
std::string hostIdentity();

/// A number naming this process among all processes of this host (and boot): a hash of the
/// boot id, the pid namespace, the pid and the process's start time. Two ranks with the same
/// pid and token are in one process even where RCCLX_HOST_ID merges containers whose pids
/// collide; a forked child gets its own. The same in every library copy linked into a process.
uint64_t processToken();

/// Exchanges host identities, pids and process tokens through the bootstrap (collective).
Topology discoverTopology(Bootstrap& bootstrap);

/// True unless the process `pid` on this host has exited (or is a zombie).
bool processAlive(int64_t pid);

}  // namespace ctran
