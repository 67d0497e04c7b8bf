// Communicator lifecycle, splitting, submission, and allreduce dispatch.
#include "rcclx/communicator.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"
#include "host/cpu/reduce.hpp"
#include "ctran/checks.hpp"
#include "ctran/device.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "host/direct/direct_arena.hpp"
#include "host/executor.hpp"
#include "device/allreduce/gpu_allreduce.hpp"
#include "device/collectives/gpu_collectives.hpp"
#include "host/lp/low_precision.hpp"
#include "host/p2p/channels.hpp"
#include "config.hpp"
#include "tags.hpp"

namespace rcclx {

Communicator::Communicator(std::unique_ptr<ctran::Bootstrap> bootstrap, int device)
    : device_(device < 0 ? -1 : device) {
  declareKnobs();
  CTRAN_CHECK(bootstrap != nullptr, ctran::InvalidArgument, "communicator: bootstrap is null");
  // Read every knob before any collective step, so a bad value fails on every rank alike.
  const size_t p2pChunk = static_cast<size_t>(knob::RCCLX_P2P_CHUNK_BYTES());
  const int p2pSlots = static_cast<int>(knob::RCCLX_P2P_SLOTS());
  const bool ddaEnable = knob::RCCLX_DDA_ENABLE();
  const size_t ddaChunk = static_cast<size_t>(knob::RCCLX_DDA_CHUNK_BYTES());
  selectorConfigFromEnv();  // validates RCCLX_ALLREDUCE_ALGO and the thresholds
  lp::lpConfigFromEnv();    // validates the RCCL_LOW_PRECISION_* and RCCLX_LP_* knobs
  CTRAN_CHECK(ddaChunk >= 4096, ctran::InvalidArgument, "RCCLX_DDA_CHUNK_BYTES=", ddaChunk,
              " must be at least 4096");
  if (device_ >= 0) {
    // No usable GPU: every rank that asked for one fails alike, before any collective step.
    std::string why;
    const int ndev = ctran::device::count(&why);
    CTRAN_CHECK(ndev > 0, ctran::CudaError, "communicator: device ", device_, " requested but ",
                why);
    CTRAN_CHECK(device_ < ndev, ctran::InvalidArgument, "communicator: device ", device_,
                " is out of range for ", ndev, " GPUs on this host");
  }
  GpuSettings gpuSettings;
  gpuSettings.flatBytes = static_cast<size_t>(knob::RCCLX_GPU_FLAT_SLOT_BYTES());
  gpuSettings.stagingBytes = static_cast<size_t>(knob::RCCLX_GPU_STAGING_BYTES());
  gpuSettings.linesBytes = static_cast<size_t>(knob::RCCLX_GPU_LINES_BYTES());
  gpuSettings.channelBytes = static_cast<size_t>(knob::RCCLX_GPU_CHANNEL_BYTES());
  gpuSettings.tuning = knob::RCCLX_GPU_TUNING();
  gpuSettings.graphRegister = knob::RCCLX_GPU_GRAPH_REGISTER();
  // A bad RCCLX_GPU_TUNING fails before any collective step.
  gpu::Tuning().apply(gpuSettings.tuning);
  group_ = std::make_unique<ctran::PeerGroup>(std::move(bootstrap));
  rank_ = group_->rank();
  nranks_ = group_->nranks();
  channels_ = std::make_unique<Channels>(*group_, p2pChunk, p2pSlots);
  lp_ = std::make_unique<lp::LowPrecision>(*channels_, nranks_);
  bool allShm = true;
  for (int p = 0; p < nranks_; ++p) {
    auto k = group_->transportTo(p);
    allShm &= k == ctran::TransportKind::kSelf || k == ctran::TransportKind::kShm;
  }
  if (ddaEnable && allShm) arena_ = std::make_unique<DirectArena>(*group_, ddaChunk);
  executor_ = std::make_unique<Executor>();
  initGpu(gpuSettings);
  CTRAN_INFO("communicator: rank ", rank_, "/", nranks_, ", ", topology().nHosts, " host(s), ",
             arena_ ? "direct access (DDA available)" : "no direct access (ring only)");
}

Communicator::~Communicator() {
  if (!destroyed_) {
    try {
      destroy();
    } catch (const std::exception& e) {
      CTRAN_WARN("communicator destroy: ", e.what());
    }
  }
}

const ctran::Topology& Communicator::topology() const { return group_->topology(); }

void Communicator::initGpu(const GpuSettings& settings) {
  // The staging is allocated collectively: every rank must agree on whether there is a GPU.
  std::string mine = std::to_string(device_);
  auto all = group_->bootstrap().allGather(ctran::Bytes(mine.begin(), mine.end()));
  int withDevice = 0;
  std::string devices;
  for (int r = 0; r < nranks_; ++r) {
    std::string d(all[r].begin(), all[r].end());
    withDevice += d != "-1";
    devices += (r ? ", " : "") + d;
  }
  CTRAN_CHECK(withDevice == 0 || withDevice == nranks_, ctran::InvalidArgument,
              "communicator: ", withDevice, " of ", nranks_,
              " ranks passed a device (devices by rank: [", devices,
              "]); pass one on every rank or on none");
  if (device_ < 0) return;
  CTRAN_CHECK(topology().nHosts == 1, ctran::InvalidArgument,
              "communicator: GPU collectives need every rank on one host, but the ranks span ",
              topology().nHosts, " hosts");
  gpu_ = std::make_unique<gpu::GpuAllReduce>(*group_, device_, settings.flatBytes,
                                             settings.stagingBytes, settings.linesBytes,
                                             settings.tuning, settings.graphRegister);
  gpuColl_ = std::make_unique<gpu::GpuCollectives>(*group_, device_, settings.channelBytes);
  lp_->attachGpu(*group_, device_);
}

gpu::GpuCollectives& Communicator::gpuCollectives(const char* what) const {
  CTRAN_CHECK(gpuColl_ != nullptr, ctran::InvalidUsage, what,
              ": asked to run on a GPU (GPU buffers or stream=), but the communicator was created "
              "without a device (pass device= when creating it)");
  return *gpuColl_;
}

void Communicator::setGpuTuning(const std::string& spec) {
  checkUsable("set_gpu_tuning");
  CTRAN_CHECK(gpu_ != nullptr, ctran::InvalidUsage,
              "set_gpu_tuning: the communicator was created without a device");
  gpu_->setTuning(spec);
}

gpu::GpuAllReduce& Communicator::symmetricBuffers(const char* what) {
  checkUsable(what);
  CTRAN_CHECK(gpu_ != nullptr, ctran::InvalidUsage, what,
              ": symmetric buffers are GPU memory, but the communicator was created without a "
              "device (pass device= when creating it)");
  finalize();  // the bootstrap is the executor's while host work runs
  return *gpu_;
}

void* Communicator::allocSymmetric(size_t bytes) {
  return symmetricBuffers("alloc_symmetric").allocSymmetric(bytes);
}

void Communicator::registerSymmetric(void* ptr, size_t bytes) {
  symmetricBuffers("register_symmetric").registerSymmetric(ptr, bytes);
}

void Communicator::freeSymmetric(void* ptr) {
  symmetricBuffers("free_symmetric").freeSymmetric(ptr);
}

uint64_t Communicator::symmetricCalls() const { return gpu_ ? gpu_->zeroCopyCalls() : 0; }

size_t Communicator::graphRegistrations() { return gpu_ ? gpu_->graphRegistrations() : 0; }

void Communicator::checkUsable(const char* what) const {
  CTRAN_CHECK(!destroyed_, ctran::InvalidUsage, what,
              ": the communicator was already destroyed or aborted");
}

void Communicator::checkRoot(int root, const char* what) const {
  CTRAN_CHECK(root >= 0 && root < nranks_, ctran::InvalidArgument, what, ": root ", root,
              " is out of range for a communicator of ", nranks_, " ranks");
}

uint64_t Communicator::nextTag(int kind) { return makeTag(static_cast<OpKind>(kind), ++collSeq_); }

WorkPtr Communicator::submit(const std::string& what, std::function<void()> fn, bool async) {
  if (groupDepth_ > 0) {
    groupedCollectives_.push_back(std::move(fn));
    return nullptr;
  }
  return executor_->submit(what, std::move(fn), async);
}

Selection Communicator::selectAllReduce(size_t bytes, DataType type, RedOp op,
                                        const std::string& hint, bool gpu) const {
  SelectorInput in;
  in.bytes = bytes;
  in.type = type;
  in.op = op;
  in.nranks = nranks_;
  in.nHosts = topology().nHosts;
  in.directAccess = gpu ? gpu_ != nullptr : arena_ != nullptr;
  in.gpu = gpu;
  return rcclx::selectAllReduce(in, selectorConfigFromEnv(hint));
}

void Communicator::runAllReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                                const CallOptions& opts, uint64_t tag) {
  const size_t bytes = count * dataTypeSize(type);
  Selection sel = selectAllReduce(bytes, type, op, opts.algo);
  CTRAN_INFO(describeTag(tag), ": ", bytes, " bytes ", dataTypeName(type), " ", redOpName(op),
             " on ", nranks_, " ranks -> ", algoName(sel.algo), " (", sel.reason, ")");
  // Lower PREMUL_SUM (scale this rank's input first) and AVG (sum, then divide) to SUM.
  RedOp combine = op;
  if (op == RedOp::kPreMulSum) {
    cpu::scale(recv, send, count, type, opts.premulScalar);
    send = recv;
    combine = RedOp::kSum;
  } else if (op == RedOp::kAvg) {
    combine = RedOp::kSum;
  }
  switch (sel.algo) {
    case AllReduceAlgo::kDdaFlat:
      ddaFlatAllReduce(*arena_, send, recv, count, type, combine, tag);
      break;
    case AllReduceAlgo::kDdaTree:
      ddaTreeAllReduce(*arena_, send, recv, count, type, combine, tag);
      break;
    default: ringAllReduce(*channels_, send, recv, count, type, combine, tag); break;
  }
  if (op == RedOp::kAvg) cpu::divide(recv, count, type, nranks_);
}

void Communicator::runGpuAllReduce(const void* send, void* recv, size_t count, DataType type,
                                   RedOp op, const CallOptions& opts) {
  CTRAN_CHECK(gpu_ != nullptr, ctran::InvalidUsage, "all_reduce: the buffers are on a GPU but ",
              "the communicator was created without a device");
  const size_t bytes = count * dataTypeSize(type);
  Selection sel = selectAllReduce(bytes, type, op, opts.algo, true);
  CTRAN_INFO("all_reduce on GPU ", device_, ": ", bytes, " bytes ", dataTypeName(type), " ",
             redOpName(op), " on ", nranks_, " ranks -> ", algoName(sel.algo), " (", sel.reason,
             ")");
  if (gpu_->mayRegisterOutput(opts.stream)) finalize();  // the bootstrap is the executor's
  gpu_->run(sel.algo, send, recv, count, type, op, opts.premulScalar, opts.stream);
}

WorkPtr Communicator::allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                                const CallOptions& opts) {
  checkUsable("all_reduce");
  CTRAN_CHECK(count == 0 || (send && recv), ctran::InvalidArgument,
              "all_reduce: ", send ? "recvbuff" : "sendbuff", " is null (count ", count, ")");
  checkRedOp(static_cast<int>(op), type, "all_reduce");
  if (!opts.algo.empty()) parseAlgo(opts.algo, "all_reduce algo hint");
  if (opts.onDevice) {
    // Enqueued on the caller's stream now, also inside a group (it needs no host progress).
    if (auto plan = lp_->plan(lp::LpCollective::kAllReduce, "all_reduce on GPU",
                              count * dataTypeSize(type), type, op, opts.lowPrecision, true)) {
      gpuCollectives("all_reduce");  // a communicator without a device fails here, clearly
      lp_->allReduceOnDevice(*plan, send, recv, count, type, op, opts.stream);
      return nullptr;
    }
    runGpuAllReduce(send, recv, count, type, op, opts);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kAllReduce));
  if (auto plan = lp_->plan(lp::LpCollective::kAllReduce, describeTag(tag),
                            count * dataTypeSize(type), type, op, opts.lowPrecision)) {
    lp::LowPrecision* lp = lp_.get();
    return submit(
        describeTag(tag), [=] { lp->allReduce(*plan, send, recv, count, type, op, tag); },
        opts.async);
  }
  return submit(
      describeTag(tag), [=] { runAllReduce(send, recv, count, type, op, opts, tag); }, opts.async);
}

void Communicator::groupStart() {
  checkUsable("group_start");
  ++groupDepth_;
}

WorkPtr Communicator::groupEnd(bool async) {
  checkUsable("group_end");
  CTRAN_CHECK(groupDepth_ > 0, ctran::InvalidUsage, "group_end without a matching group_start");
  if (--groupDepth_ > 0) return nullptr;
  auto collectives = std::move(groupedCollectives_);
  auto p2p = std::make_shared<std::vector<P2POp>>(std::move(groupedP2P_));
  groupedCollectives_.clear();
  groupedP2P_.clear();
  if (!groupedDeviceP2P_.empty()) {
    // The group's device sends and receives run together (one kernel when each peer appears
    // once per direction), enqueued now on the stream of the first.
    std::vector<gpu::DeviceTransfer> ops;
    for (const P2POp& op : groupedDeviceP2P_)
      ops.push_back({op.isSend, op.peer, op.buffer, op.bytes});
    groupedDeviceP2P_.clear();
    gpuCollectives("group_end").sendRecv(ops, groupedDeviceStream_);
  }
  Channels* ch = channels_.get();
  return executor_->submit(
      "group",
      [collectives, p2p, ch] {
        for (const auto& fn : collectives) fn();
        if (!p2p->empty()) runP2PGroup(*ch, *p2p, makeTag(OpKind::kSendRecv, 0));
      },
      async);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  checkUsable("split");
  finalize();
  ctran::Bootstrap& boot = group_->bootstrap();
  std::string mine = ctran::strCat(color, " ", key);
  auto all = boot.allGather(ctran::Bytes(mine.begin(), mine.end()));
  uint64_t seq = splitSeq_++;
  if (color < 0) return nullptr;
  std::vector<std::pair<int, int>> members;  // (key, rank)
  for (int r = 0; r < nranks_; ++r) {
    std::string s(all[r].begin(), all[r].end());
    int c = 0, k = 0;
    CTRAN_ASSERT(std::sscanf(s.c_str(), "%d %d", &c, &k) == 2, "malformed split record");
    if (c == color) members.emplace_back(k, r);
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  for (auto& m : members) ranks.push_back(m.second);
  auto sub = boot.subgroup(ranks, ctran::strCat("split", seq, "/color", color));
  return std::make_unique<Communicator>(std::move(sub), device_);
}

std::unique_ptr<Communicator> Communicator::splitRanks(const std::vector<int>& ranks) {
  checkUsable("split_ranks");
  for (int r : ranks) {
    CTRAN_CHECK(r >= 0 && r < nranks_, ctran::InvalidArgument, "split_ranks: rank ", r,
                " is out of range for a communicator of ", nranks_, " ranks");
  }
  // Every rank must pass the same list: compare before building anything.
  finalize();
  ctran::Bootstrap& boot = group_->bootstrap();
  std::string mine;
  for (int r : ranks) mine += std::to_string(r) + ",";
  auto all = boot.allGather(ctran::Bytes(mine.begin(), mine.end()));
  for (int p = 0; p < nranks_; ++p) {
    std::string theirs(all[p].begin(), all[p].end());
    CTRAN_CHECK(theirs == mine, ctran::InvalidArgument, "split_ranks: rank ", p, " passed ranks [",
                theirs, "] but rank ", rank_, " passed [", mine, "]");
  }
  uint64_t seq = splitSeq_++;
  if (std::find(ranks.begin(), ranks.end(), rank_) == ranks.end()) return nullptr;
  auto sub = boot.subgroup(ranks, ctran::strCat("split", seq, "/list"));
  return std::make_unique<Communicator>(std::move(sub), device_);
}

void Communicator::finalize() {
  checkUsable("finalize");
  executor_->drain();
}

void Communicator::destroy() {
  checkUsable("destroy");
  executor_->stop();
  destroyed_ = true;
  if (gpu_) gpu_->destroy(true);
  gpu_.reset();
  if (gpuColl_) gpuColl_->destroy(true);
  gpuColl_.reset();
  if (lp_) lp_->destroyGpu(true);
  if (arena_) arena_->destroy();
  channels_->destroy();
  arena_.reset();
  channels_.reset();
  group_->destroy();
}

void Communicator::abort() {
  checkUsable("abort");
  destroyed_ = true;
  // Queued work may be waiting on peers that will never come: let it fail on its deadline
  // rather than free memory under it.
  executor_->stop();
  if (gpu_) gpu_->destroy(false);
  gpu_.reset();
  if (gpuColl_) gpuColl_->destroy(false);
  gpuColl_.reset();
  if (lp_) lp_->destroyGpu(false);
  if (arena_) arena_->destroy();
  channels_->destroy();
  arena_.reset();
  channels_.reset();
  group_->destroy();
}

}  // namespace rcclx
