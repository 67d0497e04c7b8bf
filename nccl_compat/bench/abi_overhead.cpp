// Host time the C ABI adds to a collective: ncclAllReduce on host memory against the core's own
// C++ entry (rcclx::Communicator::allReduce), 1 rank, in one program and one run. Timed in
// alternating blocks (so drift and noise hit both alike); prints the median per-call time of
// each and their difference.
//
//   cmake --build <build dir> --target nccl_abi_bench && <build dir>/nccl_compat/nccl_abi_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "nccl.h"
#include "rcclx/communicator.hpp"

namespace {

constexpr int kBlocks = 41;
constexpr int kCallsPerBlock = 2000;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Call>
double blockMicros(Call&& call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCallsPerBlock; ++i) call();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / kCallsPerBlock;
}

void check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "%s failed: %s\n", what, ncclGetLastError(nullptr));
  std::exit(1);
}

}  // namespace

int main() {
  // The core's communicator (this program's own copy of rcclx_core).
  auto core = std::make_unique<rcclx::Communicator>(
      ctran::Bootstrap::fromUniqueId(ctran::createUniqueId(), 0, 1));
  // The ABI's communicator (libnccl.so.2's copy).
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank");

  std::printf("host time per allreduce call, 1 rank, host memory (median of %d blocks of %d)\n",
              kBlocks, kCallsPerBlock);
  std::printf("%10s %14s %14s %14s\n", "elements", "core C++ (us)", "ncclAllReduce", "added (us)");
  for (size_t count : {size_t{1}, size_t{1024}}) {
    std::vector<float> in(count, 1.0f), out(count, 0.0f);
    const auto send = rcclx::Buffer::unknown(in.data(), count, rcclx::DataType::kFloat32);
    const auto recv = rcclx::Buffer::unknown(out.data(), count, rcclx::DataType::kFloat32);
    auto viaCore = [&] { core->allReduce(send, recv, rcclx::RedOp::kSum); };
    auto viaAbi = [&] {
      check(ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr),
            "ncclAllReduce");
    };
    blockMicros(viaCore);  // warm-up
    blockMicros(viaAbi);
    std::vector<double> coreTimes, abiTimes;
    for (int b = 0; b < kBlocks; ++b) {
      coreTimes.push_back(blockMicros(viaCore));
      abiTimes.push_back(blockMicros(viaAbi));
    }
    const double c = median(coreTimes), a = median(abiTimes);
    std::printf("%10zu %14.3f %14.3f %14.3f\n", count, c, a, a - c);
  }
  check(ncclCommDestroy(comm), "ncclCommDestroy");
  core->destroy();
  return 0;
}
