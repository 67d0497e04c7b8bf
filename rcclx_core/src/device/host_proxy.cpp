// Implementation of host_proxy.hpp (host side; the kernels are in host_proxy.cu).
#include "device/host_proxy.hpp"

#include <algorithm>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "ctran/wait.hpp"
#include "device/host_proxy_state.hpp"
#include "device/proxy_step_plan.hpp"
#include "host/host_backend.hpp"

namespace rcclx::gpu {
namespace {

// How often (in microseconds of waiting) the gate looks at the group's failure.
constexpr int64_t kGateCheckUs = 10000;
// A wait kernel may start while calls queued ahead of its own still run on the executor, each
// bounded by the host waits' timeout; it gives up after this many timeouts (a last resort: a
// failed host part ends every wait at once through the abort word).
constexpr uint64_t kWaitTimeouts = 8;

size_t alignUp(size_t n) { return (n + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }

gpuStream_t asStream(void* stream) { return static_cast<gpuStream_t>(stream); }

}  // namespace

HostProxy::HostProxy(HostBackend& host, ctran::PeerGroup& group, int device,
                     const Settings& settings)
    : host_(host),
      group_(group),
      settings_(settings),
      device_(device),
      rank_(group.rank()),
      bytesInFlight_(settings.stagedBytesInFlight),
      waitTimeoutNs_(static_cast<uint64_t>(std::max<int64_t>(settings.timeoutMs, 1)) *
                     kWaitTimeouts * 1000000ull),
      report_(device, "the wait report of GPU calls across hosts") {
  ctran::GpuDeviceGuard on(device, "the GPU state of calls across hosts");
  CTRAN_GPU_CHECK(gpuEventCreateWithFlags(&deviceProbe_, gpuEventDisableTiming), "an event of GPU ",
                  device);
}

HostProxy::~HostProxy() {
  try {
    destroyGraphs(false);
  } catch (const std::exception& e) {
    CTRAN_WARN("releasing the graph replays of GPU calls across hosts: ", e.what());
  }
  for (auto& slot : slots_) slot->release();
  if (gpuEventDestroy(deviceProbe_) != gpuSuccess) (void)gpuGetLastError();
}

void HostProxy::raiseIfFailed() {
  {
    std::lock_guard<std::mutex> lock(failureMu_);
    if (failure_) std::rethrow_exception(failure_);
  }
  if (!report_.timedOut()) return;
  const ctran::WaitReport& r = report_.report();
  throw ctran::TimeoutError(
      ctran::strCat("rank ", rank_, ": a GPU call across hosts waited ", r.timeoutNs / 1000000,
                    " ms for its host part (epoch ", r.expected, ", saw ", r.seen,
                    "); the calls ahead of it on the host did not finish (RCCLX_TIMEOUT_MS)"));
}

void HostProxy::retireCompleted() {
  // Calls complete in the order they were made on each stream, so the oldest slots are the
  // ones to look at; a slot freed behind a slower stream's waits for that one (a new slot is
  // added meanwhile if the budget allows). One or two event queries per call, not one per slot.
  while (!inFlight_.empty() && inFlight_.front()->pollReleased()) inFlight_.pop_front();
}

void HostProxy::holdUntilStreamPasses(Slot& slot, void* stream, bool kernelFinishes) {
  const bool wasFree = !slot.inUse;
  slot.reserved = false;
  if (kernelFinishes) {
    slot.holdUntilFinished();
  } else {
    slot.holdUntilEvent(asStream(stream));
  }
  if (wasFree) inFlight_.push_back(&slot);
}

HostProxy::Slot& HostProxy::acquire(size_t stagingBytes) {
  const size_t want = stagingSize(stagingBytes);
  retireCompleted();
  for (;;) {
    Slot* fit = nullptr;   // the smallest free slot whose staging is large enough
    Slot* free = nullptr;  // any free slot
    size_t held = 0;
    for (auto& slot : slots_) {
      held += slot->capacity;
      if (slot->inUse || slot->reserved) continue;
      free = slot.get();
      if (slot->capacity >= want && (fit == nullptr || slot->capacity < fit->capacity))
        fit = slot.get();
    }
    Slot* take = fit;
    if (take == nullptr) {
      // Idle staging goes first; then, if the call still does not fit, the oldest call in
      // flight is waited for. A call larger than the budget runs once nothing else is staged.
      for (auto& slot : slots_) {
        if (held + want <= bytesInFlight_) break;
        if (!slot->inUse && !slot->reserved && slot->capacity > 0) {
          held -= slot->capacity;
          slot->freeMemory();
        }
      }
      if (held + want <= bytesInFlight_ || inFlight_.empty()) {
        if (free == nullptr && slots_.size() < kMaxSlots) {
          slots_.push_back(std::make_unique<Slot>());
          slots_.back()->device = device_;
          slots_.back()->deviceProbe = deviceProbe_;
          free = slots_.back().get();
        }
        take = free;
      }
    }
    if (take != nullptr) {
      take->reserve(want);
      take->reserved = true;  // until holdUntilStreamPasses: a call's pieces take one each
      return *take;
    }
    inFlight_.front()->waitReleased();
    inFlight_.pop_front();
    retireCompleted();
  }
}

void HostProxy::waitStaged(const Slot& slot, uint64_t epoch, ctran::PeerGroup& group) {
  const uint64_t* staged = &slot.words()->staged;
  ctran::Backoff backoff;
  int64_t checkedAtUs = 0;
  while (__atomic_load_n(staged, __ATOMIC_ACQUIRE) < epoch) {
    backoff.pause();
    const int64_t waited = backoff.waitedUs();
    if (waited - checkedAtUs < kGateCheckUs) continue;
    checkedAtUs = waited;
    // The host part raises the failure (its calls check the group first).
    if (group.failure()) return;
  }
}

void HostProxy::queueHostParts(HostBackend& host, ctran::PeerGroup& group,
                               const std::vector<QueuedPiece>& pieces,
                               const CopyBackBytes& prefixBytes) {
  host.runOutsideGroup([&] {
    Slot* first = pieces.front().slot;
    host.enqueueInOrder("staging GPU inputs", [this, first, &group, epoch = pieces.front().epoch] {
      waitStaged(*first, epoch, group);
    });
    for (size_t p = 0; p < pieces.size(); ++p) {
      const QueuedPiece& piece = pieces[p];
      WorkPtr work = (*piece.hostPart)(host, *piece.at);
      const QueuedPiece* next = p + 1 < pieces.size() ? &pieces[p + 1] : nullptr;
      // The host copies are needed afterwards only to read a prefix copy's bytes.
      HostCopies prefixAt = prefixBytes ? *piece.at : HostCopies(nullptr, {});
      host.enqueueInOrder(
          "releasing the GPU stream",
          [this, &group, slot = piece.slot, epoch = piece.epoch, work = std::move(work),
           prefixBytes, at = std::move(prefixAt), nextSlot = next ? next->slot : nullptr,
           nextEpoch = next ? next->epoch : 0] {
            // The next piece's host part runs after this task: it is gated here either way.
            auto gateNext = [&] {
              if (nextSlot != nullptr) waitStaged(*nextSlot, nextEpoch, group);
            };
            try {
              if (work) work->wait();
              slot->publish(epoch, prefixBytes ? prefixBytes(at) : 0);
            } catch (...) {
              fail(std::current_exception());
              gateNext();
              throw;
            }
            gateNext();
          });
    }
  });
}

void HostProxy::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(failureMu_);
    if (!failure_) failure_ = std::move(error);
  }
  report_.abort();  // the streams must not wait for what never comes
}

void HostProxy::destroy(bool collective) {
  if (destroyed_) return;
  destroyed_ = true;
  if (!collective) report_.abort();  // end the waits: no host part will publish
  destroyGraphs(collective);
  for (auto& slot : slots_) slot->release();
  inFlight_.clear();
}

HostProxy::Call::Call(HostProxy& proxy, void* stream, const char* what)
    : proxy_(proxy), stream_(stream), what_(what) {}

HostProxy::Call::Region HostProxy::Call::add(const void* gpu, size_t bytes, bool input,
                                             bool output) {
  const size_t piece = pieces_ - 1;
  for (Region r = 0; r < regions_.size(); ++r) {
    Entry& e = regions_[r];
    if (e.piece == piece && e.gpu == gpu && e.bytes == bytes) {
      e.input |= input;
      e.output |= output;
      return r;
    }
  }
  regions_.push_back({const_cast<void*>(gpu), bytes, input, output, piece, 0});
  return regions_.size() - 1;
}

void HostProxy::Call::copyBackPrefix(Region r, CopyBackBytes bytes) {
  CTRAN_ASSERT(pieces_ == 1, "copyBackPrefix: a call of one piece only");
  prefixRegion_ = r;
  prefixBytes_ = std::move(bytes);
}

std::vector<size_t> HostProxy::Call::layOut() {
  std::vector<size_t> total(pieces_, 0);
  for (Entry& e : regions_) {
    e.offset = total[e.piece];
    total[e.piece] += alignUp(e.bytes);
  }
  return total;
}

HostProxy::HostCopies HostProxy::Call::copiesIn(size_t piece, char* staging) const {
  std::vector<size_t> offsets;
  offsets.reserve(regions_.size());
  for (const Entry& e : regions_) offsets.push_back(e.piece == piece ? e.offset : 0);
  return HostCopies(staging, std::move(offsets));
}

void HostProxy::Call::run(HostPart part) {
  std::vector<HostPart> parts;
  parts.push_back(std::move(part));
  run(std::move(parts));
}

void HostProxy::Call::run(std::vector<HostPart> parts) {
  CTRAN_ASSERT(parts.size() == pieces_, "a host part per piece");
  CTRAN_ASSERT(pieces_ <= static_cast<size_t>(ProxyStep::kMaxPieces), "at most ",
               ProxyStep::kMaxPieces, " pieces");
  CTRAN_CHECK(!proxy_.destroyed_, ctran::InvalidUsage, what_,
              ": the communicator's GPU state was already released");
  proxy_.raiseIfFailed();
  ctran::GpuDeviceGuard on(proxy_.device_, what_);
  if (ctran::gpuStreamCapturing(asStream(stream_))) {
    capture(std::move(parts));
  } else {
    runEagerly(std::move(parts));
  }
}

void HostProxy::Call::runEagerly(std::vector<HostPart> parts) {
  proxy_.releaseGoneGraphs();  // frees pinned memory: not while capturing
  const std::vector<size_t> bytes = layOut();
  std::vector<Slot*> slots;
  std::vector<uint64_t> epochs;
  std::vector<HostCopies> copies;
  std::vector<const uint64_t*> noReplay(pieces_, nullptr);
  auto holdAll = [&](bool kernelFinishes) {
    for (Slot* slot : slots) proxy_.holdUntilStreamPasses(*slot, stream_, kernelFinishes);
  };
  try {
    for (size_t p = 0; p < pieces_; ++p) {
      slots.push_back(&proxy_.acquire(bytes[p]));
      epochs.push_back(++slots.back()->epoch);
      copies.push_back(copiesIn(p, slots.back()->staging()));
    }
    // An idle executor is woken once, after the kernels are launched: it does not contend with
    // this thread while the tasks are queued, and its gate would only wait for the kernels.
    std::vector<QueuedPiece> queued;
    queued.reserve(pieces_);
    for (size_t p = 0; p < pieces_; ++p)
      queued.push_back({slots[p], epochs[p], &parts[p], &copies[p]});
    proxy_.host_.queueTogether([&] {
      enqueue(slots, epochs, noReplay,
              [&] { proxy_.queueHostParts(proxy_.host_, proxy_.group_, queued, prefixBytes_); });
    });
  } catch (...) {
    // Gates may be queued already: they must not wait for kernels that never run (the host
    // parts then run on what is staged, if they were queued, so the peers are not left waiting).
    for (size_t p = 0; p < epochs.size(); ++p) {
      __atomic_store_n(&slots[p]->words()->staged, epochs[p], __ATOMIC_RELEASE);
    }
    // What was enqueued (copies into the staging, kernels) still uses the slots.
    try {
      holdAll(false);  // the kernel may not have been launched: the event decides
    } catch (...) {    // the first error is the one to raise
    }
    throw;
  }
  // Eagerly, the call's last step kernel stores every slot's finished word.
  holdAll(true);
}

void HostProxy::Call::enqueue(const std::vector<Slot*>& slots, const std::vector<uint64_t>& epochs,
                              const std::vector<const uint64_t*>& replayWords,
                              const std::function<void()>& queueHostParts) {
  // Each piece's copies in and back, between its staging and the GPU memory.
  std::vector<std::vector<ProxyStep::Copy>> copies(2 * pieces_);  // piece p: 2p in, 2p + 1 back
  std::vector<PieceCopies> counts(pieces_);
  constexpr size_t kNone = ~size_t{0};
  size_t prefixCopy = kNone;  // among the first piece's copies back
  for (Region r = 0; r < regions_.size(); ++r) {
    const Entry& e = regions_[r];
    if (e.bytes == 0) continue;
    char* staged = slots[e.piece]->mappedStaging() + e.offset;
    if (e.input) copies[2 * e.piece].push_back({e.gpu, staged, e.bytes});
    if (!e.output) continue;
    if (prefixBytes_ && r == prefixRegion_) prefixCopy = copies[2 * e.piece + 1].size();
    copies[2 * e.piece + 1].push_back({staged, e.gpu, e.bytes});
  }
  for (size_t p = 0; p < pieces_; ++p) {
    counts[p] = {copies[2 * p].size(), copies[2 * p + 1].size()};
  }
  const auto kernels = planProxySteps(counts, ProxyStep::kMaxParts, ProxyStep::kMaxCopies);
  const bool eager = replayWords[0] == nullptr;
  const ctran::WaitBound bound = proxy_.report_.bound(proxy_.waitTimeoutNs_);
  // The host parts are queued before the kernels that wait for them are launched, so a failure
  // to queue them leaves no kernel waiting.
  queueHostParts();
  for (size_t k = 0; k < kernels.size(); ++k) {
    ProxyStep step;
    step.rank = proxy_.rank_;
    step.copyBackBytes = &slots[0]->mappedWords()->copyBackBytes;
    for (const StepPart& planned : kernels[k]) {
      ProxyWords* words = slots[planned.piece]->mappedWords();
      ProxyStep::Part& part = step.part[step.parts++];
      part.staged = planned.releases ? &words->staged : nullptr;
      part.done = planned.waits ? &words->done : nullptr;
      part.replay = replayWords[planned.piece];
      part.epoch = epochs[planned.piece];
      part.firstCopy = step.copies;
      part.copies = static_cast<int>(planned.count);
      const auto& from = copies[2 * planned.piece + (planned.outputs ? 1 : 0)];
      for (size_t c = planned.first; c < planned.first + planned.count; ++c) {
        if (planned.outputs && c == prefixCopy) step.prefixCopy = step.copies;
        step.copy[step.copies++] = from[c];
      }
    }
    if (eager && k + 1 == kernels.size()) {
      for (size_t p = 0; p < pieces_; ++p) {
        step.finish[step.finished++] = {&slots[p]->mappedWords()->finished, epochs[p]};
      }
    }
    launchProxyStep(step, bound, stream_);
  }
}

}  // namespace rcclx::gpu
