// A group's failure, shared with every rank: the first rank that detects one (a dead peer, a
// timeout, a remote error, an abort) publishes it, and every other rank's next wait or call
// raises it at once, naming the culprit and the cause, instead of waiting out its own timeout on
// a peer that is alive but has left the collective.
//
// Ranks of one host see it in a small shared-memory slot per rank (each rank writes only its
// own); ranks on other hosts get a control message over the tcp transport. Every rank reports
// at most once; a rank raises the report it learnt first, or, when that one is a timeout on a
// peer that reported a failure of its own, the peer's (the rank it waited on was itself
// waiting: the cause lies further on). A rank that raises a report it did not make publishes
// one that points to it (PeerGroup), so that a chain through a rank that has left still ends
// at the culprit.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ctran {

/// How long a rank waits for a peer's own report before blaming the peer: long enough for a
/// report to cross a tcp connection, or for a rank that is itself waiting to notice it was
/// blamed and name the rank it waits on, on a loaded host; short next to any timeout.
constexpr int64_t kPeerReportMs = 400;

class Bootstrap;
class ShmSegment;

/// What failed, as the rank that saw it reported it.
struct FailureReport {
  int culprit = -1;         ///< the rank that failed or was waited on; -1 when not one rank
  int reporter = -1;        ///< the rank that detected it
  bool timedOut = false;    ///< a wait on `culprit` ran into its deadline (it may be alive)
  std::string cause;        ///< the detecting rank's error message
  std::string culpritHost;  ///< the culprit's host where the group spans hosts (filled locally)
  /// "rank 2 failed: <cause> (detected by rank 0)", or "rank 0 reported: <cause>"; with the
  /// culprit's host: "rank 2 (host h1) failed: ...", "rank 0 reported: ... (rank 2: host h1)".
  std::string message() const;
};

/// The failures reported in one PeerGroup (thread-safe). Collective to create.
class GroupFailure {
 public:
  /// Creates this rank's slot and maps those of `shmPeers` (the ranks reached over shared
  /// memory), named under `jobTag`; no slot at all when `shmPeers` is empty.
  GroupFailure(Bootstrap& bootstrap, const std::vector<int>& shmPeers, const std::string& jobTag);
  ~GroupFailure();
  GroupFailure(const GroupFailure&) = delete;
  GroupFailure& operator=(const GroupFailure&) = delete;

  /// The host name of every rank, for the reports' messages (set once the group spans hosts).
  void setHostNames(std::vector<std::string> hostOfRank);
  /// Records this rank's report (its reporter must be this rank) and publishes it in its slot;
  /// true the first time (the caller then tells the ranks no slot reaches: tcp peers).
  bool report(const FailureReport& report);
  /// Records a report a peer sent (tcp).
  void adopt(const FailureReport& report);
  /// The failure this rank raises (see above), or nullopt; looks at the peers' slots.
  std::optional<FailureReport> current();
  /// Polls for up to `ms` until `peer` has reported; true if it has.
  bool awaitReportOf(int peer, int64_t ms);
  /// current(), after waiting for the rank it blames where that report is a timeout on a rank
  /// (this one included) that has not reported: up to kPeerReportMs for that rank's own report
  /// (it may be waiting on a further rank, and about to say so), hop by hop, so that every rank
  /// names the rank at the end of the chain. A rank waited for in vain once is not waited for
  /// again. `waitForSelf` false: a report blaming this rank ends the chain at once, for the
  /// thread that will give this rank's answer itself.
  std::optional<FailureReport> resolve(bool waitForSelf = true);
  /// Whether some report is a timeout on `rank` (so that rank, if alive, was waited on).
  bool blames(int rank);

 private:
  /// Records `r` under its reporter unless that rank already reported; under mu_.
  void recordLocked(const FailureReport& r);
  void readSlotsLocked();

  const int rank_;
  std::atomic<bool> any_{false};
  std::mutex mu_;
  std::vector<std::optional<FailureReport>> byReporter_;
  std::vector<char> silent_;             // by rank: resolve() waited for its report in vain
  int first_ = -1;                       // the reporter this rank learnt of first
  std::unique_ptr<ShmSegment> mine_;     // this rank's slot (null: no shm peers)
  std::vector<std::string> hostOfRank_;  // empty: one host
  std::vector<int> slotRanks_;           // the shm peers, as slots_ is indexed
  std::vector<std::unique_ptr<ShmSegment>> slots_;  // their slots
};

}  // namespace ctran
