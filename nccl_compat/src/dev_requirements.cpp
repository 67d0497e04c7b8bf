// The resource calls of NCCL's device API (nccl_device/*.h): what a device communicator would
// have to allocate for LSA, GIN and CFT barriers, LL all-to-all buffers and GIN scratch buffers.
// RCCLX makes no device communicators and has no GIN back-end, so every requirement call
// checks its arguments and refuses (ncclInvalidUsage) without writing its outputs, as
// ncclDevCommCreate would refuse the requirement. ncclLLA2ACalcSlots is arithmetic on its
// arguments alone and is answered.
#include <climits>

#include "api.hpp"
#include "comm.hpp"
#include "nccl_device.h"

namespace rcclx::nccl {
namespace {

/// Checks a count argument (named `name`) of a requirement call: not negative.
void checkCount(const char* name, int count) {
  CTRAN_CHECK(count >= 0, ctran::InvalidArgument, name, " ", count, " is negative");
}

/// Checks the two outputs every requirement call takes.
void checkOutputs(const void* outHandle, const void* outReq) {
  CTRAN_CHECK(outHandle != nullptr, ctran::InvalidArgument, "outHandle is NULL");
  CTRAN_CHECK(outReq != nullptr, ctran::InvalidArgument, "outReq is NULL");
}

/// The refusal of a resource that only a device communicator holds (`what`: "LSA barriers").
[[noreturn]] void refuseNoDevComm(const char* what) {
  throw ctran::InvalidUsage(ctran::strCat(
      what,
      " live in a device communicator, and RCCLX provides none (ncclCommQueryProperties "
      "reports deviceApiSupport = 0; use the host collectives)"));
}

constexpr const char* kNoGin =
    "RCCLX has no GIN back-end (ncclCommQueryProperties reports ginType NCCL_GIN_TYPE_NONE) "
    "and provides no device communicators";

/// Bytes of payload one 16-byte line of NCCL's LL format carries (the rest is the epoch).
constexpr long long kLlLinePayload = 8;

/// ncclLLA2ACalcSlots: maxElts elements of up to maxEltSize bytes, each taking
/// ceil(maxEltSize / 8) lines of a block's slots.
int llA2ASlots(int maxElts, int maxEltSize) {
  checkCount("maxElts", maxElts);
  checkCount("maxEltSize", maxEltSize);
  const long long lines = (maxEltSize + kLlLinePayload - 1) / kLlLinePayload;
  const long long slots = lines * maxElts;
  CTRAN_CHECK(slots <= INT_MAX, ctran::InvalidArgument, "maxElts ", maxElts, " elements of ",
              maxEltSize, " bytes need ", slots, " slots, more than an int holds");
  return static_cast<int>(slots);
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;

NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t /*team*/, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclLsaBarrierCreateRequirement", [&] {
    rcclx::nccl::checkCount("nBarriers", nBarriers);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    rcclx::nccl::refuseNoDevComm("LSA barriers");
  });
}

NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team,
         int nBarriers, ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t /*team*/, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclGinBarrierCreateRequirement", [&] {
    rcclx::nccl::readyHandle(comm);
    rcclx::nccl::checkCount("nBarriers", nBarriers);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    throw ctran::InvalidUsage(rcclx::nccl::kNoGin);
  });
}

// NCCL's headers declare this call but its library does not export it; RCCLX's does, so a
// program that names it links and is told why it cannot have CFT barriers.
NCCL_API(ncclResult_t, ncclCftBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclCftBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclCftBarrierCreateRequirement(ncclTeam_t /*team*/, int nBarriers,
                                             ncclCftBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclCftBarrierCreateRequirement", [&] {
    rcclx::nccl::checkCount("nBarriers", nBarriers);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    throw ctran::InvalidUsage(
        "CFT barriers need NCCL's collective fabric transport, which RCCLX does not have (every "
        "CFT team is the rank alone), and live in a device communicator, which RCCLX does not "
        "provide");
  });
}

NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  return rcclx::nccl::answer("ncclLLA2ACalcSlots", -1,
                             [&] { return rcclx::nccl::llA2ASlots(maxElts, maxEltSize); });
}

NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclLLA2ACreateRequirement", [&] {
    rcclx::nccl::checkCount("nBlocks", nBlocks);
    rcclx::nccl::checkCount("nSlots", nSlots);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    rcclx::nccl::refuseNoDevComm("LL all-to-all buffers");
  });
}

NCCL_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2,
         ncclGinOutboxHandle* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int /*size_log2*/,
                                            ncclGinOutboxHandle* outHandle,
                                            ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclGinOutboxCreateRequirement", [&] {
    rcclx::nccl::checkCount("nBlocks", nBlocks);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    throw ctran::InvalidUsage(
        ctran::strCat("GIN outboxes stage a device communicator's puts: ", rcclx::nccl::kNoGin));
  });
}

NCCL_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks,
         int size_log2, ncclGinInboxA2AHandle* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t /*peers*/, int nBlocks, int /*size_log2*/,
                                              ncclGinInboxA2AHandle* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  return boundary("ncclGinInboxA2ACreateRequirement", [&] {
    rcclx::nccl::checkCount("nBlocks", nBlocks);
    rcclx::nccl::checkOutputs(outHandle, outReq);
    throw ctran::InvalidUsage(ctran::strCat(
        "GIN all-to-all inboxes receive a device communicator's puts: ", rcclx::nccl::kNoGin));
  });
}
