// Creating communicators: ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitRankScalable,
// ncclCommInitAll, and the ways a handle gets its core communicator (create.hpp).
#include <cstring>
#include <string>
#include <vector>

#include "api.hpp"
#include "bootstrap_id.hpp"
#include "create.hpp"
#include "ctran/config.hpp"
#include "ctran/device.hpp"
#include "ctran/logging.hpp"
#include "gpu.hpp"
#include "groups.hpp"

namespace rcclx::nccl {
namespace {

void logReady(const ncclComm& c) {
  CTRAN_INFO("nccl_compat: RCCLX's libnccl (NCCL ", NCCL_MAJOR, ".", NCCL_MINOR, ".", NCCL_PATCH,
             " ABI) communicator ", c.name.empty() ? std::string("") : "'" + c.name + "' ", "rank ",
             c.rank, " of ", c.nranks, ", ",
             c.device >= 0 ? ctran::strCat("GPU ", c.device) : std::string("host memory"));
}

void adopt(ncclComm& h, std::unique_ptr<rcclx::Communicator> core) {
  h.rank = core->rank();
  h.nranks = core->size();
  h.device = core->device();
  h.failure = core->failureRecord();
  h.core = std::move(core);
  h.state.store(CommState::kReady, std::memory_order_release);
  logReady(h);
}

/// Builds the core communicator into `h`; on failure records why on the handle and rethrows.
void initialise(ncclComm& h, const CoreFactory& make) {
  try {
    adopt(h, make(h));
  } catch (const ctran::Error& e) {
    h.initResult = static_cast<ncclResult_t>(e.result());
    h.initMessage = e.what();
    h.state.store(CommState::kInitFailed, std::memory_order_release);
    throw;
  } catch (const std::exception& e) {
    h.initResult = ncclInternalError;
    h.initMessage = e.what();
    h.state.store(CommState::kInitFailed, std::memory_order_release);
    throw;
  }
}

/// The names of an initialisation's out-parameter and rank, as its nccl.h signature spells
/// them (ncclCommInitRankScalable's are newcomm and myrank), for its messages.
struct InitNames {
  const char* comm = "comm";
  const char* rank = "rank";
};

void checkRanks(int nranks, int rank, const InitNames& names) {
  CTRAN_CHECK(nranks >= 1, ctran::InvalidArgument, "nranks ", nranks, " must be at least 1");
  CTRAN_CHECK(rank >= 0 && rank < nranks, ctran::InvalidArgument, names.rank, " ", rank,
              " is out of range for nranks ", nranks);
}

/// Bad arguments fail before the id is joined and leave it usable for a corrected call, as in
/// NCCL; a failure while joining spends it (the failed bootstrap releases its store).
ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config, const InitNames& names = {}) {
  CTRAN_CHECK(comm != nullptr, ctran::InvalidArgument, names.comm, " is NULL");
  *comm = nullptr;
  checkRanks(nranks, rank, names);
  // NCCL_COMM_BLOCKING applies where the config (or its absence) leaves blocking unset.
  CommOptions defaults;
  defaults.blocking = ctran::knob::NCCL_COMM_BLOCKING();
  const CommOptions options = readConfig(config, defaults);
  return createComm(comm, options, fromId(id, nranks, rank));
}

}  // namespace

CoreFactory fromId(const ncclUniqueId& id, int nranks, int rank) {
  const int device = gpu::currentDevice();
  return [id, nranks, rank, device](ncclComm& h) {
    auto boot = joinGroup(id, rank, nranks, &h.keepAlive);
    return std::make_unique<rcclx::Communicator>(std::move(boot), rcclx::CommConfig{device, {}});
  };
}

CommOptions optionsOf(const ncclComm& comm) { return {comm.blocking, comm.name}; }

ncclComm* adoptComm(std::unique_ptr<rcclx::Communicator> core, const CommOptions& options) {
  auto h = std::make_unique<ncclComm>();
  h->blocking = options.blocking;
  h->name = options.name;
  adopt(*h, std::move(core));
  return h.release();
}

ncclResult_t createComm(ncclComm_t* out, const CommOptions& options, CoreFactory make) {
  auto owned = std::make_unique<ncclComm>();
  ncclComm* h = owned.get();
  h->blocking = options.blocking;
  h->name = options.name;
  if (groups::active()) {
    *out = owned.release();
    groups::deferInit(h, [h, make] { initialise(*h, make); });
    return ncclSuccess;
  }
  if (!options.blocking) {
    *out = owned.release();
    std::lock_guard<std::mutex> lock(h->initMu);
    h->initThread = std::thread([h, make] {
      try {
        initialise(*h, make);
      } catch (const std::exception& e) {
        CTRAN_WARN("non-blocking communicator initialisation failed: ", e.what());
      }
    });
    return ncclInProgress;
  }
  initialise(*h, make);  // throws: the handle is freed with `owned`, *out stays NULL
  *out = owned.release();
  return ncclSuccess;
}

}  // namespace rcclx::nccl

using rcclx::nccl::boundary;
namespace groups = rcclx::nccl::groups;

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return boundary("ncclCommInitRank", [&] {
    return groups::joiningGroup("ncclCommInitRank", [&] {
      return rcclx::nccl::initRank(comm, nranks, commId, rank, nullptr);
    });
  });
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return boundary("ncclCommInitRankConfig", [&] {
    return groups::joiningGroup("ncclCommInitRankConfig", [&] {
      return rcclx::nccl::initRank(comm, nranks, commId, rank, config);
    });
  });
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  return boundary("ncclCommInitRankScalable", [&] {
    return groups::joiningGroup("ncclCommInitRankScalable", [&] {
      CTRAN_CHECK(nId >= 1, ctran::InvalidArgument, "nId ", nId, " must be at least 1");
      CTRAN_CHECK(commIds != nullptr, ctran::InvalidArgument, "commIds is NULL");
      // One store serves every rank here; the further ids (NCCL spreads its bootstrap over
      // them) are not needed, and those this process made are released.
      for (int i = 1; i < nId; ++i) {
        if (std::memcmp(commIds[i].internal, commIds[0].internal, sizeof(commIds[0].internal)) != 0)
          rcclx::nccl::releaseUnjoinedId(commIds[i]);
      }
      return rcclx::nccl::initRank(newcomm, nranks, commIds[0], myrank, config,
                                   {"newcomm", "myrank"});
    });
  });
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  namespace nccl = rcclx::nccl;
  return boundary("ncclCommInitAll", [&] {
    CTRAN_CHECK(comm != nullptr, ctran::InvalidArgument, "comm is NULL");
    CTRAN_CHECK(ndev >= 1, ctran::InvalidArgument, "ndev ", ndev, " must be at least 1");
    const bool gpus = nccl::gpu::currentDevice() >= 0;
    const int visible = gpus ? ctran::device::count() : 0;
    std::vector<int> devices(ndev, -1);
    // Every device is checked before any rank starts: a rank that failed on its device would
    // leave the others of this call waiting for it until the bootstrap timeout.
    for (int i = 0; i < ndev && gpus; ++i) {
      devices[i] = devlist != nullptr ? devlist[i] : i;
      if (devices[i] >= 0 && devices[i] < visible) continue;
      const std::string which = devlist != nullptr
                                    ? ctran::strCat("devlist[", i, "]")
                                    : ctran::strCat("rank ", i, "'s device (devlist is NULL)");
      throw ctran::InvalidArgument(ctran::strCat(which, " is ", devices[i],
                                                 ", but this process sees ", visible,
                                                 visible == 1 ? " GPU" : " GPUs"));
    }
    // Always a fresh id of this process (NCCL_COMM_ID names a job-wide address, not this clique).
    const ctran::UniqueId id = ctran::createUniqueId();
    std::vector<std::unique_ptr<rcclx::Communicator>> cores(ndev);
    std::vector<std::function<void()>> tasks;
    for (int i = 0; i < ndev; ++i) {
      tasks.emplace_back([&, i] {
        auto boot = ctran::Bootstrap::fromUniqueId(id, i, ndev);
        cores[i] = std::make_unique<rcclx::Communicator>(std::move(boot),
                                                         rcclx::CommConfig{devices[i], {}});
      });
    }
    nccl::groups::runTogether(tasks);  // every rank or none: a failure leaves *comm untouched
    std::vector<ncclComm*> handles;
    for (int i = 0; i < ndev; ++i) handles.push_back(nccl::adoptComm(std::move(cores[i]), {}));
    nccl::formClique(handles);
    for (int i = 0; i < ndev; ++i) comm[i] = handles[i];
  });
}
