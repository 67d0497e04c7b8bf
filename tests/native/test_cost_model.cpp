// rcclx_core/src/cost_model.hpp and its use by the selectors across hosts: the formulas on
// hand-computed figures, the leader form on uneven hosts, ties on one rank per host, the figures
// that make each form win, the knobs that carry them, and the selection rules and errors.
#include <string>
#include <vector>

#include "check.hpp"
#include "cost_model.hpp"
#include "ctran/checks.hpp"
#include "selector.hpp"

using rcclx::CostCollective;
using rcclx::CostEstimate;
using rcclx::CostForm;
using rcclx::CostParams;
using rcclx::estimateCost;

namespace {

// Round figures, so the expected times below can be worked out by hand.
CostParams handParams() {
  CostParams p;
  p.shm = {1.0, 10.0};
  p.net = {20.0, 5.0};
  p.stepOverheadUs = 2.0;
  p.reduceGbps = 10.0;
  return p;
}

const char* best(const CostEstimate& e) { return rcclx::costFormName(e.best); }

double us(const CostEstimate& e, CostForm f) { return e.us[int(f)]; }

rcclx::SelectorInput across(size_t bytes, const std::vector<int>& hostSizes) {
  rcclx::SelectorInput in;
  in.bytes = bytes;
  in.nHosts = static_cast<int>(hostSizes.size());
  in.nranks = 0;
  for (int n : hostSizes) in.nranks += n;
  in.directAccess = false;
  in.hostSizes = &hostSizes;
  return in;
}

}  // namespace

TEST_CASE("all_reduce: the three forms on 2 hosts x 2 ranks, worked by hand") {
  // S = 1e6 bytes, n = 4, L = 2, H = 2 (bytes per microsecond: shm 1e4, net 5e3, reduce 1e4).
  // flat: 2 + max(1 + 1e6/1e4, 20 + 4e6/5e3) + 4e6/1e4 = 2 + 820 + 400 = 1222
  // ring: 6 * (2 + max(1 + 25, 20 + 50)) + 3 * 25 = 432 + 75 = 507
  // hierarchical: 2 * (2 + 1 + 50) + 50 + 2 * (2 + 20 + 100) + 25 = 156 + 244 + 25 = 425
  const CostEstimate e = estimateCost(CostCollective::kAllReduce, 1000000, {2, 2}, handParams());
  CHECK_EQ(us(e, CostForm::kFlat), 1222.0);
  CHECK_EQ(us(e, CostForm::kRing), 507.0);
  CHECK_EQ(us(e, CostForm::kHierarchical), 425.0);
  CHECK_EQ(best(e), "hierarchical");
  CHECK(!e.leader);
  CHECK_EQ(e.reason(),
           "cost model, 2 hosts x 2 ranks, 1000000 bytes: hierarchical 425.0 us < ring 507.0 us "
           "<= flat 1222.0 us");
}

TEST_CASE("all_reduce: small messages go flat, large ones hierarchical (default figures)") {
  const CostParams p;
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 4096, {2, 2}, p)), "flat");
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 64 << 20, {2, 2}, p)), "hierarchical");
}

TEST_CASE("large messages: hierarchical when shared memory outruns the network, else ring") {
  // The hierarchical phases follow one another while the ring's steps use both kinds of link
  // at once: with shared memory only twice the network's speed, 3 ranks per host go ring.
  CostParams p;
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 64 << 20, {3, 3, 3}, p)), "ring");
  p.shm.gbps = 50;
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 64 << 20, {3, 3, 3}, p)), "hierarchical");
  CHECK_EQ(best(estimateCost(CostCollective::kReduceScatter, 64 << 20, {2, 2}, p)), "hierarchical");
}

TEST_CASE("all_reduce: uneven hosts use the leader form, named in the reason") {
  // The leaders' ring carries the whole buffer: it pays where the network is the slow part.
  CostParams p;
  p.shm.gbps = 100;
  p.reduceGbps = 100;
  p.net.gbps = 1;
  const CostEstimate e = estimateCost(CostCollective::kAllReduce, 8 << 20, {2, 1, 2}, p);
  CHECK(e.leader);
  CHECK_EQ(best(e), "hierarchical");
  CHECK(e.reason().find("3 hosts x 1-2 ranks") != std::string::npos);
  CHECK(e.reason().find("hierarchical (leader)") != std::string::npos);
}

TEST_CASE("one rank per host: hierarchical is the ring, and the tie goes to ring") {
  const CostParams p;
  for (auto c : {CostCollective::kAllReduce, CostCollective::kReduceScatter,
                 CostCollective::kBroadcast, CostCollective::kReduce}) {
    const CostEstimate e = estimateCost(c, 64 << 20, {1, 1, 1, 1}, p);
    CHECK_EQ(us(e, CostForm::kRing), us(e, CostForm::kHierarchical));
    CHECK_EQ(best(e), "ring");
  }
}

TEST_CASE("the figures make each form win") {
  CostParams p;
  // A slow network message: one step is worth most.
  p.net.latencyUs = 5000;
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 1 << 20, {2, 2}, p)), "flat");
  // Slow links everywhere, hosts of uneven sizes: the ring moves the fewest bytes per link.
  p = CostParams{};
  p.shm.gbps = 0.05;
  p.net.gbps = 0.1;
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 1 << 20, {2, 1, 2}, p)), "ring");
  // Fast figures, a large message: hierarchical.
  CHECK_EQ(best(estimateCost(CostCollective::kAllReduce, 1 << 20, {2, 2}, CostParams{})),
           "hierarchical");
}

TEST_CASE("every collective: times grow with bytes, and each form is positive") {
  const CostParams p;
  for (auto c :
       {CostCollective::kAllReduce, CostCollective::kAllGather, CostCollective::kReduceScatter,
        CostCollective::kBroadcast, CostCollective::kReduce}) {
    for (const std::vector<int>& hosts :
         {std::vector<int>{2, 2}, {3, 3}, {2, 1, 2}, {1, 1, 1, 1}}) {
      CostEstimate prev = estimateCost(c, 0, hosts, p);
      for (size_t bytes = 1024; bytes <= (size_t{64} << 20); bytes *= 8) {
        const CostEstimate e = estimateCost(c, bytes, hosts, p);
        for (int f = 0; f < rcclx::kCostForms; ++f) {
          CHECK(e.us[f] > 0);
          CHECK(e.us[f] > prev.us[f]);
        }
        prev = e;
      }
    }
  }
}

TEST_CASE("all_gather: flat when latency-bound, hierarchical when bandwidth-bound") {
  const CostParams p;
  CHECK_EQ(best(estimateCost(CostCollective::kAllGather, 4096, {2, 2}, p)), "flat");
  CHECK_EQ(best(estimateCost(CostCollective::kAllGather, 64 << 20, {3, 3}, p)), "hierarchical");
}

TEST_CASE("broadcast and reduce: the chain is bandwidth-optimal, hierarchical saves steps") {
  const CostParams p;
  // 2 x 2: the chain crosses the network once, as the hierarchical form does.
  CHECK_EQ(best(estimateCost(CostCollective::kBroadcast, 64 << 20, {2, 2}, p)), "ring");
  CHECK_EQ(best(estimateCost(CostCollective::kReduce, 64 << 20, {2, 2}, p)), "ring");
  // 4 hosts x 8 ranks at 64 KiB: 31 steps along the ring against 3 + 7.
  const std::vector<int> big{8, 8, 8, 8};
  CHECK_EQ(best(estimateCost(CostCollective::kBroadcast, 64 << 10, big, p)), "hierarchical");
  CHECK_EQ(best(estimateCost(CostCollective::kReduce, 64 << 10, big, p)), "hierarchical");
  // The root's host size matters to flat broadcast: the root sends n - L copies off its host.
  const CostEstimate large = estimateCost(CostCollective::kBroadcast, 1 << 20, {3, 1}, p, 3);
  const CostEstimate small = estimateCost(CostCollective::kBroadcast, 1 << 20, {3, 1}, p, 1);
  CHECK(us(large, CostForm::kFlat) < us(small, CostForm::kFlat));
}

TEST_CASE("a layout without hosts or with an empty host is refused") {
  CHECK_THROWS_AS(estimateCost(CostCollective::kAllReduce, 1, {}, CostParams{}),
                  ctran::InvalidArgument, "cost model: no hosts");
  CHECK_THROWS_AS(estimateCost(CostCollective::kAllReduce, 1, {2, 0}, CostParams{}),
                  ctran::InvalidArgument, "a host without ranks");
}

TEST_CASE("selector: across hosts with a layout, all_reduce follows the cost model") {
  const std::vector<int> hosts{2, 2};
  rcclx::SelectorConfig cfg;
  rcclx::Selection s = rcclx::selectAllReduce(across(4096, hosts), cfg);
  CHECK_EQ(rcclx::algoName(s.algo), "flat");
  CHECK(s.reason().find("cost model, 2 hosts x 2 ranks, 4096 bytes: flat") == 0);
  s = rcclx::selectAllReduce(across(64 << 20, hosts), cfg);
  CHECK_EQ(rcclx::algoName(s.algo), "hierarchical");
  cfg.cost.net.latencyUs = 1e6;
  CHECK_EQ(rcclx::algoName(rcclx::selectAllReduce(across(64 << 20, hosts), cfg).algo), "flat");
  const std::vector<int> single{1, 1, 1, 1};
  CHECK_EQ(rcclx::algoName(rcclx::selectAllReduce(across(64 << 20, single), {}).algo), "ring");
}

TEST_CASE("selector: hierarchical forced on one host is refused, flat runs anywhere") {
  rcclx::SelectorInput one;
  one.bytes = 1024;
  one.nranks = 4;
  rcclx::SelectorConfig cfg;
  cfg.forced = rcclx::AllReduceAlgo::kHierarchical;
  cfg.forcedBy = "algo='hierarchical'";
  CHECK_THROWS_AS(rcclx::selectAllReduce(one, cfg), ctran::InvalidArgument,
                  "all_reduce: algorithm hierarchical needs ranks on more than one host, but the "
                  "communicator's 4 ranks are all on one host (algo='hierarchical')");
  cfg.forced = rcclx::AllReduceAlgo::kFlat;
  CHECK_EQ(rcclx::algoName(rcclx::selectAllReduce(one, cfg).algo), "flat");
  one.gpu = true;
  CHECK_THROWS_AS(rcclx::selectAllReduce(one, cfg), ctran::InvalidArgument,
                  "algorithm flat is not implemented on GPU buffers");
  CHECK(rcclx::parseAlgo("hierarchical", "t") == rcclx::AllReduceAlgo::kHierarchical);
  CHECK(rcclx::parseAlgo("flat", "t") == rcclx::AllReduceAlgo::kFlat);
}

TEST_CASE("selectCollective: ring on one host, the cost model across hosts, forced wins") {
  rcclx::SelectorConfig cfg;
  rcclx::SelectorInput one;
  one.bytes = 1 << 20;
  one.nranks = 3;
  auto sel = rcclx::selectCollective(CostCollective::kAllGather, one, cfg);
  CHECK_EQ(rcclx::collectiveAlgoName(sel.algo), "ring");
  CHECK_EQ(sel.reason(), "every rank on one host");
  const std::vector<int> hosts{3, 3};
  sel = rcclx::selectCollective(CostCollective::kAllGather, across(64 << 20, hosts), cfg);
  CHECK_EQ(rcclx::collectiveAlgoName(sel.algo), "hierarchical");
  CHECK(sel.reason().find("cost model, 2 hosts x 3 ranks") == 0);
  rcclx::SelectorInput unknown = across(1, hosts);
  unknown.hostSizes = nullptr;
  CHECK_EQ(rcclx::selectCollective(CostCollective::kReduce, unknown, cfg).reason(),
           "ranks span 2 hosts");
  cfg.broadcast = {rcclx::CollectiveAlgo::kFlat, "RCCLX_BROADCAST_ALGO=flat"};
  sel = rcclx::selectCollective(CostCollective::kBroadcast, across(64 << 20, hosts), cfg);
  CHECK_EQ(rcclx::collectiveAlgoName(sel.algo), "flat");
  CHECK_EQ(sel.reason(), "forced by RCCLX_BROADCAST_ALGO=flat");
  cfg.reduce = {rcclx::CollectiveAlgo::kHierarchical, "RCCLX_REDUCE_ALGO=hierarchical"};
  CHECK_THROWS_AS(rcclx::selectCollective(CostCollective::kReduce, one, cfg),
                  ctran::InvalidArgument,
                  "reduce: algorithm hierarchical needs ranks on more than one host");
  CHECK_THROWS_AS(rcclx::parseCollectiveAlgo("tree", "RCCLX_REDUCE_ALGO"), ctran::InvalidArgument,
                  "RCCLX_REDUCE_ALGO: unknown algorithm 'tree' (choose auto, flat, ring or "
                  "hierarchical)");
}

TEST_CASE("costParamsFrom: the knobs, hints over the environment, bad figures refused") {
  check::ScopedEnv lat("RCCLX_NET_LATENCY_US", "7.5");
  check::ScopedEnv gbps("RCCLX_NET_GBPS", nullptr);
  const ctran::config::Overrides hints = {{"RCCLX_SHM_GBPS", "2.25"}};
  CostParams p = rcclx::costParamsFrom(&hints);
  CHECK_EQ(p.net.latencyUs, 7.5);   // environment
  CHECK_EQ(p.shm.gbps, 2.25);       // hint
  CHECK_EQ(p.net.gbps, 5.0);        // default
  CHECK_EQ(p.stepOverheadUs, 2.0);  // default
  const ctran::config::Overrides bad = {{"RCCLX_REDUCE_GBPS", "fast"}};
  CHECK_THROWS_AS(rcclx::costParamsFrom(&bad), ctran::InvalidArgument,
                  "RCCLX_REDUCE_GBPS='fast' is not a positive number");
  const ctran::config::Overrides zero = {{"RCCLX_NET_GBPS", "0"}};
  CHECK_THROWS_AS(rcclx::costParamsFrom(&zero), ctran::InvalidArgument,
                  "RCCLX_NET_GBPS='0' is not a positive number");
}
