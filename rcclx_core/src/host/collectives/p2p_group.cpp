// runP2PGroup: a progress loop over many non-blocking channel transfers.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "ctran/checks.hpp"
#include "ctran/wait.hpp"
#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"
#include "tags.hpp"

namespace rcclx {
namespace {

struct Progress {
  P2POp* op;
  size_t done = 0;     // bytes moved
  size_t chunks = 0;   // chunks moved
  size_t totalChunks;  // a zero-byte message is one empty chunk
  bool finished() const { return chunks == totalChunks; }
};

}  // namespace

void runP2PGroup(Channels& ch, std::vector<P2POp>& ops, uint64_t tag) {
  const size_t slot = ch.slotBytes();
  std::vector<Progress> state;
  state.reserve(ops.size());
  for (auto& op : ops) {
    Progress p{&op, 0, 0, 0};
    p.totalChunks = std::max<size_t>(1, (op.bytes + slot - 1) / slot);
    state.push_back(p);
  }
  size_t remaining = state.size();
  // What `peer` still owes this rank: the chunks of unfinished receives from it, or, with a
  // send to it unfinished, more than it can have posted (it must still be there to take it).
  auto owedBy = [&](int peer) {
    uint64_t owed = 0;
    for (const auto& st : state) {
      if (st.finished() || st.op->peer != peer) continue;
      if (st.op->isSend) return UINT64_MAX / 2;
      owed += st.totalChunks - st.chunks;
    }
    return owed;
  };
  ctran::Deadline deadline = ctran::Deadline::afterKnob(ch.timeoutMs());
  ctran::Backoff backoff;
  uint32_t idlePolls = 0;
  // One pass over every message, moving what the channels allow now; true if anything moved.
  auto pass = [&] {
    bool progressed = false;
    // Only the first unfinished message per (peer, direction) may move: FIFO matching.
    std::set<std::pair<int, bool>> blocked;
    for (auto& st : state) {
      if (st.finished()) continue;
      auto key = std::make_pair(st.op->peer, st.op->isSend);
      if (blocked.count(key)) continue;
      blocked.insert(key);
      for (;;) {  // move as many chunks as the channel allows right now
        size_t len = std::min(slot, st.op->bytes - st.done);
        if (st.op->isSend) {
          void* dst = ch.tryAcquireSend(st.op->peer);
          if (!dst) break;
          if (len > 0) {
            std::memcpy(dst, st.op->buffer + st.done, len);
          }
          ch.commitSend(st.op->peer, len, tag);
        } else {
          const void* src = ch.tryAcquireRecv(st.op->peer, len, tag);
          if (!src) break;
          if (len > 0) {
            std::memcpy(st.op->buffer + st.done, src, len);
          }
          ch.releaseRecv(st.op->peer);
        }
        st.done += len;
        ++st.chunks;
        progressed = true;
        if (st.finished()) {
          --remaining;
          break;
        }
      }
    }
    return progressed;
  };
  while (remaining > 0) {
    if (pass()) {
      backoff.reset();
      idlePolls = 0;
      continue;
    }
    backoff.pause();
    // Often enough that a rank blamed for a timeout while it waits on another names that one
    // well within kPeerReportMs, even on a loaded host (each idle poll naps up to 200 us).
    if ((++idlePolls & 63) == 0) {
      for (auto& st : state) {
        if (st.finished()) continue;
        try {
          ch.checkPeer(st.op->peer, owedBy(st.op->peer));
        } catch (const ctran::RemoteError&) {
          // A peer may post its last chunks and exit between the pass above and this check:
          // fail only if one more pass, after its exit, finds nothing left to move.
          if (pass()) break;
          throw;
        }
        if (deadline.expired()) {
          ctran::throwTimeout(
              deadline,
              ctran::strCat(describeTag(tag), ": ", st.op->isSend ? "send to" : "receive from",
                            " rank ", st.op->peer, " (", st.done, " of ", st.op->bytes,
                            " bytes done)"),
              st.op->peer);
        }
      }
    }
  }
}

}  // namespace rcclx
