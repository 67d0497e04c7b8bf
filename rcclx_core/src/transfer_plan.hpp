// The exchanges of the data-movement collectives as lists of transfers: which bytes go to and
// come from which peer, and which stay on this rank. The host back-end runs such a list over
// its channels, the device back-end turns it into one copy kernel's plan; both build it here,
// so a collective means the same exchange on either side.
#pragma once

#include <cstddef>
#include <vector>

namespace rcclx {

struct Transfer {
  enum Kind : int { kSend, kRecv, kSelf };
  Kind kind = kSend;
  int peer = 0;               ///< kSend / kRecv: the other rank
  const void* src = nullptr;  ///< kSend, kSelf
  void* dst = nullptr;        ///< kRecv, kSelf
  size_t bytes = 0;
  bool token = false;  ///< no data: a flag only (barrier)
};

/// Sends in peer order, then receives in peer order, then this rank's own block.
using Exchange = std::vector<Transfer>;

/// all_to_all_v: block p of send (sendCounts[p] elements at sendDispls[p]) to rank p, into
/// recv at recvDispls[p]. Counts and displacements in elements of `elem` bytes.
Exchange allToAllVExchange(int rank, int nranks, const void* send,
                           const std::vector<size_t>& sendCounts,
                           const std::vector<size_t>& sendDispls, void* recv,
                           const std::vector<size_t>& recvCounts,
                           const std::vector<size_t>& recvDispls, size_t elem);
/// all_gather_v: this rank's block to every peer; block p (counts[p] at displs[p]) from p.
Exchange allGatherVExchange(int rank, int nranks, const void* send, void* recv,
                            const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                            size_t elem);
/// gather: `bytes` from every rank into block r of the root's recv.
Exchange gatherExchange(int rank, int nranks, int root, const void* send, void* recv, size_t bytes);
/// scatter: block r of the root's send (`bytes` each) to rank r.
Exchange scatterExchange(int rank, int nranks, int root, const void* send, void* recv,
                         size_t bytes);
/// broadcast in one step: the root's send to every rank.
Exchange broadcastExchange(int rank, int nranks, int root, const void* send, void* recv,
                           size_t bytes);
/// barrier: a token to and from every peer.
Exchange barrierExchange(int rank, int nranks);

}  // namespace rcclx
