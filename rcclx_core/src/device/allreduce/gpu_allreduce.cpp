// Implementation of gpu_allreduce.hpp, and gpuSupports (launch.hpp). The plan is plan.cpp, the
// tuning and layout tuning.cpp, the kernels allreduce_{flat_ll,flat_lines,tree_lines,two_shot}.cu.
#include "device/allreduce/gpu_allreduce.hpp"

#include <utility>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"

namespace rcclx::gpu {

bool gpuSupports(DataType type, RedOp op, std::string* why) {
  std::string reason;
  if (type == DataType::kFloat8E4M3 || type == DataType::kFloat8E5M2) {
    reason = ctran::strCat("datatype ", dataTypeName(type),
                           " is not supported in reductions on GPU buffers yet (float16, "
                           "bfloat16, float32, float64 and the integer types are)");
  } else if (op == RedOp::kPreMulSum && !isFloating(type)) {
    reason = ctran::strCat("op premul_sum on GPU buffers needs a floating datatype, not ",
                           dataTypeName(type), " (float16, bfloat16, float32, float64)");
  } else if ((op == RedOp::kBitAnd || op == RedOp::kBitOr || op == RedOp::kBitXor) &&
             isFloating(type)) {
    reason = ctran::strCat("op ", redOpName(op), " is not valid for datatype ", dataTypeName(type),
                           " (bitwise ops need integers)");
  } else {
    return true;
  }
  if (why) *why = std::move(reason);
  return false;
}

GpuAllReduce::GpuAllReduce(DeviceResources& resources, const Settings& settings,
                           std::function<void()> drainHostWork)
    : res_(resources), nranks_(resources.nranks()), drainHostWork_(std::move(drainHostWork)) {
  layout_ = StagingLayout::of(nranks_, settings.gpuFlatSlotBytes, settings.gpuStagingBytes,
                              settings.gpuLinesBytes);
  window_ = &res_.staging(Staging::kAllReduce, layout_.totalBytes(), kNumSignals, "all_reduce");
}

namespace {

/// Launches what `plan` says, with `a` holding the call (its count and type the caller's).
void launchPlan(const GpuAllReducePlan& plan, LaunchArgs& a) {
  a.count = plan.count;
  a.type = plan.type;
  a.pdl = plan.pdl;
  a.pdlOneAhead = plan.pdlOneAhead;
  a.keepSharedMemoryFree = plan.keepSharedMemoryFree;
  switch (plan.kernel) {
    case GpuKernel::kFlatLl: {
      const size_t elem = dataTypeSize(plan.type);
      const char* send = static_cast<const char*>(a.send);
      char* recv = static_cast<char*>(a.recv);
      for (size_t i = 0; i < plan.pieces; ++i) {
        const size_t done = i * plan.pieceCount;
        const bool last = i + 1 == plan.pieces;
        a.send = send + done * elem;
        a.recv = recv + done * elem;
        a.count = last ? plan.count - done : plan.pieceCount;
        launchFlatLl(a, last ? plan.lastShape : plan.shape);
      }
      break;
    }
    case GpuKernel::kFlatLines: launchFlatLines(a, plan.shape); break;
    case GpuKernel::kTreeLines: launchTreeLines(a, plan.shape); break;
    case GpuKernel::kTwoShot:
      launchTwoShot(a, plan.twoShot, plan.zeroCopy, algoName(plan.family));
      break;
    case GpuKernel::kNone:
    case GpuKernel::kCopy: break;  // run() handles them
  }
}

}  // namespace

void GpuAllReduce::run(AllReduceAlgo algo, const void* send, void* recv, size_t count,
                       DataType type, RedOp op, double premulScalar, void* stream) {
  CTRAN_CHECK(!res_.released(), ctran::InvalidUsage,
              "all_reduce on GPU buffers: the GPU state was already released");
  std::string why;
  CTRAN_CHECK(gpuSupports(type, op, &why), ctran::InvalidArgument, "all_reduce: ", why);
  if (count == 0) return;
  LaunchArgs a;
  a.send = send;
  a.recv = recv;
  a.op = op;
  a.premulScalar = premulScalar;
  a.window = window_->handle();
  a.layout = layout_;
  a.stream = stream;
  a.bound = res_.waitBound();
  GpuPlanInput in;
  in.family = algo;
  in.count = count;
  in.type = type;
  in.op = op;
  in.nranks = nranks_;
  in.inPlace = send == recv;
  in.linesAvailable = res_.linesAvailable();
  in.pdlCapable = res_.pdlCapable();
  in.layout = layout_;
  in.tuning = res_.tuning();
  in.coResidency = res_.coResidency();
  in.symmetricOutput = res_.symmetricOutputs(recv, count * dataTypeSize(type), a.peerRecv);
  GpuAllReducePlan plan = planGpuAllReduce(in);
  if (plan.kernel == GpuKernel::kNone) {
    CTRAN_CHECK(plan.why != PlanReason::kNotOnGpu, ctran::InvalidArgument,
                "all_reduce on GPU buffers: algorithm ", algoName(algo),
                " is not implemented on GPU (use auto, dda_flat, dda_tree or dda_large)");
    return;
  }
  // Launches on this communicator's GPU; the caller's current device is back on return.
  ctran::GpuDeviceGuard guard(res_.device(), "all_reduce on GPU buffers");
  if (plan.kernel == GpuKernel::kCopy) {
    CTRAN_GPU_CHECK(gpuMemcpyAsync(recv, send, plan.bytes, gpuMemcpyDeviceToDevice,
                                   static_cast<gpuStream_t>(stream)),
                    "all_reduce on one rank: copying ", plan.bytes, " bytes");
    return;
  }
  if (GraphRegistrations* graphOutputs = res_.graphOutputs()) {
    graphOutputs->closeReleased();
    // A captured output mapped on every rank is a symmetric output from here on, which changes
    // the plan (zero-copy two-shot): plan again with that fact.
    if (plan.registrationPays && graphOutputs->capturing(stream)) {
      drainHostWork_();  // the mapping is collective over the bootstrap, which host work owns
      if (graphOutputs->mapCapturedOutput(recv, plan.bytes, stream, a.peerRecv)) {
        in.symmetricOutput = true;
        plan = planGpuAllReduce(in);
      }
    }
  }
  CTRAN_INFO("all_reduce on GPU buffers: ", plan.describe());
  launchPlan(plan, a);
  zeroCopyCalls_ += plan.zeroCopy ? 1 : 0;
}

}  // namespace rcclx::gpu
