// Implementation of gpu_allreduce.hpp, and the host-side helpers of launch.hpp (layout,
// tuning, supported types). The kernels are in dda_flat.cu, flat_lines.cu, tree_lines.cu and
// two_shot.cu.
#include "device/allreduce/gpu_allreduce.hpp"

#include <cstdlib>
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
namespace {

size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

/// Launch sizes are whole warps (wavefronts on AMD); a build without GPU code runs none.
#ifdef RCCLX_HAVE_GPU
constexpr int kThreadsMultiple = ctran::kWarpSize;
#else
constexpr int kThreadsMultiple = 32;
#endif

}  // namespace

StagingLayout StagingLayout::of(int nranks, size_t flatBytes, size_t rawBytes, size_t linesBytes) {
  StagingLayout l;
  l.llSlotBytes = roundUp(flatBytes, kUnitBytes) / kUnitBytes * kLlBytesPerUnit;
  l.llOffset = 0;
  l.rawOffset = roundUp(static_cast<size_t>(nranks) * l.llSlotBytes, 256);
  l.rawBytes = roundUp(rawBytes, 256);
  l.linesOffset = l.rawOffset + l.rawBytes;
  l.linesMaxBytes = linesBytes;
  l.linesSlotBytes = linesBytes ? linesPerSegment(linesBytes, nranks) * kLineBytes : 0;
  l.halfBytes = l.linesOffset + 2 * static_cast<size_t>(nranks) * l.linesSlotBytes;
  return l;
}

LinesGrid linesGrid(size_t lines, const Tuning& tu) {
  const size_t minLines = tu.linesMinWarpLines > 0 ? tu.linesMinWarpLines : 1;
  const size_t warps = (lines + minLines - 1) / minLines;
  const size_t maxBlocks =
      static_cast<size_t>(tu.linesMaxBlocks < kMaxLineBlocks ? tu.linesMaxBlocks : kMaxLineBlocks);
  const size_t blocks = warps < 1 ? 1 : (warps < maxBlocks ? warps : maxBlocks);
  const size_t maxWarpsPerBlock = static_cast<size_t>(tu.linesThreads) / kThreadsMultiple;
  size_t perBlock = (warps + blocks - 1) / blocks;
  if (perBlock > maxWarpsPerBlock) perBlock = maxWarpsPerBlock;
  if (perBlock < 1) perBlock = 1;
  LinesGrid g;
  g.blocks = static_cast<int>(blocks);
  g.threads = static_cast<int>(perBlock) * kThreadsMultiple;
  return g;
}

void Tuning::apply(const std::string& spec) {
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    CTRAN_CHECK(eq != std::string::npos, ctran::InvalidArgument, "GPU tuning: '", item,
                "' is not name=value (in '", spec, "')");
    const std::string name = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    char* stop = nullptr;
    const long long v = std::strtoll(text.c_str(), &stop, 10);
    const bool zeroOk = name == "tree_lines_max_bytes" || name == "tree_symmetric_min_bytes" ||
                        name == "tree_stagger_bytes" || name == "pdl";
    CTRAN_CHECK(!text.empty() && *stop == '\0' && (v > 0 || (zeroOk && v == 0)),
                ctran::InvalidArgument, "GPU tuning: ", name, "=", text, " must be a ",
                zeroOk ? "non-negative" : "positive", " integer");
    auto threads = [&](int& field) {
      CTRAN_CHECK(v % kThreadsMultiple == 0 && v <= kMaxThreads, ctran::InvalidArgument,
                  "GPU tuning: ", name, "=", v, " must be a multiple of ", kThreadsMultiple,
                  " up to ", kMaxThreads);
      field = static_cast<int>(v);
    };
    auto blocks = [&](int& field, int limit = kMaxBlocks) {
      CTRAN_CHECK(v <= limit, ctran::InvalidArgument, "GPU tuning: ", name, "=", v, " exceeds the ",
                  limit, "-block limit");
      field = static_cast<int>(v);
    };
    if (name == "flat_threads")
      threads(flatThreads);
    else if (name == "flat_max_blocks")
      blocks(flatMaxBlocks);
    else if (name == "tree_threads")
      threads(treeThreads);
    else if (name == "tree_max_blocks")
      blocks(treeMaxBlocks);
    else if (name == "lines_threads")
      threads(linesThreads);
    else if (name == "lines_max_blocks")
      blocks(linesMaxBlocks, kMaxLineBlocks);
    else if (name == "tree_min_block_units")
      treeMinBlockUnits = static_cast<size_t>(v);
    else if (name == "lines_min_warp_lines")
      linesMinWarpLines = static_cast<size_t>(v);
    else if (name == "flat_lines_min_bytes")
      flatLinesMinBytes = static_cast<size_t>(v);
    else if (name == "tree_lines_max_bytes")
      treeLinesMaxBytes = static_cast<size_t>(v);
    else if (name == "tree_symmetric_min_bytes")
      treeSymmetricMinBytes = static_cast<size_t>(v);
    else if (name == "tree_stagger_bytes")
      treeStaggerBytes = static_cast<size_t>(v);
    else if (name == "large_threads")
      threads(largeThreads);
    else if (name == "large_blocks")
      blocks(largeBlocks);
    else if (name == "large_chunk_units")
      largeChunkUnits = static_cast<size_t>(v);
    else if (name == "pdl") {
      CTRAN_CHECK(v <= 1, ctran::InvalidArgument, "GPU tuning: pdl=", v, " must be 0 or 1");
      pdl = v == 1;
    } else
      throw ctran::InvalidArgument(
          ctran::strCat("GPU tuning: unknown name '", name,
                        "' (flat_threads, flat_max_blocks, flat_lines_min_bytes, tree_threads, "
                        "tree_max_blocks, tree_min_block_units, lines_threads, "
                        "lines_max_blocks, lines_min_warp_lines, "
                        "tree_lines_max_bytes, tree_symmetric_min_bytes, large_threads, "
                        "large_blocks, "
                        "large_chunk_units, tree_stagger_bytes, pdl)"));
  }
}

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

void GpuAllReduce::run(AllReduceAlgo algo, const void* send, void* recv, size_t count,
                       DataType type, RedOp op, double premulScalar, void* stream) {
  CTRAN_CHECK(window_ != nullptr, ctran::InvalidUsage,
              "all_reduce on GPU buffers: the GPU state was already released");
  std::string why;
  CTRAN_CHECK(gpuSupports(type, op, &why), ctran::InvalidArgument, "all_reduce: ", why);
  if (count == 0) return;
#ifdef RCCLX_HAVE_GPU
  // Launches on this communicator's GPU; the caller's current device is back on return.
  ctran::GpuDeviceGuard guard(device_, "all_reduce on GPU buffers");
  // Bitwise operators run on the bytes (kernelType), whatever the integer width.
  const DataType ktype = kernelType(type, op);
  count = count * dataTypeSize(type) / dataTypeSize(ktype);
  type = ktype;
  const size_t elem = dataTypeSize(type);
  if (nranks_ == 1 && op != RedOp::kPreMulSum) {  // PREMUL_SUM scales even on one rank
    if (send != recv) {
      CTRAN_GPU_CHECK(gpuMemcpyAsync(recv, send, count * elem, gpuMemcpyDeviceToDevice,
                                     static_cast<gpuStream_t>(stream)),
                      "all_reduce on one rank: copying ", count * elem, " bytes");
    }
    return;
  }
  LaunchArgs a;
  a.send = send;
  a.recv = recv;
  a.count = count;
  a.type = type;
  a.op = op;
  a.premulScalar = premulScalar;
  a.window = window_->handle();
  a.layout = layout_;
  a.tuning = tuning_;
  a.stream = stream;
  a.timeoutNs = timeoutNs_;
  a.pdl = tuning_.pdl && pdlCapable_;
  findSymmetricOutput(recv, count * elem, a);
  if (graphOutputs_) {
    graphOutputs_->closeReleased();
    const bool pays = algo == AllReduceAlgo::kDdaLarge ||
                      (algo == AllReduceAlgo::kDdaTree && treeZeroCopyPays(a));
    if (pays && !a.symmetricOutput())
      graphOutputs_->mapCapturedOutput(recv, count * elem, stream, a.peerRecv);
  }
  switch (algo) {
    case AllReduceAlgo::kDdaFlat: {
      if (flatLinesFit(a)) {  // one launch, whatever the size
        launchFlatLines(a);
        break;
      }
      // Pieces of whole 16-byte units, so every piece keeps the buffers' alignment.
      const size_t piece = flatCapacityBytes() / kUnitBytes * (kUnitBytes / elem);
      // Pieces launch plainly: overlapped launches let all of a call's pieces be scheduled at
      // once, each waiting on the one before (1.3-1.5x slower at 4-256 MiB, measured).
      if (count > piece) a.pdl = false;
      for (size_t done = 0; done < count; done += piece) {
        a.send = static_cast<const char*>(send) + done * elem;
        a.recv = static_cast<char*>(recv) + done * elem;
        a.count = count - done < piece ? count - done : piece;
        launchDdaFlat(a);
      }
      break;
    }
    case AllReduceAlgo::kDdaTree:
      launchDdaTree(a);
      zeroCopyCalls_ += treeZeroCopy(a) ? 1 : 0;
      break;
    case AllReduceAlgo::kDdaLarge:
      launchDdaLarge(a);
      zeroCopyCalls_ += a.symmetricOutput() ? 1 : 0;
      break;
    default:
      throw ctran::InvalidArgument(ctran::strCat("all_reduce on GPU buffers: algorithm ",
                                                 algoName(algo),
                                                 " is not implemented on GPU "
                                                 "(use auto, dda_flat, dda_tree or dda_large)"));
  }
#else
  (void)send, (void)recv, (void)stream, (void)algo, (void)premulScalar;
  throw ctran::CudaError("all_reduce on GPU buffers: this build has no GPU code");
#endif
}

}  // namespace rcclx::gpu
