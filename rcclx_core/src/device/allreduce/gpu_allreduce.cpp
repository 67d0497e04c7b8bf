// Implementation of gpu_allreduce.hpp, and gpuSupports (launch.hpp). The plan is plan.cpp, the
// tuning and layout tuning.cpp, the kernels allreduce_{flat_ll,flat_lines,tree_lines,two_shot}.cu.
#include "device/allreduce/gpu_allreduce.hpp"

#include <utility>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/device_window.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"

#ifdef RCCLX_HAVE_GPU
#include "ctran/gpu_runtime.hpp"
#endif

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

GpuAllReduce::GpuAllReduce(ctran::PeerGroup& group, int device, size_t flatBytes, size_t rawBytes,
                           size_t linesBytes, const std::string& tuning, bool graphRegister)
    : group_(&group), device_(device), nranks_(group.nranks()) {
  tuning_.apply(tuning);
  layout_ = StagingLayout::of(nranks_, flatBytes, rawBytes, linesBytes);
  const int64_t timeoutMs = ctran::knob::RCCLX_TIMEOUT_MS();
  timeoutNs_ = static_cast<uint64_t>(timeoutMs > 0 ? timeoutMs : 1) * 1000000ull;
  window_ = std::make_unique<ctran::DeviceWindow>(group, device, layout_.totalBytes(), kNumSignals);
  if (graphRegister) graphOutputs_ = std::make_unique<GraphRegistrations>(group, device);
#if defined(RCCLX_HAVE_GPU) && !RCCLX_GPU_HIP
  int major = 0;
  CTRAN_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                  "reading the compute capability of GPU ", device);
  pdlCapable_ = major >= 9;
  // Whole-line arrival (lines.cuh) is an NVLink property; AMD keeps the LL and two-shot kernels.
  linesAvailable_ = true;
#endif
}

GpuAllReduce::~GpuAllReduce() = default;

void GpuAllReduce::setTuning(const std::string& spec) {
  Tuning t;
  t.apply(spec);
  tuning_ = t;
}

void GpuAllReduce::destroy(bool collective) {
  for (auto& w : symmetric_) {
    if (!w->destroyed()) w->destroy(collective);
  }
  symmetric_.clear();
  if (window_ && !window_->destroyed()) window_->destroy(collective);
  window_.reset();
  // After the windows' destroy waited for this GPU (collective): no kernel stores through them.
  if (graphOutputs_) graphOutputs_->destroy();
  graphOutputs_.reset();
}

void GpuAllReduce::agreeOnSymmetric(const char* what, size_t bytes,
                                    const std::string& problem) const {
  CTRAN_CHECK(window_ != nullptr, ctran::InvalidUsage, what,
              ": the GPU state was already released");
  // Every rank's buffer has the same size, so an offset valid here is valid on every peer; a
  // rank's own problem travels with its size, so every rank fails together.
  const std::string mine = problem.empty() ? std::to_string(bytes) : "!" + problem;
  const auto all = group_->bootstrap().allGather(ctran::Bytes(mine.begin(), mine.end()));
  for (int r = 0; r < nranks_; ++r) {
    const std::string theirs(all[r].begin(), all[r].end());
    CTRAN_CHECK(theirs.empty() || theirs[0] != '!', ctran::InvalidArgument, what, ": rank ", r,
                ": ", theirs.substr(1));
    CTRAN_CHECK(theirs == mine, ctran::InvalidArgument, what, ": rank ", r, " passed nbytes ",
                theirs, " but rank ", group_->rank(), " passed ", mine,
                " (every rank must pass the same size)");
  }
}

void* GpuAllReduce::allocSymmetric(size_t bytes) {
  agreeOnSymmetric("alloc_symmetric", bytes,
                   bytes > 0 ? "" : ctran::strCat("nbytes ", bytes, " must be positive"));
  symmetric_.push_back(std::make_unique<ctran::DeviceWindow>(*group_, device_, bytes, 0));
  const ctran::DeviceWindowHandle& h = symmetric_.back()->handle();
  return h.data[h.rank];
}

void GpuAllReduce::registerSymmetric(void* ptr, size_t bytes) {
  std::string problem;
  if (bytes == 0) problem = "nbytes 0 must be positive";
  const char* begin = static_cast<const char*>(ptr);
  for (const auto& w : symmetric_) {
    const ctran::DeviceWindowHandle& h = w->handle();
    const char* theirs = h.data[h.rank];
    if (problem.empty() && begin < theirs + h.dataBytes && theirs < begin + bytes) {
      problem = ctran::strCat(bytes, " bytes at ", ptr, " overlap the symmetric buffer of ",
                              h.dataBytes, " bytes at ", static_cast<const void*>(theirs),
                              " (deregister or free it first)");
    }
  }
  agreeOnSymmetric("register_symmetric", bytes, problem);
  symmetric_.push_back(std::make_unique<ctran::DeviceWindow>(
      *group_, device_, ctran::DeviceWindow::UserMemory{ptr, bytes}));
}

void GpuAllReduce::freeSymmetric(void* ptr) {
  for (auto it = symmetric_.begin(); it != symmetric_.end(); ++it) {
    const ctran::DeviceWindowHandle& h = (*it)->handle();
    if (h.data[h.rank] != ptr) continue;
    (*it)->destroy(true);
    symmetric_.erase(it);
    return;
  }
  throw ctran::InvalidArgument(
      ctran::strCat("free_symmetric: ", ptr, " is not a symmetric buffer of this communicator (",
                    symmetric_.size(), " allocated or registered and not yet released)"));
}

void GpuAllReduce::findSymmetricOutput(const void* recv, size_t bytes, LaunchArgs& args) const {
  const char* out = static_cast<const char*>(recv);
  for (const auto& w : symmetric_) {
    const ctran::DeviceWindowHandle& h = w->handle();
    const char* mine = h.data[h.rank];
    if (out < mine || out >= mine + h.dataBytes) continue;
    const size_t offset = static_cast<size_t>(out - mine);
    if (bytes > h.dataBytes - offset) return;  // runs past the buffer: staged as usual
    char* outputs[ctran::kMaxDeviceRanks] = {};
    for (int r = 0; r < h.nranks; ++r) outputs[r] = h.data[r] + offset;
    // Registered tensors may sit differently modulo 16 (rank 0 registers t, rank 1 t[1:]):
    // then every rank stays staged.
    if (!outputsAlike(outputs, h.nranks)) return;
    for (int r = 0; r < h.nranks; ++r) args.peerRecv[r] = outputs[r];
    return;
  }
}

#ifdef RCCLX_HAVE_GPU
namespace {

/// Launches what `plan` says, with `a` holding the call (its count and type the caller's).
void launchPlan(const GpuAllReducePlan& plan, LaunchArgs& a) {
  a.count = plan.count;
  a.type = plan.type;
  a.pdl = plan.pdl;
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
#endif

void GpuAllReduce::run(AllReduceAlgo algo, const void* send, void* recv, size_t count,
                       DataType type, RedOp op, double premulScalar, void* stream) {
  CTRAN_CHECK(window_ != nullptr, ctran::InvalidUsage,
              "all_reduce on GPU buffers: the GPU state was already released");
  std::string why;
  CTRAN_CHECK(gpuSupports(type, op, &why), ctran::InvalidArgument, "all_reduce: ", why);
  if (count == 0) return;
#ifdef RCCLX_HAVE_GPU
  LaunchArgs a;
  a.send = send;
  a.recv = recv;
  a.op = op;
  a.premulScalar = premulScalar;
  a.window = window_->handle();
  a.layout = layout_;
  a.stream = stream;
  a.timeoutNs = timeoutNs_;
  GpuPlanInput in;
  in.family = algo;
  in.count = count;
  in.type = type;
  in.op = op;
  in.nranks = nranks_;
  in.inPlace = send == recv;
  in.linesAvailable = linesAvailable_;
  in.pdlCapable = pdlCapable_;
  in.layout = layout_;
  in.tuning = tuning_;
  findSymmetricOutput(recv, count * dataTypeSize(type), a);
  in.symmetricOutput = a.symmetricOutput();
  GpuAllReducePlan plan = planGpuAllReduce(in);
  if (plan.kernel == GpuKernel::kNone) {
    CTRAN_CHECK(plan.why != PlanReason::kNotOnGpu, ctran::InvalidArgument,
                "all_reduce on GPU buffers: algorithm ", algoName(algo),
                " is not implemented on GPU (use auto, dda_flat, dda_tree or dda_large)");
    return;
  }
  // Launches on this communicator's GPU; the caller's current device is back on return.
  ctran::GpuDeviceGuard guard(device_, "all_reduce on GPU buffers");
  if (plan.kernel == GpuKernel::kCopy) {
    CTRAN_GPU_CHECK(gpuMemcpyAsync(recv, send, plan.bytes, gpuMemcpyDeviceToDevice,
                                   static_cast<gpuStream_t>(stream)),
                    "all_reduce on one rank: copying ", plan.bytes, " bytes");
    return;
  }
  if (graphOutputs_) {
    graphOutputs_->closeReleased();
    // A captured output mapped on every rank is a symmetric output from here on, which changes
    // the plan (zero-copy two-shot): plan again with that fact.
    if (plan.registrationPays &&
        graphOutputs_->mapCapturedOutput(recv, plan.bytes, stream, a.peerRecv)) {
      in.symmetricOutput = true;
      plan = planGpuAllReduce(in);
    }
  }
  CTRAN_INFO("all_reduce on GPU buffers: ", plan.describe());
  launchPlan(plan, a);
  zeroCopyCalls_ += plan.zeroCopy ? 1 : 0;
#else
  (void)send, (void)recv, (void)stream, (void)algo, (void)premulScalar;
  throw ctran::CudaError("all_reduce on GPU buffers: this build has no GPU code");
#endif
}

}  // namespace rcclx::gpu
