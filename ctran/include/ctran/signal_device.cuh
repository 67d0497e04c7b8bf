// Device side of DeviceWindow signalling: system-scope release / acquire flags, epochs kept in
// device memory, and bounded waits. Include from GPU translation units only.
//
// Memory model (what a kernel relies on):
//  * Producer: every thread of a block stores its data (to a peer's window, plain stores), the
//    block meets at __syncthreads(), then one thread per destination stores the flag with
//    signalRelease() (st.release.sys): the barrier orders the block's stores before the release,
//    and the release is cumulative, so a consumer that acquires the flag sees all of them.
//  * Consumer: one thread per source polls its local flag with signalAcquire()
//    (ld.acquire.sys) until it reaches the expected value, the block meets at __syncthreads(),
//    then every thread loads the data.
//  * Flags only grow, so waits test ">= expected"; a flag never needs resetting.
//  * Epochs: a kernel never takes its sequence number as an argument (a captured graph would
//    replay the same one); block b reads epochs[b] at entry (epochLoad) and, before it ends,
//    writes epoch + 1 into every slot congruent to b modulo gridDim.x (epochAdvance). Every
//    slot thus advances by one per kernel whatever the grid size, and no block reads a slot
//    another block of the same kernel writes (the stores are spread over the block's threads).
//    Kernels using one window must run in order.
//  * Waits are bounded (WaitBound, wait_report.hpp): past `timeoutNs` (from the first
//    unsuccessful poll) the kernel prints what it waited for and, where the host watches
//    (WaitBound::report: every kernel of the libraries has one), records it and sets the abort
//    word; else it traps, so a stuck peer becomes a launch error, not a hung GPU. Once the
//    abort word is set (by the host, when its group failed: a peer died, a rank aborted; or by
//    such a timed-out wait) every wait ends at once, so the kernels exit and the GPU stays
//    usable.
#pragma once

#include <cstdint>

#include "ctran/device_window.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/wait_report.hpp"

namespace ctran::device {

/// Nanoseconds from a global clock (coarse: it ticks about every microsecond).
__device__ __forceinline__ uint64_t globalTimerNs() {
#if RCCLX_GPU_HIP
  // s_memrealtime (what wall_clock64() reads): a 100 MHz constant clock on MI-series GPUs.
  return __builtin_amdgcn_s_memrealtime() * 10;
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

/// Stores `v` to `flag` (local or a peer's) with system-scope release semantics.
__device__ __forceinline__ void signalRelease(uint64_t* flag, uint64_t v) {
#if RCCLX_GPU_HIP
  __hip_atomic_store(flag, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(v) : "memory");
#endif
}

/// Loads `flag` with system-scope acquire semantics.
__device__ __forceinline__ uint64_t signalAcquire(const uint64_t* flag) {
#if RCCLX_GPU_HIP
  return __hip_atomic_load(flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
  return v;
#endif
}

/// Loads data a peer stored into this GPU's memory, after the acquire that saw the peer's flag.
/// NVIDIA: ld.global.cg, bypassing L1 (it may still hold the line's old contents). AMD: a plain
/// load; the system-scope acquire (signalAcquire) invalidated the CU's L1, which every wave of
/// the block shares.
template <typename T>
__device__ __forceinline__ T loadPeerStored(const T* p) {
#if RCCLX_GPU_HIP
  return *p;
#else
  return __ldcg(p);
#endif
}

/// Set by the first timed-out wait of this module, so one line is printed, not one per thread.
static __device__ unsigned int gTimeoutReported = 0;

/// Ends a wait that ran out of time: prints it (once per module); then, where the host watches
/// (bound.report), the first such wait bound by that report records it there and sets the
/// abort word, and the caller returns as on an abort; where nobody watches, the kernel traps.
__device__ __noinline__ inline void waitTimedOut(WaitSubject subject, const char* what, int rank,
                                                 int peer, uint64_t expected, uint64_t seen,
                                                 const WaitBound& bound) {
  if (atomicExch(&gTimeoutReported, 1u) == 0u)
    printf(
        "rcclx: rank %d block %d thread %d timed out after %llu ms waiting for %s from rank %d "
        "(expected %llu, saw %llu); RCCLX_TIMEOUT_MS (or the call's timeout) sets the limit\n",
        rank, (int)blockIdx.x, (int)threadIdx.x, (unsigned long long)(bound.timeoutNs / 1000000),
        what, peer, (unsigned long long)expected, (unsigned long long)seen);
  WaitReport* r = bound.report;
  if (r != nullptr) {
    if (atomicCAS_system(&r->claimed, 0u, 1u) == 0u) {
      r->rank = rank;
      r->peer = peer;
      r->what = static_cast<uint32_t>(subject);
      r->expected = expected;
      r->seen = seen;
      r->timeoutNs = bound.timeoutNs;
      __threadfence_system();  // the fields before the flag that says they are complete
      atomicExch_system(&r->timedOut, 1u);
    }
    atomicExch_system(&r->abort, 1u);
    return;
  }
#if RCCLX_GPU_HIP
  __builtin_trap();  // s_trap: the queue reports an error, as __trap() does on CUDA
#else
  __trap();
#endif
}

/// Tracks a bounded wait: call expired() after each unsuccessful poll; once it returns true,
/// end the wait: if aborted, stop waiting (return); else call waitTimedOut.
struct WaitClock {
  ctran::WaitBound bound;
  uint64_t start = 0;
  uint32_t polls = 0;
  bool aborted = false;
  __device__ explicit WaitClock(const ctran::WaitBound& b) : bound(b) {}
  /// True once the host set the abort word (`aborted`) or the wait has lasted more than
  /// bound.timeoutNs; looks every 256 polls (the abort word is a read across the bus).
  __device__ __forceinline__ bool expired() {
    if ((++polls & 255u) != 0) return false;
    if (bound.abort != nullptr && *reinterpret_cast<const volatile uint32_t*>(bound.abort) != 0) {
      aborted = true;
      return true;
    }
    uint64_t now = globalTimerNs();
    if (start == 0) start = now;
    return now - start > bound.timeoutNs;
  }
};

/// Waits until the local `flag` is >= `expected` (acquire), or the group aborted. `peer` names
/// the rank that signals it in the timeout message.
__device__ __forceinline__ void signalWait(const uint64_t* flag, uint64_t expected, int rank,
                                           int peer, const ctran::WaitBound& bound,
                                           const char* what) {
  uint64_t v = signalAcquire(flag);
  if (v >= expected) return;
  WaitClock clock(bound);
  while ((v = signalAcquire(flag)) < expected) {
    if (!clock.expired()) continue;
    if (!clock.aborted) waitTimedOut(WaitSubject::kSignal, what, rank, peer, expected, v, bound);
    return;
  }
}

/// This block's epoch (the number of kernels run on the window before this one, plus one).
__device__ __forceinline__ uint32_t epochLoad(const DeviceWindowHandle& h) {
  return *reinterpret_cast<volatile uint32_t*>(&h.epochs[blockIdx.x]) + 1u;
}

/// Advances the epochs for the next kernel. Every thread of every block calls it, after a
/// __syncthreads() that follows the block's last use of the epoch; the slots are spread over all
/// threads (one serial loop of kMaxEpochSlots stores in a single thread costs microseconds).
__device__ __forceinline__ void epochAdvance(const DeviceWindowHandle& h, uint32_t epoch) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x + threadIdx.x * gridDim.x; i < kMaxEpochSlots; i += stride)
    h.epochs[i] = epoch;
}

}  // namespace ctran::device
