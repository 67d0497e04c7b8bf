// rcclx_core/src/selector.hpp: the allreduce selector on host and GPU buffers (thresholds at
// their boundaries, forced algorithms, the errors of algorithms that cannot run, the reasons),
// parseAlgo, selectorConfigFrom's reading of the knobs (hints, then the environment) and
// withCallHint's per-call algorithm.
#include <string>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "selector.hpp"

using rcclx::algoName;
using rcclx::AllReduceAlgo;
using rcclx::SelectorConfig;
using rcclx::SelectorInput;

namespace {

SelectorInput host(size_t bytes) {
  SelectorInput in;
  in.bytes = bytes;
  in.nranks = 4;
  return in;
}

SelectorInput gpu(size_t bytes) {
  SelectorInput in = host(bytes);
  in.gpu = true;
  return in;
}

SelectorConfig forced(AllReduceAlgo algo, const std::string& by) {
  SelectorConfig cfg;
  cfg.forced = algo;
  cfg.forcedBy = by;
  return cfg;
}

const char* pick(const SelectorInput& in, const SelectorConfig& cfg = {}) {
  return algoName(rcclx::selectAllReduce(in, cfg).algo);
}

std::string reason(const SelectorInput& in, const SelectorConfig& cfg = {}) {
  return rcclx::selectAllReduce(in, cfg).reason();
}

}  // namespace

TEST_CASE("host: default thresholds at their boundaries") {
  CHECK_EQ(pick(host(0)), "dda_flat");
  CHECK_EQ(pick(host(32 << 10)), "dda_flat");
  CHECK_EQ(pick(host((32 << 10) + 1)), "dda_tree");
  CHECK_EQ(pick(host(size_t{2} << 20)), "dda_tree");
  CHECK_EQ(pick(host((size_t{2} << 20) + 1)), "dda_large");
  CHECK_EQ(pick(host(size_t{4} << 30)), "dda_large");
}

TEST_CASE("host: above the tree, unordered reductions take the ring") {
  SelectorInput in = host((size_t{2} << 20) + 1);
  in.deterministic = false;
  CHECK_EQ(pick(in), "ring");
  CHECK_EQ(reason(in), "2097153 bytes > tree max 2097152");
  in.bytes = size_t{2} << 20;
  CHECK_EQ(pick(in), "dda_tree");
}

TEST_CASE("host: above the tree, two ranks take the ring") {
  SelectorInput in = host(size_t{64} << 20);
  in.nranks = 2;
  CHECK_EQ(pick(in), "ring");
  in.nranks = 3;
  CHECK_EQ(pick(in), "dda_large");
}

TEST_CASE("host: the reason names the bytes and the threshold") {
  CHECK_EQ(reason(host(32 << 10)), "32768 bytes <= flat max 32768");
  CHECK_EQ(reason(host(32769)), "32769 bytes <= tree max 2097152");
  CHECK_EQ(reason(host(2097153)),
           "2097153 bytes > tree max 2097152, deterministic (fewer bytes moved than the direct "
           "ring)");
}

TEST_CASE("host: thresholds are taken from the config") {
  SelectorConfig cfg;
  cfg.flatMaxBytes = 100;
  cfg.treeMaxBytes = 1000;
  CHECK_EQ(pick(host(100), cfg), "dda_flat");
  CHECK_EQ(pick(host(101), cfg), "dda_tree");
  CHECK_EQ(pick(host(1000), cfg), "dda_tree");
  CHECK_EQ(pick(host(1001), cfg), "dda_large");
  cfg.flatMaxBytes = 0;  // flat off: only empty calls stay flat
  CHECK_EQ(pick(host(0), cfg), "dda_flat");
  CHECK_EQ(pick(host(1), cfg), "dda_tree");
  // The GPU thresholds do not apply to host buffers.
  SelectorConfig gpuOnly;
  gpuOnly.gpuFlatMaxBytes = 1;
  gpuOnly.gpuTreeMaxBytes = 2;
  CHECK_EQ(pick(host(1000), gpuOnly), "dda_flat");
}

TEST_CASE("host: type, op and rank count do not change the choice") {
  for (int nranks : {2, 3, 8}) {
    for (auto type :
         {rcclx::DataType::kInt8, rcclx::DataType::kBfloat16, rcclx::DataType::kFloat64}) {
      SelectorInput in = host(1 << 20);
      in.nranks = nranks;
      in.type = type;
      in.op = rcclx::RedOp::kMax;
      CHECK_EQ(pick(in), "dda_tree");
    }
  }
}

TEST_CASE("host: several hosts or no direct access run ring at every size") {
  SelectorInput in = host(4);
  in.nHosts = 2;
  CHECK_EQ(pick(in), "ring");
  CHECK_EQ(reason(in), "ranks span 2 hosts");
  in = host(4);
  in.directAccess = false;
  CHECK_EQ(pick(in), "ring");
  CHECK(reason(in).find("no direct access to peers") != std::string::npos);
}

TEST_CASE("host: a forced algorithm wins over the thresholds") {
  const auto flat = forced(AllReduceAlgo::kDdaFlat, "RCCLX_ALLREDUCE_ALGO=dda_flat");
  CHECK_EQ(pick(host(size_t{1} << 30), flat), "dda_flat");
  CHECK_EQ(reason(host(size_t{1} << 30), flat), "forced by RCCLX_ALLREDUCE_ALGO=dda_flat");
  CHECK_EQ(pick(host(0), forced(AllReduceAlgo::kDdaTree, "algo='dda_tree'")), "dda_tree");
  CHECK_EQ(pick(host(4), forced(AllReduceAlgo::kRing, "algo='ring'")), "ring");
  // ring needs no direct access.
  SelectorInput remote = host(4);
  remote.nHosts = 3;
  remote.directAccess = false;
  CHECK_EQ(pick(remote, forced(AllReduceAlgo::kRing, "algo='ring'")), "ring");
}

TEST_CASE("host: dda_large forced runs on one host, not without direct access") {
  const auto large = forced(AllReduceAlgo::kDdaLarge, "RCCLX_ALLREDUCE_ALGO=dda_large");
  CHECK_EQ(pick(host(4), large), "dda_large");
  SelectorInput tcp = host(size_t{64} << 20);
  tcp.directAccess = false;
  CHECK_THROWS_AS(rcclx::selectAllReduce(tcp, large), ctran::InvalidArgument,
                  "all_reduce: algorithm dda_large needs every rank on one host with direct "
                  "access to peers' memory");
}

TEST_CASE("host: dda forced without direct access or across hosts is refused") {
  SelectorInput tcp = host(4);
  tcp.directAccess = false;
  CHECK_THROWS_AS(rcclx::selectAllReduce(tcp, forced(AllReduceAlgo::kDdaFlat, "algo='dda_flat'")),
                  ctran::InvalidArgument,
                  "all_reduce: algorithm dda_flat needs every rank on one host with direct "
                  "access to peers' memory, but the communicator spans 1 host(s) without direct "
                  "access (tcp transport or RCCLX_DDA_ENABLE=0) (algo='dda_flat')");
  SelectorInput hosts = host(4);
  hosts.nHosts = 3;
  CHECK_THROWS_AS(
      rcclx::selectAllReduce(hosts,
                             forced(AllReduceAlgo::kDdaTree, "RCCLX_ALLREDUCE_ALGO=dda_tree")),
      ctran::InvalidArgument,
      "algorithm dda_tree needs every rank on one host with direct access to peers' memory, but "
      "the communicator spans 3 host(s) (RCCLX_ALLREDUCE_ALGO=dda_tree)");
}

TEST_CASE("host: the errors carry the invalid-argument result code") {
  try {
    SelectorInput tcp = host(4);
    tcp.directAccess = false;
    rcclx::selectAllReduce(tcp, forced(AllReduceAlgo::kDdaLarge, "algo='dda_large'"));
    CHECK(false);
  } catch (const ctran::Error& e) {
    CHECK_EQ(static_cast<int>(e.result()), static_cast<int>(ctran::Result::kInvalidArgument));
  }
}

TEST_CASE("gpu: default thresholds at their boundaries") {
  CHECK_EQ(pick(gpu(0)), "dda_flat");
  CHECK_EQ(pick(gpu(256 << 10)), "dda_flat");
  CHECK_EQ(pick(gpu((256 << 10) + 1)), "dda_tree");
  CHECK_EQ(pick(gpu(size_t{32} << 20)), "dda_tree");
  CHECK_EQ(pick(gpu((size_t{32} << 20) + 1)), "dda_large");
  CHECK_EQ(reason(gpu(262144)), "GPU, 262144 bytes <= flat max 262144");
  CHECK_EQ(reason(gpu(262145)), "GPU, 262145 bytes <= tree max 33554432");
  CHECK_EQ(reason(gpu(33554433)), "GPU, 33554433 bytes > tree max 33554432");
}

TEST_CASE("gpu: thresholds are taken from the config, the host ones ignored") {
  SelectorConfig cfg;
  cfg.gpuFlatMaxBytes = 10;
  cfg.gpuTreeMaxBytes = 20;
  cfg.flatMaxBytes = 0;
  cfg.treeMaxBytes = 0;
  CHECK_EQ(pick(gpu(10), cfg), "dda_flat");
  CHECK_EQ(pick(gpu(11), cfg), "dda_tree");
  CHECK_EQ(pick(gpu(20), cfg), "dda_tree");
  CHECK_EQ(pick(gpu(21), cfg), "dda_large");
}

TEST_CASE("gpu: forced dda algorithms run at any size") {
  CHECK_EQ(pick(gpu(4), forced(AllReduceAlgo::kDdaLarge, "algo='dda_large'")), "dda_large");
  CHECK_EQ(reason(gpu(4), forced(AllReduceAlgo::kDdaLarge, "algo='dda_large'")),
           "forced by algo='dda_large'");
  CHECK_EQ(pick(gpu(size_t{1} << 30), forced(AllReduceAlgo::kDdaFlat, "algo='dda_flat'")),
           "dda_flat");
  CHECK_EQ(pick(gpu(0), forced(AllReduceAlgo::kDdaTree, "algo='dda_tree'")), "dda_tree");
}

TEST_CASE("gpu: ring is refused") {
  CHECK_THROWS_AS(
      rcclx::selectAllReduce(gpu(4), forced(AllReduceAlgo::kRing, "RCCLX_ALLREDUCE_ALGO=ring")),
      ctran::InvalidArgument,
      "all_reduce: algorithm ring is not implemented on GPU buffers (RCCLX_ALLREDUCE_ALGO=ring); "
      "use auto, dda_flat, dda_tree or dda_large");
}

TEST_CASE("gpu: several hosts or no GPU staging are refused, forced or not") {
  SelectorInput hosts = gpu(4);
  hosts.nHosts = 2;
  CHECK_THROWS_AS(rcclx::selectAllReduce(hosts, {}), ctran::InvalidArgument,
                  "all_reduce on GPU buffers needs every rank on one host with the GPU staging "
                  "mapped (a communicator created with a device), but the communicator spans 2 "
                  "host(s)");
  // Checked before the forced algorithm: ring across hosts names the hosts.
  CHECK_THROWS_AS(rcclx::selectAllReduce(hosts, forced(AllReduceAlgo::kRing, "algo='ring'")),
                  ctran::InvalidArgument, "spans 2 host(s)");
  SelectorInput unmapped = gpu(4);
  unmapped.directAccess = false;
  CHECK_THROWS_AS(rcclx::selectAllReduce(unmapped, {}), ctran::InvalidArgument,
                  "spans 1 host(s) and has no GPU staging");
}

TEST_CASE("parseAlgo: every name round-trips") {
  for (auto a : {AllReduceAlgo::kAuto, AllReduceAlgo::kRing, AllReduceAlgo::kDdaFlat,
                 AllReduceAlgo::kDdaTree, AllReduceAlgo::kDdaLarge}) {
    CHECK(rcclx::parseAlgo(algoName(a), "test") == a);
  }
  CHECK_EQ(algoName(AllReduceAlgo::kDdaLarge), "dda_large");
}

TEST_CASE("parseAlgo: an unknown name is refused, naming the source and the choices") {
  CHECK_THROWS_AS(rcclx::parseAlgo("fastest", "RCCLX_ALLREDUCE_ALGO"), ctran::InvalidArgument,
                  "RCCLX_ALLREDUCE_ALGO: unknown allreduce algorithm 'fastest' (choose auto, "
                  "ring, dda_flat, dda_tree or dda_large)");
  CHECK_THROWS_AS(rcclx::parseAlgo("Ring", "algo"), ctran::InvalidArgument,
                  "unknown allreduce algorithm 'Ring'");
  CHECK_THROWS_AS(rcclx::parseAlgo("", "algo"), ctran::InvalidArgument,
                  "unknown allreduce algorithm ''");
}

TEST_CASE("selectorConfigFrom: hints first, then the environment, then the defaults") {
  check::ScopedEnv algo("RCCLX_ALLREDUCE_ALGO", "dda_flat");
  check::ScopedEnv flat("RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "64K");
  check::ScopedEnv tree("RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "3M");
  check::ScopedEnv gpuFlat("RCCLX_GPU_FLAT_MAX_BYTES", nullptr);
  check::ScopedEnv gpuTree("RCCLX_GPU_TREE_MAX_BYTES", nullptr);
  const ctran::config::Overrides hints = {{"RCCLX_ALLREDUCE_ALGO", "dda_tree"},
                                          {"RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "1M"},
                                          {"RCCLX_GPU_FLAT_MAX_BYTES", "1000"}};
  SelectorConfig cfg = rcclx::selectorConfigFrom(&hints);
  CHECK_EQ(cfg.flatMaxBytes, 64 << 10);             // environment
  CHECK_EQ(cfg.treeMaxBytes, 1 << 20);              // hint over environment
  CHECK_EQ(cfg.gpuFlatMaxBytes, 1000);              // hint
  CHECK_EQ(cfg.gpuTreeMaxBytes, size_t{32} << 20);  // default
  CHECK(cfg.forced == AllReduceAlgo::kDdaTree);
  CHECK_EQ(cfg.forcedBy, "RCCLX_ALLREDUCE_ALGO=dda_tree");
  cfg = rcclx::selectorConfigFrom(nullptr);
  CHECK_EQ(cfg.treeMaxBytes, 3 << 20);
  CHECK(cfg.forced == AllReduceAlgo::kDdaFlat);
  CHECK_EQ(cfg.forcedBy, "RCCLX_ALLREDUCE_ALGO=dda_flat");
}

TEST_CASE("selectorConfigFrom: a bad knob value is refused, naming where it came from") {
  check::ScopedEnv algo("RCCLX_ALLREDUCE_ALGO", "fastest");
  CHECK_THROWS_AS(rcclx::selectorConfigFrom(nullptr), ctran::InvalidArgument,
                  "environment variable RCCLX_ALLREDUCE_ALGO='fastest' is not one of auto|ring|");
  const ctran::config::Overrides hints = {{"RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "12Q"},
                                          {"RCCLX_ALLREDUCE_ALGO", "auto"}};
  CHECK_THROWS_AS(rcclx::selectorConfigFrom(&hints), ctran::InvalidArgument,
                  "hint RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES='12Q' is not a byte size");
}

TEST_CASE("withCallHint: a per-call algorithm overrides the communicator's") {
  const SelectorConfig base = forced(AllReduceAlgo::kDdaTree, "RCCLX_ALLREDUCE_ALGO=dda_tree");
  SelectorConfig cfg = rcclx::withCallHint(base, "");
  CHECK(cfg.forced == AllReduceAlgo::kDdaTree);
  CHECK_EQ(cfg.forcedBy, "RCCLX_ALLREDUCE_ALGO=dda_tree");
  cfg = rcclx::withCallHint(base, "ring");
  CHECK(cfg.forced == AllReduceAlgo::kRing);
  CHECK_EQ(cfg.forcedBy, "algo='ring'");
  CHECK_EQ(reason(host(4), cfg), "forced by algo='ring'");
  cfg = rcclx::withCallHint(base, "auto");  // the thresholds decide again
  CHECK(cfg.forced == AllReduceAlgo::kAuto);
  CHECK_EQ(pick(host(4), cfg), "dda_flat");
  CHECK_THROWS_AS(rcclx::withCallHint(base, "bogus"), ctran::InvalidArgument,
                  "all_reduce algo hint: unknown allreduce algorithm 'bogus'");
}
