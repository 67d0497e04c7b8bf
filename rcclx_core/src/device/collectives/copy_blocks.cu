// copy_blocks: the one GPU kernel behind every collective that moves data without reducing it
// (all_gather(v), all_to_all(v), broadcast, gather, scatter, send / recv, barrier). Each block
// plays one role of the plan (channel_plan.hpp): a lane of a send to a peer, a lane of a
// receive from a peer, or a piece of a local copy. All of a call's transfers run concurrently
// in one launch, so ranks that send to and receive from each other cannot deadlock.
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "device/collectives/channel_device.cuh"

namespace rcclx::gpu {
namespace {

__global__ void __launch_bounds__(kMaxThreads, 2) copyBlocksKernel(ExchangePlan p) {
  const ExchangeRole r = findRole(p);
  const int i = static_cast<int>(blockIdx.x) - r.firstBlock;
  switch (r.kind) {
    case RoleKind::kSend: sendRole(p, r, i); break;
    case RoleKind::kRecv: recvRole(p, r, i); break;
    default: selfRole(r, i); break;
  }
}

}  // namespace

void launchCopyBlocks(const ExchangePlan& plan, void* stream) {
  if (plan.blocks == 0) return;
  ctran::launchKernel(copyBlocksKernel,
                      {plan.blocks, plan.threads, stream, false, plan.keepSharedMemoryFree}, plan);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching copy_blocks (", plan.blocks, " blocks x ",
                  plan.threads, " threads, ", plan.nroles, " roles)");
}

int copyBlocksThreadsPerSm() {
  return ctran::gpuBlocksPerSm(copyBlocksKernel, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
