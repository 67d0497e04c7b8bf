// NCCL's device API on the host (nccl_device.h): ncclCommQueryProperties, and ncclDevCommCreate
// / ncclDevCommDestroy, which refuse: RCCLX makes no device communicators (no kernel can reach
// a peer through a window), and says which of the caller's requirements it cannot meet. Also
// the host queries of window addresses (this rank's own memory is the one answer RCCLX has).
// The resource-requirement calls are in dev_requirements.cpp.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "api.hpp"
#include "comm.hpp"
#include "nccl_device.h"
#include "windows.hpp"

namespace rcclx::nccl {
namespace {

/// The leading size / magic / version of NCCL's versioned structs.
constexpr size_t kVersionedHeader = sizeof(size_t) + 2 * sizeof(unsigned int);

/// How many bytes of the caller's versioned struct `s` (of our type Struct) this library may
/// read or write: its size, capped at ours. InvalidArgument naming `name` for a struct without
/// NCCL_API_MAGIC or one too short to hold any field.
template <typename Struct>
size_t versionedBytes(const Struct& s, const char* name, const char* initializer) {
  CTRAN_CHECK(s.magic == NCCL_API_MAGIC, ctran::InvalidArgument, name, "->magic 0x", std::hex,
              s.magic, std::dec, " is not NCCL_API_MAGIC: initialise it with ", initializer);
  CTRAN_CHECK(s.size > kVersionedHeader, ctran::InvalidArgument, name, "->size ", s.size,
              " holds no field: initialise it with ", initializer);
  return std::min(s.size, sizeof(Struct));
}

/// The caller's requirements as this header lays them out, read no further than their size.
/// A struct cleared to zero (code written for NCCL 2.28, which had no initializer) is read
/// with this header's layout.
ncclDevCommRequirements readRequirements(const ncclDevCommRequirements& reqs) {
  ncclDevCommRequirements copy{};
  const bool zeroed = reqs.size == 0 && reqs.magic == 0 && reqs.version == 0;
  const size_t bytes =
      zeroed ? sizeof copy : versionedBytes(reqs, "reqs", "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER");
  std::memcpy(static_cast<void*>(&copy), &reqs, bytes);
  return copy;
}

/// What `r` asks for, one phrase each naming the field, its value and the feature.
std::vector<std::string> requested(const ncclDevCommRequirements& r) {
  std::vector<std::string> asks;
  auto count = [&asks](const char* field, long value, const char* feature) {
    if (value == 0) return;
    std::ostringstream s;
    s << field << " " << value << " (" << feature << ")";
    asks.push_back(s.str());
  };
  if (r.lsaMultimem) asks.emplace_back("lsaMultimem (multimem)");
  if (r.teamRequirementsList) asks.emplace_back("teamRequirementsList (teams, multimem groups)");
  if (r.resourceRequirementsList)
    asks.emplace_back("resourceRequirementsList (device resource buffers)");
  count("barrierCount", r.barrierCount, "world barriers");
  count("lsaBarrierCount", r.lsaBarrierCount, "LSA barriers");
  count("lsaLLA2ABlockCount", r.lsaLLA2ABlockCount, "LL all-to-all buffers");
  count("lsaLLA2ASlotCount", r.lsaLLA2ASlotCount, "LL all-to-all buffers");
  count("railGinBarrierCount", r.railGinBarrierCount, "GIN");
  count("worldGinBarrierCount", r.worldGinBarrierCount, "GIN");
  count("ginSignalCount", r.ginSignalCount, "GIN");
  count("ginCounterCount", r.ginCounterCount, "GIN");
  if (r.ginForceEnable) asks.emplace_back("ginForceEnable (GIN)");
  count("ginConnectionType", r.ginConnectionType, "GIN");
  count("ginType", r.ginType, "GIN");
  count("cftCaps", r.cftCaps, "CFT");
  count("cftBarrierCount", r.cftBarrierCount, "CFT");
  return asks;
}

std::string refusal(const ncclDevCommRequirements& reqs) {
  std::ostringstream s;
  s << "RCCLX provides no device communicators (ncclCommQueryProperties reports "
       "deviceApiSupport = 0; use the host collectives); reqs asks for ";
  const auto asks = requested(reqs);
  if (asks.empty()) s << "nothing, and a device communicator without resources is not made either";
  for (size_t i = 0; i < asks.size(); ++i) s << (i ? ", " : "") << asks[i];
  return s.str();
}

/// The address `offset` bytes into window `w`, checked to lie inside it.
char* windowAddress(const ncclWindow_vidmem& w, size_t offset) {
  CTRAN_CHECK(offset < w.bytes, ctran::InvalidArgument, "offset ", offset,
              " is outside the window's ", w.bytes, " bytes");
  return static_cast<char*>(w.base) + offset;
}

/// Checks the arguments every address query shares: `window` a live window and `out` (named
/// `outName`) not NULL; returns the window.
ncclWindow_vidmem queriedWindow(ncclWindow_t window, const void* out, const char* outName) {
  ncclWindow_vidmem w = liveWindow(window, "window");
  CTRAN_CHECK(out != nullptr, ctran::InvalidArgument, outName, " is NULL");
  return w;
}

constexpr const char* kNoPeerAccess =
    "RCCLX gives kernels no access to another rank's window memory (each rank is its own LSA "
    "team: ncclCommQueryProperties reports nLsaTeams = nRanks)";
constexpr const char* kNoMultimem =
    "RCCLX provides no multimem groups (ncclCommQueryProperties reports multimemSupport = 0)";
constexpr const char* kNoCft = "RCCLX has no collective fabric transport (CFT) endpoints";

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;

NCCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props) {
  return boundary("ncclCommQueryProperties", [&] {
    const ncclComm& c = rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(props != nullptr, ctran::InvalidArgument, "props is NULL");
    const size_t bytes =
        rcclx::nccl::versionedBytes(*props, "props", "NCCL_COMM_PROPERTIES_INITIALIZER");
    ncclCommProperties_t p{};
    p.size = props->size;
    p.magic = props->magic;
    p.version = props->version;
    p.rank = c.rank;
    p.nRanks = c.nranks;
    p.cudaDev = c.device;
    p.nvmlDev = -1;
    // No rank reaches another's memory through the device API: every rank is its own LSA team.
    p.nLsaTeams = c.nranks;
    p.ginType = NCCL_GIN_TYPE_NONE;
    p.railedGinType = NCCL_GIN_TYPE_NONE;
    p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
    std::memcpy(static_cast<void*>(props), &p, bytes);
  });
}

NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements* reqs,
         ncclDevComm* outDevComm);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs,
                               ncclDevComm* outDevComm) {
  return boundary("ncclDevCommCreate", [&] {
    rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(reqs != nullptr, ctran::InvalidArgument, "reqs is NULL");
    CTRAN_CHECK(outDevComm != nullptr, ctran::InvalidArgument, "outDevComm is NULL");
    throw ctran::InvalidUsage(rcclx::nccl::refusal(rcclx::nccl::readRequirements(*reqs)));
  });
}

NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm* devComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm) {
  return boundary("ncclDevCommDestroy", [&] {
    rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(devComm != nullptr, ctran::InvalidArgument, "devComm is NULL");
    throw ctran::InvalidUsage(
        "devComm was not made by ncclDevCommCreate: RCCLX provides no device communicators");
  });
}

NCCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
         void** outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr) {
  return boundary("ncclGetLsaDevicePointer", [&] {
    const auto w = rcclx::nccl::queriedWindow(window, outPtr, "outPtr");
    CTRAN_CHECK(lsaRank == 0, ctran::InvalidArgument, "lsaRank ", lsaRank,
                " is outside this rank's LSA team, which is the rank alone (lsaRank 0): ",
                rcclx::nccl::kNoPeerAccess);
    *outPtr = rcclx::nccl::windowAddress(w, offset);
  });
}

NCCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
         void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr) {
  return boundary("ncclGetPeerDevicePointer", [&] {
    const auto w = rcclx::nccl::queriedWindow(window, outPtr, "outPtr");
    const int nranks = w.comm->nranks;
    CTRAN_CHECK(peer >= 0 && peer < nranks, ctran::InvalidArgument, "peer ", peer,
                " is not a rank of the window's communicator (0..", nranks - 1, ")");
    CTRAN_CHECK(peer == w.comm->rank, ctran::InvalidUsage, "peer ", peer, " is not this rank (",
                w.comm->rank, "): ", rcclx::nccl::kNoPeerAccess);
    *outPtr = rcclx::nccl::windowAddress(w, offset);
  });
}

NCCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
         void** outPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr) {
  return boundary("ncclGetLsaMultimemDevicePointer", [&] {
    rcclx::nccl::windowAddress(rcclx::nccl::queriedWindow(window, outPtr, "outPtr"), offset);
    throw ctran::InvalidUsage(rcclx::nccl::kNoMultimem);
  });
}

NCCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
         ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr) {
  return boundary("ncclGetMultimemDevicePointer", [&] {
    rcclx::nccl::windowAddress(rcclx::nccl::queriedWindow(window, outPtr, "outPtr"), offset);
    throw ctran::InvalidUsage(
        std::string("multimem.mcBasePtr ") +
        (multimem.mcBasePtr ? "is not a multimem group of this library: " : "is NULL: ") +
        rcclx::nccl::kNoMultimem);
  });
}

NCCL_API(ncclResult_t, ncclGetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset,
         ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                         size_t* leOffset) {
  return boundary("ncclGetMultimemDeviceLeInfo", [&] {
    rcclx::nccl::windowAddress(rcclx::nccl::queriedWindow(window, leId, "leId"), offset);
    CTRAN_CHECK(leOffset != nullptr, ctran::InvalidArgument, "leOffset is NULL");
    throw ctran::InvalidUsage(rcclx::nccl::kNoCft);
  });
}

NCCL_API(ncclResult_t, ncclGetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft,
         ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
                                    ncclTeam_t /*cftTeam*/, ncclCftLeId* leId, size_t* leOffset) {
  return boundary("ncclGetCftDeviceLeInfo", [&] {
    rcclx::nccl::windowAddress(rcclx::nccl::queriedWindow(window, leId, "leId"), offset);
    CTRAN_CHECK(leOffset != nullptr, ctran::InvalidArgument, "leOffset is NULL");
    throw ctran::InvalidUsage(std::string(rcclx::nccl::kNoCft) + " (peerCft " +
                              std::to_string(peerCft) + ")");
  });
}

NCCL_API(ncclResult_t, ncclGetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld,
         ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
                                     ncclCftLeId* leId, size_t* leOffset) {
  return boundary("ncclGetPeerDeviceLeInfo", [&] {
    rcclx::nccl::windowAddress(rcclx::nccl::queriedWindow(window, leId, "leId"), offset);
    CTRAN_CHECK(leOffset != nullptr, ctran::InvalidArgument, "leOffset is NULL");
    throw ctran::InvalidUsage(std::string(rcclx::nccl::kNoCft) + " (peerWorld " +
                              std::to_string(peerWorld) + ")");
  });
}
