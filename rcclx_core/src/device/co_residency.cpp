// Implementation of co_residency.hpp.
#include "device/co_residency.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "ctran/checks.hpp"

namespace rcclx::gpu {

const char* waitingKernelName(WaitingKernel kernel) {
  switch (kernel) {
    case WaitingKernel::kFlatLl: return "flat_ll";
    case WaitingKernel::kLines: return "lines";
    case WaitingKernel::kTwoShot: return "two_shot";
    case WaitingKernel::kChannels: return "channels";
    case WaitingKernel::kLowPrecision: return "low_precision";
    case WaitingKernel::kAllToAllvDynamic: return "alltoallv_dynamic";
  }
  return "?";
}

// As text, "gpu sms percent b0 b1 ...": the bus id holds no spaces.
ctran::Bytes GpuShareReport::serialize() const {
  std::string s = ctran::strCat(gpu, " ", sms, " ", mpsThreadPercent);
  for (int b : threadsPerSm) s += ctran::strCat(" ", b);
  return ctran::Bytes(s.begin(), s.end());
}

GpuShareReport GpuShareReport::parse(const ctran::Bytes& bytes, int rank) {
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  GpuShareReport r;
  in >> r.gpu >> r.sms >> r.mpsThreadPercent;
  for (int& b : r.threadsPerSm) in >> b;
  CTRAN_CHECK(in && !r.gpu.empty(), ctran::InvalidArgument, "rank ", rank,
              " sent no report of its GPU's sharing (got ", bytes.size(), " bytes)");
  return r;
}

int mpsThreadPercent(const char* value) {
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  const double v = std::strtod(value, &end);
  if (*end != '\0' || !(v > 0.0) || v > 100.0) return 0;
  return std::max(1, static_cast<int>(v));
}

CoResidency CoResidency::agree(const std::vector<GpuShareReport>& reports) {
  CoResidency c;
  std::map<std::string, int> ranksOn;
  for (const GpuShareReport& r : reports)
    c.ranksPerGpu_ = std::max(c.ranksPerGpu_, ++ranksOn[r.gpu]);
  c.sms_ = reports.empty() ? 0 : reports[0].sms;
  c.threadsPerSm_ = reports.empty() ? std::array<int, kWaitingKernels>{} : reports[0].threadsPerSm;
  for (const GpuShareReport& r : reports) {
    c.sms_ = std::min(c.sms_, r.sms);
    if (r.mpsThreadPercent > 0)
      c.mpsThreadPercent_ = c.mpsThreadPercent_ == 0
                                ? r.mpsThreadPercent
                                : std::min(c.mpsThreadPercent_, r.mpsThreadPercent);
    for (int k = 0; k < kWaitingKernels; ++k)
      c.threadsPerSm_[k] = std::min(c.threadsPerSm_[k], r.threadsPerSm[k]);
  }
  return c;
}

int CoResidency::smsPerRank() const {
  // Under an MPS percentage a process already sees only its share of the SMs; the whole GPU
  // is that share scaled back.
  const int whole = mpsThreadPercent_ > 0 ? sms_ * 100 / mpsThreadPercent_ : sms_;
  return std::max(std::min(sms_, whole / ranksPerGpu_), 1);
}

bool CoResidency::smsSplit() const {
  return shared() && mpsThreadPercent_ > 0 && mpsThreadPercent_ * ranksPerGpu_ <= 100;
}

bool CoResidency::earlyLaunchSafe() const { return !shared() || smsSplit(); }

bool CoResidency::earlyLaunchFits(WaitingKernel kernel, int blocks, int threads) const {
  return !shared() || 2 * static_cast<long long>(blocks) <= maxBlocks(kernel, threads);
}

int CoResidency::maxBlocks(WaitingKernel kernel, int threads) const {
  if (!shared()) return kNoLimit;
  const int perSm = std::max(threadsPerSm_[static_cast<int>(kernel)] / std::max(threads, 1), 1);
  return perSm * smsPerRank();
}

int CoResidency::fit(WaitingKernel kernel, int wanted, int threads) const {
  return std::min(wanted, maxBlocks(kernel, threads));
}

std::string CoResidency::describe() const {
  if (!shared()) return "one rank per GPU";
  std::string s = ctran::strCat(ranksPerGpu_, " ranks share a GPU");
  s += mpsThreadPercent_ > 0
           ? ctran::strCat(" (each process sees ", sms_,
                           " SMs under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", mpsThreadPercent_, ")")
           : ctran::strCat(" of ", sms_, " SMs");
  s += ctran::strCat(
      ": ", smsPerRank(), " SMs per rank, ",
      earlyLaunchSafe() ? "early launch on" : "early launch one kernel ahead where two grids fit",
      keepSharedMemoryFree() ? ", shared memory kept free" : "", "; threads per SM");
  for (int k = 0; k < kWaitingKernels; ++k)
    s += ctran::strCat(k == 0 ? " " : ", ", waitingKernelName(static_cast<WaitingKernel>(k)), " ",
                       threadsPerSm_[k]);
  return s;
}

}  // namespace rcclx::gpu
