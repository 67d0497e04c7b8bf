// Channels: a bounded FIFO from every rank to every other rank, built on one ctran Window.
//
// The FIFO from rank s to rank r lives in r's window: `numSlots` slots of `slotBytes`, each
// with a small header. The sender fills a slot (directly through the mapped pointer for shm
// peers, in a local buffer then put() for tcp peers) and bumps r's POSTED[s] signal; the
// receiver reads the slot in place and bumps s's ACKED[r] signal, which returns the credit.
// Every chunk carries its byte count and a tag, so a mismatched send/recv is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ctran/peer_group.hpp"
#include "ctran/window.hpp"

namespace rcclx {

class Channels {
 public:
  /// Collective over `group`: allocates the FIFOs' window.
  /// `timeoutMs`: the deadline of every wait on these channels (RCCLX_TIMEOUT_MS, read at
  /// communicator creation).
  Channels(ctran::PeerGroup& group, size_t slotBytes, int numSlots, int64_t timeoutMs);
  ~Channels();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  /// Largest payload one chunk carries.
  size_t slotBytes() const { return slotBytes_; }
  int64_t timeoutMs() const { return timeoutMs_; }

  // --- Blocking zero-copy primitives (used by ring-style algorithms) ---
  /// Waits for credit toward `peer` and returns where to write up to slotBytes() bytes.
  void* acquireSend(int peer);
  /// Publishes `bytes` written at the pointer acquireSend() returned.
  void commitSend(int peer, size_t bytes, uint64_t tag);
  /// Waits for the next chunk from `peer`; checks it carries `expectBytes` and `tag`.
  const void* acquireRecv(int peer, size_t expectBytes, uint64_t tag);
  /// Returns the credit of the chunk acquireRecv() gave.
  void releaseRecv(int peer);

  // --- Non-blocking variants (used by progress loops over many peers) ---
  /// acquireSend() without waiting: nullptr when no slot is free yet.
  void* tryAcquireSend(int peer);
  /// acquireRecv() without waiting: nullptr when no chunk has arrived yet.
  const void* tryAcquireRecv(int peer, size_t expectBytes, uint64_t tag);

  /// Throws RemoteError if `peer` died or left, unless it had posted `owedChunks` more chunks
  /// than this rank consumed (all this rank still needs of it); used by progress loops.
  void checkPeer(int peer, uint64_t owedChunks);

  /// Releases the window (local).
  void destroy();

 private:
  int64_t timeoutMs_;
  struct alignas(64) ChunkHeader {
    uint64_t bytes;
    uint64_t tag;
  };

  size_t slotStride() const { return slotBytes_ + sizeof(ChunkHeader); }
  size_t slotOffset(int src, uint64_t seq) const;
  int postedSlot(int src) const { return src; }
  int ackedSlot(int dst) const { return nranks_ + dst; }
  void checkChunk(int peer, const ChunkHeader* h, size_t expectBytes, uint64_t tag) const;

  ctran::PeerGroup& group_;
  int rank_;
  int nranks_;
  size_t slotBytes_;
  int numSlots_;
  std::shared_ptr<ctran::Window> window_;
  std::vector<uint64_t> sent_;              // chunks sent to each peer
  std::vector<uint64_t> received_;          // chunks consumed from each peer
  std::vector<std::vector<char>> staging_;  // per tcp peer: where a chunk is built before put()
};

}  // namespace rcclx
