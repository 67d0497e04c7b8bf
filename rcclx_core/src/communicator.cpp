// Communicator: creation (the configuration snapshot, the transports, both back-ends),
// groups, splitting, symmetric buffers, the one-sided calls on GPU memory and the one release
// path of destroy() and abort().
// The collectives are front_door.cpp's.
#include "rcclx/communicator.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "comm_impl.hpp"
#include "config.hpp"
#include "ctran/checks.hpp"
#include "ctran/device.hpp"
#include "ctran/logging.hpp"
#include "ctran/window.hpp"
#include "testing_access.hpp"

namespace rcclx {

Communicator::Communicator(std::unique_ptr<ctran::Bootstrap> bootstrap, const CommConfig& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  CTRAN_CHECK(bootstrap != nullptr, ctran::InvalidArgument, "communicator: bootstrap is null");
  // Every knob is read and checked before any collective step, so a bad value fails on every
  // rank alike.
  c.settings = Settings::read(config);
  c.device = config.device < 0 ? -1 : config.device;
  if (c.device >= 0) {
    // No usable GPU: every rank that asked for one fails alike, before any collective step.
    std::string why;
    const int ndev = ctran::device::count(&why);
    CTRAN_CHECK(ndev > 0, ctran::CudaError, "communicator: device ", c.device, " requested but ",
                why);
    CTRAN_CHECK(c.device < ndev, ctran::InvalidArgument, "communicator: device ", c.device,
                " is out of range for ", ndev, " GPUs on this host");
  }
  c.group = std::make_unique<ctran::PeerGroup>(std::move(bootstrap));
  c.rank = c.group->rank();
  c.nranks = c.group->nranks();
  c.host = std::make_unique<HostBackend>(*c.group, c.settings);

  // The device staging is allocated collectively: every rank must agree on whether there is a
  // GPU.
  const std::string mine = std::to_string(c.device);
  const auto all = c.group->bootstrap().allGather(ctran::Bytes(mine.begin(), mine.end()));
  int withDevice = 0;
  std::string devices;
  for (int r = 0; r < c.nranks; ++r) {
    const std::string d(all[r].begin(), all[r].end());
    withDevice += d != "-1";
    devices += (r ? ", " : "") + d;
  }
  CTRAN_CHECK(withDevice == 0 || withDevice == c.nranks, ctran::InvalidArgument,
              "communicator: ", withDevice, " of ", c.nranks,
              " ranks passed a device (devices by rank: [", devices,
              "]); pass one on every rank or on none");
  if (c.device >= 0) {
    c.gpu = DeviceBackend::create(*c.group, c.settings, c.device, *c.host);
  }
  CTRAN_INFO(
      "communicator: rank ", c.rank, "/", c.nranks, ", ", topology().nHosts, " host(s), ",
      c.host->directAccess() ? "direct access (DDA available)" : "no direct access (ring only)",
      c.gpu ? ctran::strCat(", GPU ", c.device,
                            topology().nHosts > 1 ? " (staged through pinned host memory)" : "")
            : std::string());
}

Communicator::~Communicator() {
  if (impl_ && !impl_->destroyed) {
    try {
      destroy();
    } catch (const std::exception& e) {
      CTRAN_WARN("communicator destroy: ", e.what());
    }
  }
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->nranks; }
const ctran::Topology& Communicator::topology() const { return impl_->group->topology(); }
bool Communicator::directAccess() const { return impl_->host && impl_->host->directAccess(); }
int Communicator::device() const { return impl_->device; }
bool Communicator::destroyed() const { return impl_->destroyed; }
void Communicator::checkFailed() {
  if (impl_->destroyed) return;
  if (impl_->gpu) impl_->gpu->reportKernelTimeout();
  impl_->group->checkFailed();
}
std::shared_ptr<ctran::GroupFailure> Communicator::failureRecord() const {
  return impl_->group->failureRecord();
}
bool Communicator::inGroup() const { return impl_->groupDepth > 0; }

namespace {

void checkUsable(const Communicator::Impl& c, const char* what) {
  CTRAN_CHECK(!c.destroyed, ctran::InvalidUsage, what,
              ": the communicator was already destroyed or aborted");
}

/// For the symmetric-buffer calls (`what`): the device back-end, with host work drained (they
/// use the bootstrap).
DeviceBackend& symmetricBuffers(Communicator::Impl& c, const char* what) {
  checkUsable(c, what);
  CTRAN_CHECK(c.gpu != nullptr, ctran::InvalidUsage, what,
              ": symmetric buffers are GPU memory, but the communicator was created without a "
              "device (pass device= when creating it)");
  c.host->finalize();
  return *c.gpu;
}

/// For the one-sided calls on GPU memory (`what`): the device back-end.
DeviceBackend& oneSided(Communicator::Impl& c, const char* what) {
  checkUsable(c, what);
  CTRAN_CHECK(c.gpu != nullptr, ctran::InvalidUsage, what,
              ": one-sided calls on GPU memory need a communicator created with a device (pass "
              "device= when creating it)");
  return *c.gpu;
}

/// `name` in upper case: hint names are knob names in any case (Settings::read).
std::string upperCase(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  return name;
}

}  // namespace

void Communicator::groupStart() {
  checkUsable(*impl_, "group_start");
  if (impl_->groupDepth++ == 0) impl_->host->groupStart();
}

WorkPtr Communicator::groupEnd(bool async) {
  Impl& c = *impl_;
  checkUsable(c, "group_end");
  CTRAN_CHECK(c.groupDepth > 0, ctran::InvalidUsage, "group_end without a matching group_start");
  if (--c.groupDepth > 0) return nullptr;
  auto deviceCalls = std::move(c.groupedDeviceCalls);
  auto deviceP2P = std::move(c.groupedDeviceP2P);
  c.groupedDeviceCalls.clear();
  c.groupedDeviceP2P.clear();
  try {
    for (const auto& enqueue : deviceCalls) enqueue();
    // The group's device sends and receives run together (one kernel when each peer appears
    // once per direction), enqueued now on the stream of the first.
    if (!deviceP2P.empty()) c.gpu->sendRecv(deviceP2P, c.groupedDeviceStream);
  } catch (...) {
    c.host->groupCancel();  // the group failed: its host calls do not run either
    throw;
  }
  return c.host->groupEnd(async);
}

void Communicator::groupCancel() {
  Impl& c = *impl_;
  if (c.groupDepth == 0 || c.destroyed) return;
  c.groupDepth = 0;
  c.groupedDeviceCalls.clear();
  c.groupedDeviceP2P.clear();
  c.host->groupCancel();
}

void* Communicator::allocSymmetric(size_t bytes) {
  return symmetricBuffers(*impl_, "alloc_symmetric").allocSymmetric(bytes);
}

void Communicator::registerSymmetric(void* ptr, size_t bytes) {
  symmetricBuffers(*impl_, "register_symmetric").registerSymmetric(ptr, bytes);
}

void Communicator::freeSymmetric(void* ptr) {
  symmetricBuffers(*impl_, "free_symmetric").freeSymmetric(ptr);
}

void Communicator::openDeviceSignals() {
  DeviceBackend& gpu = oneSided(*impl_, "open_device_signals");
  impl_->host->finalize();  // host work uses the bootstrap, which opening the signals uses too
  gpu.openSignals();
}

void Communicator::devicePutSignal(int peer, const void* buffer, size_t offset, const void* src,
                                   size_t bytes, void* stream) {
  oneSided(*impl_, "device_put_signal").putSignal(peer, buffer, offset, src, bytes, stream);
}

void Communicator::deviceSignal(int peer, void* stream) {
  oneSided(*impl_, "device_signal").signal(peer, stream);
}

void Communicator::deviceWaitSignals(const std::vector<uint64_t>& counts, void* stream) {
  oneSided(*impl_, "device_wait_signals").waitSignals(counts, stream);
}

size_t Communicator::gpuMemoryBytes() const {
  return impl_->gpu ? impl_->gpu->allocatedBytes() : 0;
}

std::shared_ptr<ctran::Window> Communicator::createWindow(size_t bytes, int numSignals) {
  checkUsable(*impl_, "create_window");
  return impl_->group->createWindow(bytes, numSignals);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key,
                                                  const std::map<std::string, std::string>& hints) {
  Impl& c = *impl_;
  checkUsable(c, "split");
  finalize();
  ctran::Bootstrap& boot = c.group->bootstrap();
  const std::string mine = ctran::strCat(color, " ", key);
  auto all = boot.allGather(ctran::Bytes(mine.begin(), mine.end()));
  const uint64_t seq = c.splitSeq++;
  if (color < 0) return nullptr;
  std::vector<std::pair<int, int>> members;  // (key, rank)
  for (int r = 0; r < c.nranks; ++r) {
    const std::string s(all[r].begin(), all[r].end());
    int cl = 0, k = 0;
    CTRAN_ASSERT(std::sscanf(s.c_str(), "%d %d", &cl, &k) == 2, "malformed split record");
    if (cl == color) members.emplace_back(k, r);
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  for (auto& m : members) ranks.push_back(m.second);
  auto sub = boot.subgroup(ranks, ctran::strCat("split", seq, "/color", color));
  CommConfig config{c.device, {c.settings.hints.begin(), c.settings.hints.end()}};
  for (const auto& [name, value] : hints) config.hints[upperCase(name)] = value;
  return std::make_unique<Communicator>(std::move(sub), config);
}

std::unique_ptr<Communicator> Communicator::splitRanks(const std::vector<int>& ranks) {
  Impl& c = *impl_;
  checkUsable(c, "split_ranks");
  for (int r : ranks) {
    CTRAN_CHECK(r >= 0 && r < c.nranks, ctran::InvalidArgument, "split_ranks: rank ", r,
                " is out of range for a communicator of ", c.nranks, " ranks");
  }
  // Every rank must pass the same list: compare before building anything.
  finalize();
  ctran::Bootstrap& boot = c.group->bootstrap();
  std::string mine;
  for (int r : ranks) mine += std::to_string(r) + ",";
  auto all = boot.allGather(ctran::Bytes(mine.begin(), mine.end()));
  for (int p = 0; p < c.nranks; ++p) {
    const std::string theirs(all[p].begin(), all[p].end());
    CTRAN_CHECK(theirs == mine, ctran::InvalidArgument, "split_ranks: rank ", p, " passed ranks [",
                theirs, "] but rank ", c.rank, " passed [", mine, "]");
  }
  const uint64_t seq = c.splitSeq++;
  if (std::find(ranks.begin(), ranks.end(), c.rank) == ranks.end()) return nullptr;
  auto sub = boot.subgroup(ranks, ctran::strCat("split", seq, "/list"));
  CommConfig config{c.device, {c.settings.hints.begin(), c.settings.hints.end()}};
  return std::make_unique<Communicator>(std::move(sub), config);
}

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& ranks) {
  Impl& c = *impl_;
  checkUsable(c, "shrink");
  for (int r : ranks) {
    CTRAN_CHECK(r >= 0 && r < c.nranks, ctran::InvalidArgument, "shrink: rank ", r,
                " is out of range for a communicator of ", c.nranks, " ranks");
  }
  finalize();
  // The tag agrees among the listed ranks as long as they made the same splits before.
  const uint64_t seq = c.splitSeq++;
  if (std::find(ranks.begin(), ranks.end(), c.rank) == ranks.end()) return nullptr;
  // Ranks passing different lists would otherwise meet in one sub-group under the same tag,
  // each taking its own list's order for the truth.
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
  const std::string tag = ctran::strCat("shrink", seq);
  c.group->bootstrap().agreeAmong(ranks, tag, list, "shrink: the lists of remaining ranks");
  auto sub = c.group->bootstrap().subgroup(ranks, tag);
  CommConfig config{c.device, {c.settings.hints.begin(), c.settings.hints.end()}};
  return std::make_unique<Communicator>(std::move(sub), config);
}

void Communicator::finalize() {
  checkUsable(*impl_, "finalize");
  impl_->host->finalize();
}

void Communicator::Impl::release(bool collective) {
  destroyed = true;
  // An abort fails this rank's pending work and every peer's current wait at once, as a dead
  // rank would; a destroy after a failure releases without waiting on peers that left.
  if (!collective) group->reportFailure(rank, "its communicator was aborted");
  if (group->failure()) collective = false;
  // After abort, queued host work may be waiting on peers that will never come: it fails on
  // its deadline rather than having memory freed under it (stop() waits for it).
  host->stop();
  if (gpu) gpu->destroy(collective);
  gpu.reset();
  host->destroy();
  if (collective) group->closeBootstrap();
  group->destroy();
}

void Communicator::destroy() {
  checkUsable(*impl_, "destroy");
  impl_->release(true);
}

void Communicator::abort() {
  checkUsable(*impl_, "abort");
  impl_->release(false);
}

// Test and tool hooks (testing_access.hpp).

std::pair<AllReduceAlgo, std::string> CommunicatorTesting::selectAllReduce(const Communicator& comm,
                                                                           size_t bytes,
                                                                           DataType type, RedOp op,
                                                                           const std::string& algo,
                                                                           bool gpu) {
  const Communicator::Impl& c = *comm.impl_;
  const SelectorConfig cfg = withCallHint(c.settings.selector, algo);
  if (gpu) {
    if (c.gpu == nullptr) {
      SelectorInput in;
      in.bytes = bytes;
      in.type = type;
      in.op = op;
      in.nranks = c.nranks;
      in.nHosts = comm.topology().nHosts;
      in.directAccess = false;
      in.gpu = true;
      rcclx::selectAllReduce(in, cfg);  // throws: no GPU staging
    }
    const Selection s = c.gpu->select(bytes, type, op, cfg);
    return {s.algo, s.reason()};
  }
  const Selection s = c.host->select(bytes, type, op, cfg);
  return {s.algo, s.reason()};
}

std::pair<std::string, std::string> CommunicatorTesting::selectCollective(
    const Communicator& comm, const std::string& collective, size_t bytes, int root) {
  for (auto c : {CostCollective::kAllGather, CostCollective::kReduceScatter,
                 CostCollective::kBroadcast, CostCollective::kReduce}) {
    if (collective == costCollectiveName(c)) {
      CTRAN_CHECK(root >= 0 && root < comm.size(), ctran::InvalidArgument, "selection: root ", root,
                  " is out of range for ", comm.size(), " ranks");
      const CollectiveSelection s = comm.impl_->host->selectCollective(c, bytes, root);
      return {collectiveAlgoName(s.algo), s.reason()};
    }
  }
  throw ctran::InvalidArgument(ctran::strCat("selection: unknown collective '", collective,
                                             "' (all_gather, reduce_scatter, broadcast or "
                                             "reduce)"));
}

uint64_t CommunicatorTesting::symmetricCalls(const Communicator& comm) {
  return comm.impl_->gpu ? comm.impl_->gpu->symmetricCalls() : 0;
}

size_t CommunicatorTesting::graphRegistrations(Communicator& comm) {
  return comm.impl_->gpu ? comm.impl_->gpu->graphRegistrations() : 0;
}

void CommunicatorTesting::setGpuTuning(Communicator& comm, const std::string& spec) {
  checkUsable(*comm.impl_, "set_gpu_tuning");
  CTRAN_CHECK(comm.impl_->gpu != nullptr, ctran::InvalidUsage,
              "set_gpu_tuning: the communicator was created without a device");
  comm.impl_->gpu->setTuning(spec);
}

std::string CommunicatorTesting::gpuSharing(const Communicator& comm) {
  return comm.impl_->gpu ? comm.impl_->gpu->gpuSharing() : "";
}

}  // namespace rcclx
