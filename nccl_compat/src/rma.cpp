// Rma: one-sided puts and signals on host windows through mirrors and record rings (rma.hpp).
#include "rma.hpp"

#include <cstring>

#include "ctran/checks.hpp"
#include "ctran/window.hpp"

namespace rcclx::nccl {

Rma::Rma(rcclx::Communicator& core)
    : rank_(core.rank()), nranks_(core.size()), sent_(core.size(), 0), applied_(core.size(), 0) {
  CTRAN_CHECK(2 * nranks_ <= 4096, ctran::InvalidUsage,
              "one-sided calls support up to 2048 ranks, ", "the communicator has ", nranks_);
  channel_ =
      core.createWindow(static_cast<size_t>(nranks_) * kRecords * sizeof(Record), 2 * nranks_);
}

uint32_t Rma::addWindow(rcclx::Communicator& core, void* base, size_t bytes) {
  Mirror m;
  m.user = base;
  m.bytes = bytes;
  m.window = core.createWindow(bytes, 1);
  const uint32_t index = nextWindow_++;
  mirrors_.emplace(index, std::move(m));
  return index;
}

void Rma::removeWindow(uint32_t index) {
  auto it = mirrors_.find(index);
  if (it == mirrors_.end()) return;
  it->second.window->destroy();
  mirrors_.erase(it);
}

size_t Rma::ringOffset(int sender, uint64_t seq) const {
  return (static_cast<size_t>(sender) * kRecords + seq % kRecords) * sizeof(Record);
}

void Rma::send(int peer, const Record& record) {
  const uint64_t seq = sent_[peer];
  // The ring slot is free once the peer applied the record kRecords before.
  if (seq >= kRecords) channel_->waitSignal(nranks_ + peer, seq - kRecords + 1, peer);
  channel_->put(peer, ringOffset(rank_, seq), &record, sizeof record);
  channel_->signal(peer, rank_, 1);
  sent_[peer] = seq + 1;
}

void Rma::put(int peer, uint32_t index, size_t offset, const void* src, size_t bytes) {
  auto it = mirrors_.find(index);
  CTRAN_ASSERT(it != mirrors_.end(), "window ", index, " has no mirror");
  it->second.window->put(peer, offset, src, bytes);
  send(peer, Record{index, offset, bytes});
}

void Rma::signal(int peer) { send(peer, Record{kNoWindow, 0, 0}); }

void Rma::wait(int peer, uint64_t count) {
  const uint64_t target = applied_[peer] + count;
  if (count == 0) return;
  channel_->waitSignal(peer, target, peer);
  const char* ring = static_cast<const char*>(channel_->data());
  for (uint64_t seq = applied_[peer]; seq < target; ++seq) {
    Record r;
    std::memcpy(&r, ring + ringOffset(peer, seq), sizeof r);
    auto it = r.window == kNoWindow ? mirrors_.end() : mirrors_.find(r.window);
    // A record of a window deregistered since, or of a signal alone, moves no data.
    if (it == mirrors_.end() || r.bytes == 0) continue;
    const Mirror& m = it->second;
    CTRAN_CHECK(r.offset <= m.bytes && r.bytes <= m.bytes - r.offset, ctran::RemoteError, "rank ",
                peer, " put ", r.bytes, " bytes at offset ", r.offset, " of window ", r.window,
                ", which holds ", m.bytes, " here");
    std::memcpy(static_cast<char*>(m.user) + r.offset,
                static_cast<const char*>(m.window->data()) + r.offset, r.bytes);
  }
  applied_[peer] = target;
  channel_->signal(peer, nranks_ + rank_, count);
}

void Rma::destroy() {
  for (auto& [index, m] : mirrors_) m.window->destroy();
  mirrors_.clear();
  if (channel_ && !channel_->destroyed()) channel_->destroy();
  channel_.reset();
}

}  // namespace rcclx::nccl
