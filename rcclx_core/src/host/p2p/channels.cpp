// Implementation of channels.hpp.
#include "host/p2p/channels.hpp"

#include <cstring>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "tags.hpp"

namespace rcclx {

Channels::Channels(ctran::PeerGroup& group, size_t slotBytes, int numSlots, int64_t timeoutMs)
    : timeoutMs_(timeoutMs),
      group_(group),
      rank_(group.rank()),
      nranks_(group.nranks()),
      numSlots_(numSlots) {
  CTRAN_CHECK(slotBytes >= 4096 && numSlots >= 2, ctran::InvalidArgument, "channels: slot size ",
              slotBytes, " must be >= 4096 and slots ", numSlots, " >= 2");
  slotBytes_ = (slotBytes + 63) / 64 * 64;
  size_t bytes = static_cast<size_t>(nranks_) * numSlots_ * slotStride();
  window_ = group.createWindow(bytes, 2 * nranks_);
  sent_.assign(nranks_, 0);
  received_.assign(nranks_, 0);
  staging_.resize(nranks_);
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_ && window_->peerData(p) == nullptr) staging_[p].resize(slotStride());
  }
}

Channels::~Channels() = default;

void Channels::destroy() {
  if (window_ && !window_->destroyed()) window_->destroy();
}

size_t Channels::slotOffset(int src, uint64_t seq) const {
  return (static_cast<size_t>(src) * numSlots_ + seq % numSlots_) * slotStride();
}

void* Channels::tryAcquireSend(int peer) {
  uint64_t seq = sent_[peer];
  if (seq >= static_cast<uint64_t>(numSlots_) &&
      window_->readSignal(ackedSlot(peer)) < seq - numSlots_ + 1) {
    return nullptr;
  }
  char* slot = staging_[peer].empty()
                   ? static_cast<char*>(window_->peerData(peer)) + slotOffset(rank_, seq)
                   : staging_[peer].data();
  return slot + sizeof(ChunkHeader);
}

void* Channels::acquireSend(int peer) {
  uint64_t seq = sent_[peer];
  if (seq >= static_cast<uint64_t>(numSlots_)) {
    window_->waitSignal(ackedSlot(peer), seq - numSlots_ + 1, peer);
  }
  return tryAcquireSend(peer);
}

void Channels::commitSend(int peer, size_t bytes, uint64_t tag) {
  CTRAN_ASSERT(bytes <= slotBytes_, "chunk of ", bytes, " bytes exceeds slot ", slotBytes_);
  uint64_t seq = sent_[peer]++;
  ChunkHeader h{bytes, tag};
  if (staging_[peer].empty()) {
    char* slot = static_cast<char*>(window_->peerData(peer)) + slotOffset(rank_, seq);
    std::memcpy(slot, &h, sizeof(h));
  } else {
    std::memcpy(staging_[peer].data(), &h, sizeof(h));
    window_->put(peer, slotOffset(rank_, seq), staging_[peer].data(), sizeof(h) + bytes);
  }
  window_->signal(peer, postedSlot(rank_), 1);
}

void Channels::checkChunk(int peer, const ChunkHeader* h, size_t expectBytes, uint64_t tag) const {
  checkSameCall(tag, h->tag, rank_, peer);
  if (h->bytes != expectBytes) {
    throw MismatchedArguments(ctran::strCat(describeTag(tag), ": rank ", peer, " sent ", h->bytes,
                                            " bytes but rank ", rank_, " expected ", expectBytes,
                                            " (mismatched count or datatype between ranks)"));
  }
}

const void* Channels::tryAcquireRecv(int peer, size_t expectBytes, uint64_t tag) {
  uint64_t seq = received_[peer];
  if (window_->readSignal(postedSlot(peer)) < seq + 1) return nullptr;
  const char* slot = static_cast<const char*>(window_->data()) + slotOffset(peer, seq);
  checkChunk(peer, reinterpret_cast<const ChunkHeader*>(slot), expectBytes, tag);
  return slot + sizeof(ChunkHeader);
}

const void* Channels::acquireRecv(int peer, size_t expectBytes, uint64_t tag) {
  window_->waitSignal(postedSlot(peer), received_[peer] + 1, peer);
  return tryAcquireRecv(peer, expectBytes, tag);
}

void Channels::checkPeer(int peer, uint64_t owedChunks) {
  group_.checkPeer(
      peer, [&] { return window_->readSignal(postedSlot(peer)) >= received_[peer] + owedChunks; });
}

void Channels::releaseRecv(int peer) {
  ++received_[peer];
  // Returns the slot's credit. A sender may exit right after its last chunk and then needs no
  // credit; if more chunks were due from it, the next wait on it reports the exit.
  try {
    window_->signal(peer, ackedSlot(rank_), 1);
  } catch (const ctran::RemoteError&) {
  }
}

}  // namespace rcclx
