// ncclConfig_t reader: the caller's struct may be of another NCCL version than ours, so each
// field is read only when the caller's size covers it, by offset, never by struct copy.
#include "config.hpp"

#include <climits>
#include <cstddef>
#include <cstring>

#include "ctran/checks.hpp"

namespace rcclx::nccl {
namespace {

// NCCL 2.14's ncclConfig_t (size, magic, version, blocking, cgaClusterSize, minCTAs, maxCTAs,
// netName) is the oldest; a struct shorter than that is not an ncclConfig_t.
constexpr size_t kOldestConfigBytes = offsetof(ncclConfig_t, netName) + sizeof(const char*);
// Far more than any version's struct: a larger size is a garbage value, not a newer layout.
constexpr size_t kLargestPlausibleBytes = 4096;
constexpr unsigned kOldestVersion = 21400;

template <typename T>
bool readField(const ncclConfig_t* config, size_t offset, T* out) {
  if (offset + sizeof(T) > config->size) return false;
  std::memcpy(out, reinterpret_cast<const char*>(config) + offset, sizeof(T));
  return true;
}

}  // namespace

CommOptions readConfig(const ncclConfig_t* config, const CommOptions& base) {
  CommOptions o = base;
  if (config == nullptr) return o;
  CTRAN_CHECK(config->magic == NCCL_API_MAGIC, ctran::InvalidArgument, "config->magic 0x", std::hex,
              config->magic, " is not NCCL_API_MAGIC (0x", NCCL_API_MAGIC, std::dec,
              "): initialise the struct with NCCL_CONFIG_INITIALIZER");
  CTRAN_CHECK(config->size >= kOldestConfigBytes && config->size <= kLargestPlausibleBytes,
              ctran::InvalidArgument, "config->size ", config->size,
              " is not the size of an ncclConfig_t (", kOldestConfigBytes,
              " bytes for NCCL 2.14, 72 for 2.27, 80 for 2.28, 112 for 2.31; newer versions are "
              "longer)");
  CTRAN_CHECK(config->version >= kOldestVersion, ctran::InvalidArgument, "config->version ",
              config->version, " is older than NCCL 2.14 (", kOldestVersion,
              "), the first with ncclConfig_t");
  int blocking = INT_MIN;
  if (readField(config, offsetof(ncclConfig_t, blocking), &blocking) && blocking != INT_MIN) {
    CTRAN_CHECK(blocking == 0 || blocking == 1, ctran::InvalidArgument, "config->blocking ",
                blocking, " must be 0 or 1");
    o.blocking = blocking == 1;
  }
  const char* name = nullptr;
  if (readField(config, offsetof(ncclConfig_t, commName), &name) && name != nullptr) o.name = name;
  // The tuning fields (CTAs, cluster size, channels, collnet, NVLink scheduling, split and
  // shrink sharing, and 2.29-2.31's graph and one-sided ones) have no counterpart in RCCLX's
  // algorithms and are accepted as given.
  return o;
}

}  // namespace rcclx::nccl

// NCCL's layouts, which callers compiled against NCCL's own header pass.
static_assert(sizeof(ncclConfig_t) == 112, "ncclConfig_t must have NCCL 2.31's 112-byte layout");
static_assert(offsetof(ncclConfig_t, nvlinkCentricSched) + sizeof(int) == 80,
              "NCCL 2.28's ncclConfig_t ends after nvlinkCentricSched, at 80 bytes");
static_assert(offsetof(ncclConfig_t, maxP2pPeers) == 88, "maxP2pPeers must sit at NCCL's offset");
static_assert(offsetof(ncclConfig_t, hostCftMode) + sizeof(int) == 112,
              "NCCL 2.31's ncclConfig_t ends after hostCftMode, at 112 bytes");
static_assert(offsetof(ncclConfig_t, nvlsCTAs) + sizeof(int) == 72,
              "NCCL 2.27's ncclConfig_t ends after nvlsCTAs, at 72 bytes");
static_assert(offsetof(ncclConfig_t, commName) == 48, "commName must sit at NCCL's offset");
