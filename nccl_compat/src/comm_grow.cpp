// Growing a communicator: ncclCommGetUniqueId and ncclCommGrow (nccl.h). The grown communicator
// is a new group joined through the root's id, the ranks of the old one keeping their numbers;
// the old ranks learn the id from the root over the old communicator.
#include <cstring>
#include <vector>

#include "api.hpp"
#include "bootstrap_id.hpp"
#include "create.hpp"
#include "ctran/bootstrap.hpp"
#include "ctran/config.hpp"
#include "rcclx/buffer.hpp"

namespace rcclx::nccl {
namespace {

/// What each old rank contributes to the agreement on the id: whether it holds it, and the id.
struct IdOffer {
  uint8_t holds = 0;
  uint8_t id[NCCL_UNIQUE_ID_BYTES] = {};
};

/// The id every rank of `parent` passes on: the one offer of the root, agreed by all; every
/// rank fails alike (InvalidArgument) when none or several ranks passed an id.
ncclUniqueId agreeOnId(CommUse& parent, const ncclUniqueId* mine) {
  const int n = parent->size();
  IdOffer offer;
  if (mine != nullptr) {
    offer.holds = 1;
    std::memcpy(offer.id, mine->internal, sizeof(offer.id));
  }
  std::vector<IdOffer> all(n);
  parent->allGather(
      rcclx::Buffer::host(&offer, sizeof(offer), DataType::kUint8),
      rcclx::Buffer::host(all.data(), all.size() * sizeof(IdOffer), DataType::kUint8));
  std::vector<int> holders;
  for (int r = 0; r < n; ++r)
    if (all[r].holds) holders.push_back(r);
  CTRAN_CHECK(holders.size() == 1, ctran::InvalidArgument, "uniqueId: exactly one rank of comm ",
              "(the one that called ncclCommGetUniqueId) passes it, the others NULL; ",
              holders.empty() ? std::string("none did")
                              : ctran::strCat(holders.size(), " did (ranks ", holders.front(),
                                              " and ", holders.back(), ")"));
  ncclUniqueId id;
  std::memcpy(id.internal, all[holders.front()].id, sizeof(id.internal));
  return id;
}

/// A grow on a rank of `comm`. Bad arguments and a failed agreement on the id leave the id
/// with the issuing rank (the grow can be called again with it); joining spends it, whether the
/// join succeeds or fails (a new rank never came: a timeout), so a failed grow leaves `comm`
/// ready for the next ncclCommGetUniqueId and grow, the failed group's records never joined
/// again.
ncclResult_t growExisting(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config) {
  CTRAN_CHECK(rank == -1, ctran::InvalidArgument, "rank ", rank,
              " must be -1 on a rank of comm (it keeps its rank)");
  ncclUniqueId id;
  CommOptions options;
  int keep = 0;
  {
    CommUse parent(comm, false);
    const int old = parent->size();
    CTRAN_CHECK(nRanks > old, ctran::InvalidArgument, "nRanks ", nRanks,
                " must be larger than comm's ", old, " ranks");
    if (uniqueId != nullptr) {
      const auto& issued = parent.handle().growId;
      CTRAN_CHECK(issued, ctran::InvalidArgument,
                  "uniqueId: this rank of comm holds no unspent grow id (each id of "
                  "ncclCommGetUniqueId serves one ncclCommGrow that reached the join, failed or "
                  "not: ask for a new one)");
      CTRAN_CHECK(
          std::memcmp(issued->internal, uniqueId->internal, sizeof(uniqueId->internal)) == 0,
          ctran::InvalidArgument,
          "uniqueId is not the id ncclCommGetUniqueId gave this rank of comm");
    }
    options = readConfig(config, optionsOf(parent.handle()));
    id = agreeOnId(parent, uniqueId);
    keep = parent->rank();
  }
  auto& issued = checkHandle(comm)->growId;
  try {
    // Joined now, or in the background (non-blocking, or at the group's end): a grow under way
    // keeps the store, which the failed join of the background releases itself.
    const ncclResult_t r = createComm(newcomm, options, fromId(id, nRanks, keep));
    if (uniqueId != nullptr) issued.reset();
    return r;
  } catch (...) {
    if (uniqueId != nullptr && issued) {
      releaseUnjoinedId(*issued);
      issued.reset();
    }
    throw;
  }
}

ncclResult_t growNew(int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                     ncclConfig_t* config) {
  CTRAN_CHECK(uniqueId != nullptr, ctran::InvalidArgument,
              "uniqueId is NULL, but a new rank (comm NULL) joins through it");
  CTRAN_CHECK(nRanks >= 2, ctran::InvalidArgument, "nRanks ", nRanks, " must be at least 2");
  CTRAN_CHECK(rank >= 0 && rank < nRanks, ctran::InvalidArgument, "rank ", rank,
              " is out of range for nRanks ", nRanks);
  CommOptions defaults;
  defaults.blocking = ctran::knob::NCCL_COMM_BLOCKING();
  const CommOptions options = readConfig(config, defaults);
  return createComm(newcomm, options, fromId(*uniqueId, nRanks, rank));
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  return boundary(
      "ncclCommGetUniqueId",
      [&] {
        CTRAN_CHECK(uniqueId != nullptr, ctran::InvalidArgument, "uniqueId is NULL");
        rcclx::nccl::CommUse use(comm, false);
        auto& issued = use.handle().growId;
        CTRAN_CHECK(!issued, ctran::InvalidUsage,
                    "this rank's previous id of comm has not been consumed by ncclCommGrow "
                    "yet: one grow at a time");
        // A fresh id whose store this process hosts (NCCL_COMM_ID names the job's first
        // communicator, not a grow).
        const ctran::UniqueId fresh = ctran::createUniqueId();
        static_assert(sizeof(fresh.bytes) == sizeof(uniqueId->internal));
        std::memcpy(uniqueId->internal, fresh.bytes.data(), sizeof(uniqueId->internal));
        issued = *uniqueId;
      },
      comm);
}

NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
         int rank, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config) {
  return boundary(
      "ncclCommGrow",
      [&] {
        CTRAN_CHECK(newcomm != nullptr, ctran::InvalidArgument, "newcomm is NULL");
        *newcomm = nullptr;
        if (comm != nullptr) {
          return rcclx::nccl::growExisting(comm, nRanks, uniqueId, rank, newcomm, config);
        }
        return rcclx::nccl::growNew(nRanks, uniqueId, rank, newcomm, config);
      },
      comm);
}
