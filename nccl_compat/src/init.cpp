// Library identity and bootstrap entry points: ncclGetVersion, ncclGetUniqueId.
#include "api.hpp"
#include "bootstrap_id.hpp"

static_assert(NCCL_VERSION_CODE == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),
              "NCCL_VERSION_CODE must match NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH");
static_assert(sizeof(ncclUniqueId) == sizeof(ctran::UniqueId::bytes),
              "ncclUniqueId and ctran::UniqueId must both be NCCL_UNIQUE_ID_BYTES long");

NCCL_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t ncclGetVersion(int* version) {
  return rcclx::nccl::boundary("ncclGetVersion", [&] {
    CTRAN_CHECK(version != nullptr, ctran::InvalidArgument, "version is NULL");
    *version = NCCL_VERSION_CODE;
  });
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return rcclx::nccl::boundary("ncclGetUniqueId", [&] {
    CTRAN_CHECK(uniqueId != nullptr, ctran::InvalidArgument, "uniqueId is NULL");
    *uniqueId = rcclx::nccl::makeUniqueId();
  });
}
