// Implementation of cost_model.hpp. Every form is a sum of synchronised steps; a step costs the
// per-step overhead plus, on each link kind it uses, latency + bytes / bandwidth (the slower
// link kind bounds a step that uses both). A host's network bandwidth is shared by its ranks
// that send off the host in the same step. Pipelined chains pay the latency once per hop and
// the bandwidth once. Hosts run their phases concurrently: a form costs its slowest host.
#include "cost_model.hpp"

#include <algorithm>
#include <cstdio>

#include "ctran/checks.hpp"

namespace rcclx {

const char* costFormName(CostForm form) {
  switch (form) {
    case CostForm::kFlat: return "flat";
    case CostForm::kRing: return "ring";
    case CostForm::kHierarchical: return "hierarchical";
  }
  return "?";
}

namespace {

/// The layout and the figures, with the step costs every formula is built from.
struct Model {
  const CostParams& p;
  double S;  // bytes
  int n = 0;
  int H = 0;
  int minL = 0;
  int maxL = 0;
  bool even = false;

  /// Microseconds to move `bytes` on one stream of `link` (no latency).
  static double wire(const LinkCost& link, double bytes) { return bytes / (link.gbps * 1e3); }
  double reduceUs(double bytes) const { return bytes / (p.reduceGbps * 1e3); }
  /// One step inside a host: every rank moves `bytes` over shared memory.
  double shmStep(double bytes) const {
    return p.stepOverheadUs + p.shm.latencyUs + wire(p.shm, bytes);
  }
  /// One step across hosts: a host's ranks send `hostBytes` together over its link.
  double netStep(double hostBytes) const {
    return p.stepOverheadUs + p.net.latencyUs + wire(p.net, hostBytes);
  }
  /// One step that uses both link kinds at once (the slower one bounds it); shmBytes is per
  /// rank, netBytes per host. A host of one rank has no shared-memory part.
  double bothStep(int L, double shmBytes, double netBytes) const {
    double shm = L > 1 ? p.shm.latencyUs + wire(p.shm, shmBytes) : 0.0;
    double net = netBytes > 0 ? p.net.latencyUs + wire(p.net, netBytes) : 0.0;
    return p.stepOverheadUs + std::max(shm, net);
  }
  /// A pipelined chain of `hops` hops over `link` moving `bytes`.
  double chain(const LinkCost& link, int hops, double bytes) const {
    if (hops <= 0) return 0.0;
    return hops * (p.stepOverheadUs + link.latencyUs) + wire(link, bytes);
  }
  /// A ring over all ranks, `steps` steps of `perStep` bytes: one hop per host boundary
  /// crosses the network in each step (ranks of a host next to each other in the ring).
  double ringSteps(int steps, double perStep) const {
    return steps * bothStep(maxL, perStep, perStep);
  }
};

using Forms = CostEstimate;

void allReduce(const Model& m, const std::vector<int>& sizes, Forms& f) {
  const double S = m.S;
  const int n = m.n, H = m.H;
  double flat = 0, leader = 0;
  for (int L : sizes) {
    // Flat: everyone sends its whole buffer to everyone, then reduces n inputs.
    flat = std::max(flat, m.bothStep(L, (L - 1) * S, double(L) * (n - L) * S) + m.reduceUs(n * S));
    // Leader: a chain reduce to the leader, the leaders' ring, a chain broadcast.
    double intra = L > 1 ? 2 * m.chain(m.p.shm, L - 1, S) + m.reduceUs(S) : 0.0;
    leader = std::max(leader, intra);
  }
  const double leaders = 2 * (H - 1) * m.netStep(S / H) + (H - 1) * m.reduceUs(S / H);
  leader += leaders;
  f.us[int(CostForm::kFlat)] = flat;
  f.us[int(CostForm::kRing)] = m.ringSteps(2 * (n - 1), S / n) + (n - 1) * m.reduceUs(S / n);
  if (m.even) {
    // Split rail: intra-host reduce-scatter, the L rails' rings on S/L each (sharing the
    // host's link), intra-host all-gather.
    const int L = m.maxL;
    const double intra = L > 1 ? 2 * (L - 1) * m.shmStep(S / L) + (L - 1) * m.reduceUs(S / L) : 0;
    f.us[int(CostForm::kHierarchical)] =
        intra + 2 * (H - 1) * m.netStep(S / H) + (H - 1) * m.reduceUs(S / (double(L) * H));
  } else {
    f.us[int(CostForm::kHierarchical)] = leader;
    f.leader = true;
  }
}

void allGather(const Model& m, const std::vector<int>& sizes, Forms& f) {
  const double b = m.S / m.n;  // one rank's block
  const int n = m.n, H = m.H;
  double flat = 0, leader = 0, leadersNet = 0;
  for (int L : sizes) {
    flat = std::max(flat, m.bothStep(L, (L - 1) * b, double(L) * (n - L) * b));
    double gather = L > 1 ? m.shmStep((L - 1) * b) : 0.0;
    double spread = L > 1 ? m.shmStep((L - 1) * (n - 1) * b) : 0.0;
    leader = std::max(leader, gather + spread);
    leadersNet = std::max(leadersNet, m.netStep(double(H - 1) * L * b));
  }
  f.us[int(CostForm::kFlat)] = flat;
  f.us[int(CostForm::kRing)] = m.ringSteps(n - 1, b);
  if (m.even) {
    // Split rail: each rail exchanges its blocks across hosts, then each host exchanges the
    // H blocks every rank holds.
    const int L = m.maxL;
    double intra = L > 1 ? m.shmStep(double(L - 1) * H * b) : 0.0;
    f.us[int(CostForm::kHierarchical)] = m.netStep(double(L) * (H - 1) * b) + intra;
  } else {
    f.us[int(CostForm::kHierarchical)] = leader + leadersNet;
    f.leader = true;
  }
}

void reduceScatter(const Model& m, const std::vector<int>& sizes, Forms& f) {
  const double S = m.S, b = S / m.n;
  const int n = m.n, H = m.H;
  double flat = 0, leader = 0;
  for (int L : sizes) {
    flat = std::max(flat, m.bothStep(L, (L - 1) * b, double(L) * (n - L) * b));
    double intra =
        L > 1 ? m.chain(m.p.shm, L - 1, S) + m.reduceUs(S) + m.shmStep((L - 1) * b) : 0.0;
    leader = std::max(leader, intra);
  }
  f.us[int(CostForm::kFlat)] = flat + m.reduceUs(S);
  f.us[int(CostForm::kRing)] = m.ringSteps(n - 1, b) + (n - 1) * m.reduceUs(b);
  if (m.even) {
    // Split rail: the input packed by rail, an intra-host ring reduce-scatter of it, then
    // each rail's ring reduce-scatter across hosts.
    const int L = m.maxL;
    double intra =
        L > 1 ? Model::wire(m.p.shm, S) + (L - 1) * m.shmStep(S / L) + (L - 1) * m.reduceUs(S / L)
              : 0.0;
    f.us[int(CostForm::kHierarchical)] =
        intra + (H - 1) * m.netStep(double(L) * b) + (H - 1) * m.reduceUs(b);
  } else {
    f.us[int(CostForm::kHierarchical)] =
        leader + (H - 1) * m.netStep(S / H) + (H - 1) * m.reduceUs(S / H);
    f.leader = true;
  }
}

/// Broadcast, and reduce with `reducing` (which adds the reductions to each form).
void rooted(const Model& m, int rootL, bool reducing, Forms& f) {
  const double S = m.S;
  const int n = m.n, H = m.H;
  const double red = reducing ? m.reduceUs(S) : 0.0;
  const double redInside = m.maxL > 1 ? red : 0.0;  // no chain inside hosts of one rank
  f.us[int(CostForm::kFlat)] = m.bothStep(rootL, (rootL - 1) * S, double(n - rootL) * S) +
                               (reducing ? m.reduceUs(n * S) : 0);
  // The chain along the ring: n - 1 hops, H - 1 of them between hosts; its slowest link
  // bounds the pipeline.
  f.us[int(CostForm::kRing)] = (n - 1) * m.p.stepOverheadUs + (H - 1) * m.p.net.latencyUs +
                               (n - H) * m.p.shm.latencyUs + Model::wire(m.p.net, S) + red;
  // Representatives (the root, each other host's leader) chain across hosts; a chain inside
  // each host.
  f.us[int(CostForm::kHierarchical)] =
      m.chain(m.p.net, H - 1, S) + m.chain(m.p.shm, m.maxL - 1, S) + red + redInside;
}

}  // namespace

std::string CostEstimate::reason() const {
  char buf[256];
  std::string ranks =
      minRanks == maxRanks ? std::to_string(maxRanks) : ctran::strCat(minRanks, "-", maxRanks);
  std::string out =
      ctran::strCat("cost model, ", nHosts, " hosts x ", ranks, " ranks, ", bytes, " bytes: ");
  // The chosen form first, then the others from cheapest to dearest.
  CostForm rest[2];
  int k = 0;
  for (int i = 0; i < kCostForms; ++i) {
    if (CostForm(i) != best) rest[k++] = CostForm(i);
  }
  if (us[int(rest[1])] < us[int(rest[0])]) std::swap(rest[0], rest[1]);
  const CostForm shown[kCostForms] = {best, rest[0], rest[1]};
  for (int i = 0; i < kCostForms; ++i) {
    const CostForm form = shown[i];
    std::snprintf(buf, sizeof(buf), "%s%s%s %.1f us", i == 0 ? "" : (i == 1 ? " < " : " <= "),
                  costFormName(form), form == CostForm::kHierarchical && leader ? " (leader)" : "",
                  us[int(form)]);
    out += buf;
  }
  return out;
}

CostEstimate estimateCost(CostCollective collective, size_t bytes,
                          const std::vector<int>& hostSizes, const CostParams& params,
                          int rootHostRanks) {
  CTRAN_CHECK(!hostSizes.empty(), ctran::InvalidArgument, "cost model: no hosts");
  Model m{params, static_cast<double>(bytes)};
  m.H = static_cast<int>(hostSizes.size());
  m.minL = *std::min_element(hostSizes.begin(), hostSizes.end());
  m.maxL = *std::max_element(hostSizes.begin(), hostSizes.end());
  CTRAN_CHECK(m.minL >= 1, ctran::InvalidArgument, "cost model: a host without ranks");
  for (int L : hostSizes) m.n += L;
  m.even = m.minL == m.maxL;
  CostEstimate f;
  f.bytes = bytes;
  f.nHosts = m.H;
  f.minRanks = m.minL;
  f.maxRanks = m.maxL;
  switch (collective) {
    case CostCollective::kAllReduce: allReduce(m, hostSizes, f); break;
    case CostCollective::kAllGather: allGather(m, hostSizes, f); break;
    case CostCollective::kReduceScatter: reduceScatter(m, hostSizes, f); break;
    case CostCollective::kBroadcast:
    case CostCollective::kReduce:
      rooted(m, rootHostRanks > 0 ? rootHostRanks : m.minL, collective == CostCollective::kReduce,
             f);
      break;
  }
  // Strictly cheaper by a relative margin, so equal formulas keep the simpler form: on one rank
  // per host hierarchical is the ring (all_gather: the flat exchange).
  auto cheaper = [&](CostForm a, CostForm b) { return f.us[int(a)] < f.us[int(b)] * (1 - 1e-9); };
  f.best = CostForm::kRing;
  if (cheaper(CostForm::kFlat, f.best)) f.best = CostForm::kFlat;
  if (cheaper(CostForm::kHierarchical, f.best)) f.best = CostForm::kHierarchical;
  return f;
}

}  // namespace rcclx
