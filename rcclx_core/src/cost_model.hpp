// The cost model of the collectives across hosts: a pure function from the call (collective,
// bytes, ranks per host) and the link figures (latency and bandwidth of shared memory inside a
// host and of the network between hosts, per-step overhead, reduction throughput) to the
// estimated time of the flat, ring and hierarchical forms, and the cheapest of them. The
// selector asks it when the ranks span several hosts; the formulas are in docs/algorithms.rst.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rcclx {

/// The collectives the model knows.
enum class CostCollective : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };

/// The forms compared. flat: one step, every rank sends straight to every rank that needs its
/// data; ring: the ring over all ranks (broadcast and reduce: the pipelined chain along it);
/// hierarchical: phases inside each host and between hosts.
enum class CostForm : uint8_t { kFlat, kRing, kHierarchical };
constexpr int kCostForms = 3;

/// "flat", "ring", "hierarchical".
const char* costFormName(CostForm form);

/// One kind of link: the latency of one message and the bandwidth of one stream.
struct LinkCost {
  double latencyUs = 0;
  double gbps = 1;  ///< GB/s (1e9 bytes per second)
};

/// The figures the model runs on (knobs RCCLX_SHM_*, RCCLX_NET_*, RCCLX_STEP_OVERHEAD_US,
/// RCCLX_REDUCE_GBPS). The defaults are rough: a CPU copy through shared memory, and a TCP
/// path over a 40-100 Gb/s Ethernet whose bandwidth a host's ranks share.
struct CostParams {
  LinkCost shm{1.0, 10.0};
  LinkCost net{20.0, 5.0};      ///< per host: the ranks of a host share this bandwidth
  double stepOverheadUs = 2.0;  ///< software cost of one synchronised step (signal, wait)
  double reduceGbps = 10.0;     ///< local reduction, bytes of input consumed per second
};

/// What the model says about one call.
struct CostEstimate {
  double us[kCostForms] = {0, 0, 0};  ///< estimated microseconds, indexed by CostForm
  CostForm best = CostForm::kRing;
  bool leader = false;  ///< the hierarchical form is leader-based (uneven ranks per host)
  size_t bytes = 0;
  int nHosts = 0;
  int minRanks = 0;  ///< fewest ranks on one host
  int maxRanks = 0;  ///< most ranks on one host
  /// "cost model, 2 hosts x 2 ranks, 65536 bytes: hierarchical 31.2 us < flat 40.1 us <
  /// ring 75.0 us" (hosts of uneven sizes: "3 hosts x 1-2 ranks", "leader" after
  /// hierarchical).
  std::string reason() const;
};

/// Estimates the three forms of `collective` moving `bytes` over hosts of `hostSizes` ranks
/// each (in host order; at least one host, each with at least one rank). bytes: the buffer
/// of all_reduce, broadcast and reduce; the whole output of all_gather; the whole input of
/// reduce_scatter. `rootHostRanks`: broadcast and reduce, the ranks on the root's host (0:
/// the smallest host, the worst case for flat). Ties go to ring, then flat, so a layout of one
/// rank per host (where hierarchical is the ring, or all_gather's flat exchange) picks those.
CostEstimate estimateCost(CostCollective collective, size_t bytes,
                          const std::vector<int>& hostSizes, const CostParams& params,
                          int rootHostRanks = 0);

}  // namespace rcclx
