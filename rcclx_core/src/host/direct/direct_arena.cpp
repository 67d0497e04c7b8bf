// Implementation of direct_arena.hpp.
#include "host/direct/direct_arena.hpp"

#include <cstdint>

#include "ctran/checks.hpp"
#include "tags.hpp"

namespace rcclx {

DirectArena::DirectArena(ctran::PeerGroup& group, size_t slotBytes, int64_t timeoutMs)
    : timeoutMs_(timeoutMs), group_(group), rank_(group.rank()), nranks_(group.nranks()) {
  slotBytes_ = (slotBytes + 63) / 64 * 64;
  size_t slotStride = sizeof(StepHeader) + 2 * slotBytes_;
  window_ = group.createWindow(kSlots * slotStride, 4);
  for (int p = 0; p < nranks_; ++p) {
    char* base = static_cast<char*>(window_->peerData(p));
    ctran::SignalCell* sig = window_->peerSignals(p);
    CTRAN_CHECK(base != nullptr && sig != nullptr, ctran::InvalidUsage,
                "direct algorithms need every rank on this host over shared memory, but rank ", p,
                " is reached by ", ctran::transportName(group.transportTo(p)));
    bases_.push_back(base);
    signals_.push_back(sig);
  }
}

void DirectArena::destroy() {
  if (window_ && !window_->destroyed()) window_->destroy();
}

char* DirectArena::slotBase(int peer, uint64_t step) {
  size_t slotStride = sizeof(StepHeader) + 2 * slotBytes_;
  return bases_[peer] + (step % kSlots) * slotStride;
}

int DirectArena::furthestBehind() const {
  // Every rank publishes phase 0 of every step it begins: the lowest is the one the others wait
  // for (the lowest rank among equals).
  int who = -1;
  uint64_t least = UINT64_MAX;
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    const uint64_t v = signals_[p][kReady0].value.load(std::memory_order_acquire);
    if (v < least) {
      least = v;
      who = p;
    }
  }
  return who;
}

void DirectArena::waitOn(ctran::SignalCell* cell, uint64_t value, int peer, const char* what) {
  // A wait on every peer (peer -1) checks, and on timeout blames, the peer furthest behind, so
  // that a rank blamed while it waits names the rank it waits for.
  auto culprit = [&] { return peer >= 0 ? peer : furthestBehind(); };
  try {
    ctran::signalWait(
        cell, value, ctran::Deadline::afterKnob(timeoutMs_),
        [&] {
          return peer >= 0 ? ctran::strCat("rank ", peer, " to ", what, " step ", value)
                           : ctran::strCat("the peers to ", what, " step ", value);
        },
        [&] {
          group_.checkPeer(culprit(),
                           [&] { return cell->value.load(std::memory_order_acquire) >= value; });
        },
        peer);
  } catch (const ctran::TimeoutError& e) {
    if (peer >= 0) throw;
    const int behind = culprit();
    throw ctran::TimeoutError(ctran::strCat(e.what(), "; rank ", behind, " is furthest behind"),
                              behind);
  }
}

uint64_t DirectArena::beginStep(uint64_t tag, size_t bytes) {
  CTRAN_ASSERT(bytes <= slotBytes_);
  uint64_t s = ++step_;
  // Every peer reads this slot during step s-2 and then bumps our CONSUMED once.
  if (s > kSlots) {
    waitOn(&signals_[rank_][kConsumed], (s - kSlots) * (nranks_ - 1), -1,
           "finish reading this rank's slot before");
  }
  auto* h = reinterpret_cast<StepHeader*>(slotBase(rank_, s));
  h->tag = tag;
  h->bytes = bytes;
  return s;
}

void DirectArena::publish(int phase, uint64_t step) {
  // Only this rank writes its READY cells: raise the counter to exactly `step` (an algorithm
  // that skips phase 1 leaves it behind, and the next one catches it up).
  ctran::SignalCell* cell = &signals_[rank_][phase == 0 ? kReady0 : kReady1];
  uint64_t cur = cell->value.load(std::memory_order_relaxed);
  CTRAN_ASSERT(step > cur, "step ", step, " published twice");
  ctran::signalAdd(cell, step - cur);
}

void DirectArena::waitPeers(int phase, uint64_t step) {
  const auto* mine = reinterpret_cast<const StepHeader*>(slotBase(rank_, step));
  for (int i = 1; i < nranks_; ++i) {
    int p = (rank_ + i) % nranks_;
    waitOn(&signals_[p][phase == 0 ? kReady0 : kReady1], step, p, "publish");
    if (phase != 0) continue;
    const auto* theirs = reinterpret_cast<const StepHeader*>(slotBase(p, step));
    checkSameCall(mine->tag, theirs->tag, rank_, p);
    if (theirs->bytes != mine->bytes) {
      throw MismatchedArguments(ctran::strCat(describeTag(mine->tag), ": rank ", p,
                                              " passed a buffer of different size than rank ",
                                              rank_, " (", theirs->bytes, " vs ", mine->bytes,
                                              " bytes in this chunk; counts or "
                                              "datatypes differ between ranks)"));
    }
  }
}

void DirectArena::endStep(uint64_t step) {
  (void)step;
  for (int i = 1; i < nranks_; ++i) {
    int p = (rank_ + i) % nranks_;
    ctran::signalAdd(&signals_[p][kConsumed], 1);
  }
}

}  // namespace rcclx
