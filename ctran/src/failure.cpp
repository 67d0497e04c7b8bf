// Implementation of failure.hpp.
#include "ctran/failure.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "ctran/bootstrap.hpp"
#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "transport/shm/shm_segment.hpp"

namespace ctran {
namespace {

constexpr uint32_t kPublished = 1;
constexpr size_t kCauseBytes = 1024 - 20;

/// One rank's slot in shared memory. Only its rank writes it, once: the fields, then `state`
/// (release); readers load `state` (acquire) before the fields.
struct FailureSlot {
  std::atomic<uint32_t> state;
  int32_t culprit;
  int32_t reporter;
  uint32_t timedOut;
  uint32_t causeBytes;
  char cause[kCauseBytes];
};
static_assert(sizeof(FailureSlot) == 1024, "a failure slot is 1 KiB");

FailureSlot* slotOf(const ShmSegment& s) { return static_cast<FailureSlot*>(s.data()); }

std::string slotName(const std::string& jobTag, int rank) {
  return strCat("/rcclx-", jobTag, "-r", rank, "-failure");
}

}  // namespace

std::string FailureReport::message() const {
  if (culprit < 0) return strCat("rank ", reporter, " reported: ", cause);
  if (timedOut) {
    if (culpritHost.empty()) return strCat("rank ", reporter, " reported: ", cause);
    return strCat("rank ", reporter, " reported: ", cause, " (rank ", culprit, ": host ",
                  culpritHost, ")");
  }
  const std::string who = culpritHost.empty()
                              ? strCat("rank ", culprit)
                              : strCat("rank ", culprit, " (host ", culpritHost, ")");
  if (culprit == reporter) return strCat(who, " failed: ", cause);
  return strCat(who, " failed: ", cause, " (detected by rank ", reporter, ")");
}

GroupFailure::GroupFailure(Bootstrap& bootstrap, const std::vector<int>& shmPeers,
                           const std::string& jobTag)
    : rank_(bootstrap.rank()),
      byReporter_(bootstrap.nranks()),
      silent_(bootstrap.nranks()),
      slotRanks_(shmPeers) {
  // Collective whether or not this rank has shm peers: every rank joins both barriers.
  if (!shmPeers.empty()) {
    mine_ = std::make_unique<ShmSegment>(
        ShmSegment::create(slotName(jobTag, rank_), sizeof(FailureSlot)));
    new (mine_->data()) FailureSlot();
    slotOf(*mine_)->state.store(0, std::memory_order_release);
  }
  try {
    bootstrap.barrier();  // every slot exists
    for (int p : shmPeers) {
      slots_.push_back(
          std::make_unique<ShmSegment>(ShmSegment::open(slotName(jobTag, p), sizeof(FailureSlot))));
    }
    bootstrap.barrier();  // every slot is mapped: the names can go
  } catch (...) {
    if (mine_) mine_->unlink();
    throw;
  }
  if (mine_) mine_->unlink();
}

GroupFailure::~GroupFailure() = default;

void GroupFailure::setHostNames(std::vector<std::string> hostOfRank) {
  std::lock_guard<std::mutex> lock(mu_);
  hostOfRank_ = std::move(hostOfRank);
}

void GroupFailure::recordLocked(const FailureReport& r) {
  if (r.reporter < 0 || r.reporter >= static_cast<int>(byReporter_.size())) return;
  if (byReporter_[r.reporter]) return;
  byReporter_[r.reporter] = r;
  if (r.culprit >= 0 && r.culprit < static_cast<int>(hostOfRank_.size()))
    byReporter_[r.reporter]->culpritHost = hostOfRank_[r.culprit];
  if (first_ < 0) first_ = r.reporter;
  any_.store(true, std::memory_order_release);
}

bool GroupFailure::report(const FailureReport& report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (byReporter_[rank_]) return false;
    // What shared-memory peers published already came first: this rank may not have looked at
    // their slots since (a wait looks every few milliseconds), and the first report is the
    // one that every rank follows.
    readSlotsLocked();
    recordLocked(report);
  }
  CTRAN_WARN("communication failure, telling every rank: ", report.message());
  if (mine_) {
    FailureSlot* s = slotOf(*mine_);
    s->culprit = report.culprit;
    s->reporter = report.reporter;
    s->timedOut = report.timedOut ? 1 : 0;
    s->causeBytes = static_cast<uint32_t>(std::min(report.cause.size(), kCauseBytes));
    std::memcpy(s->cause, report.cause.data(), s->causeBytes);
    s->state.store(kPublished, std::memory_order_release);
  }
  return true;
}

void GroupFailure::adopt(const FailureReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  recordLocked(report);
}

void GroupFailure::readSlotsLocked() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (byReporter_[slotRanks_[i]]) continue;
    const FailureSlot* s = slotOf(*slots_[i]);
    if (s->state.load(std::memory_order_acquire) != kPublished) continue;
    FailureReport r;
    r.culprit = s->culprit;
    r.reporter = slotRanks_[i];
    r.timedOut = s->timedOut != 0;
    r.cause.assign(s->cause, std::min<size_t>(s->causeBytes, kCauseBytes));
    recordLocked(r);
  }
}

std::optional<FailureReport> GroupFailure::current() {
  // The fast path of every check: nothing known here, nothing published in a slot.
  if (!any_.load(std::memory_order_acquire)) {
    bool published = false;
    for (const auto& seg : slots_) {
      published |= slotOf(*seg)->state.load(std::memory_order_acquire) == kPublished;
    }
    if (!published) return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mu_);
  readSlotsLocked();
  if (first_ < 0) return std::nullopt;
  // Follow timeouts to the report of the rank waited on, at most once per rank.
  const FailureReport* r = &*byReporter_[first_];
  for (size_t hops = 0; hops < byReporter_.size(); ++hops) {
    if (!r->timedOut || r->culprit < 0 || !byReporter_[r->culprit]) break;
    r = &*byReporter_[r->culprit];
  }
  return *r;
}

bool GroupFailure::awaitReportOf(int peer, int64_t ms) {
  if (peer < 0 || peer >= static_cast<int>(byReporter_.size())) return false;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    current();  // reads the slots
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (byReporter_[peer]) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::optional<FailureReport> GroupFailure::resolve(bool waitForSelf) {
  auto r = current();
  for (size_t hops = 0; r && hops < byReporter_.size(); ++hops) {
    // This rank too: the thread running its collective may be waiting on another rank and
    // about to say so (PeerGroup::checkPeer) while this thread, waiting on that one, raises.
    if (!r->timedOut || r->culprit < 0) break;
    if (!waitForSelf && r->culprit == rank_) break;
    // A rank that stayed silent through one such wait is not waited for again: later calls
    // raise at once. (Other waits for a report, as for a peer whose connection closed, still
    // wait: that peer's report may be on its way.)
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (silent_[r->culprit]) break;
    }
    if (!awaitReportOf(r->culprit, kPeerReportMs)) {
      std::lock_guard<std::mutex> lock(mu_);
      silent_[r->culprit] = true;
      break;  // the culprit stands
    }
    auto next = current();
    if (next->reporter == r->reporter) break;
    r = next;
  }
  return r;
}

bool GroupFailure::blames(int rank) {
  // Every wait's peer check asks: with nothing reported, current()'s lock-free path answers.
  if (!current()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : byReporter_) {
    if (r && r->timedOut && r->culprit == rank) return true;
  }
  return false;
}

}  // namespace ctran
