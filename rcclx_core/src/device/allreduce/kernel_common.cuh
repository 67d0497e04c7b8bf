// Device building blocks shared by the GPU reduction kernels: 16-byte units of any element type
// (vector loads and stores, with element-wise handling of a partial last unit or a misaligned
// buffer), PREMUL_SUM's scaling of this rank's own input, reduction in a fixed rank order with a
// wider accumulator for 16-bit floats, LL lines, the dispatch from (DataType, RedOp) to a
// kernel instantiation, and launches with programmatic dependent launch.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "ctran/signal_device.cuh"
#include "device/allreduce/launch.hpp"

#if RCCLX_GPU_HIP
#include <hip/hip_fp16.h>
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
using rcclx_bf16 = __hip_bfloat16;
#else
#include <hip/hip_bfloat16.h>  // ROCm before 5.7 (Debian 12's 5.2): the hip_bfloat16 class
using rcclx_bf16 = hip_bfloat16;
#define RCCLX_HIP_BF16_CLASS 1
#endif
using rcclx_half = __half;
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
using rcclx_half = __half;
using rcclx_bf16 = __nv_bfloat16;
#endif

namespace rcclx::gpu {

static_assert(kWarpThreads == ctran::kWarpSize, "host-side launch sizes assume this warp size");

/// Reduction operators the kernels instantiate (AVG is SUM plus a division in the last step).
/// kPreMulSum is SUM over inputs that each rank scales by its own scalar as it loads them
/// (floating types only); the bitwise operators run on bytes whatever the integer type (see
/// kernelType() in launch.hpp) and combine 32-bit words.
enum class Op { kSum, kProd, kMin, kMax, kPreMulSum, kBitAnd, kBitOr, kBitXor };

constexpr bool isBitwise(Op o) { return o == Op::kBitAnd || o == Op::kBitOr || o == Op::kBitXor; }

template <typename T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<rcclx_half> {
  using type = float;
};
template <>
struct AccOf<rcclx_bf16> {
  using type = float;
};

/// bf16 -> float (exact).
__device__ __forceinline__ float bf16ToFloat(rcclx_bf16 v) {
#if RCCLX_HIP_BF16_CLASS
  return static_cast<float>(v);
#else
  return __bfloat162float(v);
#endif
}

/// float -> bf16, round to nearest even (NaN stays NaN).
__device__ __forceinline__ rcclx_bf16 floatToBf16(float v) {
#if RCCLX_HIP_BF16_CLASS
  return rcclx_bf16(v);  // hip_bfloat16(float) rounds to nearest even
#elif RCCLX_GPU_HIP
  return __float2bfloat16(v);  // rounds to nearest even; HIP has no _rn spelling
#else
  return __float2bfloat16_rn(v);
#endif
}

template <typename T>
__device__ __forceinline__ typename AccOf<T>::type toAcc(T v) {
  if constexpr (std::is_same_v<T, rcclx_half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, rcclx_bf16>) {
    return bf16ToFloat(v);
  } else {
    return v;
  }
}

template <typename T>
__device__ __forceinline__ T fromAcc(typename AccOf<T>::type v) {
  if constexpr (std::is_same_v<T, rcclx_half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, rcclx_bf16>) {
    return floatToBf16(v);
  } else {
    return static_cast<T>(v);
  }
}

template <Op O, typename A>
__device__ __forceinline__ A combine(A a, A b) {
  if constexpr (O == Op::kSum || O == Op::kPreMulSum) return a + b;
  if constexpr (O == Op::kProd) return a * b;
  if constexpr (O == Op::kMin) return b < a ? b : a;
  if constexpr (O == Op::kMax) return a < b ? b : a;
  if constexpr (O == Op::kBitAnd) return a & b;
  if constexpr (O == Op::kBitOr) return a | b;
  if constexpr (O == Op::kBitXor) return a ^ b;
}

/// Elements of T in a vector V: a 16-byte unit (uint4, the default) or an 8-byte word (uint2,
/// the payload granule of the 128-byte lines in tree_lines.cu).
template <typename T, typename V = uint4>
constexpr int kPerVec = static_cast<int>(sizeof(V) / sizeof(T));
/// Elements per 16-byte unit.
template <typename T>
constexpr int kPerUnit = kPerVec<T, uint4>;

/// What every kernel knows about the user's buffers.
struct Buffers {
  const void* send;
  void* recv;
  size_t count;      ///< elements
  size_t units;      ///< ceil(count / kPerUnit)
  bool aligned;      ///< send and recv are 16-byte aligned
  int avgDivisor;    ///< nranks for AVG, else 1
  double scale;      ///< PREMUL_SUM: this rank's scalar (read by the kPreMulSum kernels only)
  bool pdlOneAhead;  ///< awaitPrecedingKernel lets the next kernel be scheduled after its wait
};

/// Loads vector `u` of `src` (zero-filled past `count`); `aligned`: src is sizeof(V)-aligned.
template <typename T, typename V = uint4>
__device__ __forceinline__ V loadUnit(const void* src, size_t u, size_t count, bool aligned) {
  constexpr int N = kPerVec<T, V>;
  const size_t e0 = u * N;
  const T* s = static_cast<const T*>(src);
  if (aligned && e0 + N <= count) return *reinterpret_cast<const V*>(s + e0);
  V v{};
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (e0 + i < count) e[i] = s[e0 + i];
  }
  return v;
}

/// Stores vector `u` into `dst` (only the elements below `count`).
template <typename T, typename V = uint4>
__device__ __forceinline__ void storeUnit(void* dst, size_t u, size_t count, bool aligned, V v) {
  constexpr int N = kPerVec<T, V>;
  const size_t e0 = u * N;
  T* d = static_cast<T*>(dst);
  if (aligned && e0 + N <= count) {
    *reinterpret_cast<V*>(d + e0) = v;
    return;
  }
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (e0 + i < count) d[e0 + i] = e[i];
  }
}

/// PREMUL_SUM's scaling of one unit of this rank's input: each element times `scale` in double,
/// rounded to the accumulator type and then to T, exactly as the host path (cpu::scale) does.
template <typename T, typename V = uint4>
__device__ __forceinline__ V scaleUnit(V v, double scale) {
  using A = typename AccOf<T>::type;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < kPerVec<T, V>; ++i)
    e[i] = fromAcc<T>(static_cast<A>(static_cast<double>(toAcc<T>(e[i])) * scale));
  return v;
}

/// Loads unit `u` of this rank's own input, as every rank reduces it and its peers receive it:
/// scaled for PREMUL_SUM, as is otherwise.
template <typename T, Op O, typename V = uint4>
__device__ __forceinline__ V loadOwn(const void* src, size_t u, size_t count, bool aligned,
                                     double scale) {
  const V v = loadUnit<T, V>(src, u, count, aligned);
  if constexpr (O == Op::kPreMulSum) {
    return scaleUnit<T, V>(v, scale);
  } else {
    (void)scale;
    return v;
  }
}

/// Programmatic dependent launch (NVIDIA sm_90 and later): lets the next kernel of the stream
/// be scheduled and waits until the kernel before this one has finished and its memory is
/// visible. Every allreduce kernel calls it first, before any load or store; launched with
/// pdl (ctran/kernel_launch.cuh), the grid is then set up while its predecessor drains.
/// `oneAhead` waits first, so at most two kernels of a stream are resident (the running one and
/// the next): where ranks share a GPU, a longer chain could hold the SMs a peer's kernel needs
/// (co_residency.hpp).
__device__ __forceinline__ void awaitPrecedingKernel(bool oneAhead) {
#if !RCCLX_GPU_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (oneAhead) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  } else {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
#else
  (void)oneAhead;
#endif
}

/// Loads a staged unit that a peer stored (bypassing L1: the line may be stale there).
__device__ __forceinline__ uint4 loadStaged(const uint4* p) {
  return ctran::device::loadPeerStored(p);
}

/// Accumulates vectors (units by default) in the order they are added; every rank adding the
/// same vectors in the same order gets the same bits. Bitwise operators use the specialisation
/// below.
template <typename T, Op O, typename V = uint4, bool kBits = isBitwise(O)>
struct UnitReducer {
  using A = typename AccOf<T>::type;
  static constexpr int N = kPerVec<T, V>;
  A acc[N];

  __device__ __forceinline__ void first(V v) {
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = toAcc<T>(e[i]);
  }
  __device__ __forceinline__ void add(V v) {
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = combine<O, A>(acc[i], toAcc<T>(e[i]));
  }
  /// The result, divided by `divisor` when it is above 1 (AVG).
  __device__ __forceinline__ V result(int divisor) const {
    V v;
    T* e = reinterpret_cast<T*>(&v);
    if (divisor > 1) {
#pragma unroll
      for (int i = 0; i < N; ++i) e[i] = fromAcc<T>(acc[i] / static_cast<A>(divisor));
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) e[i] = fromAcc<T>(acc[i]);
    }
    return v;
  }
};

/// Bitwise operators: the bits of an element do not depend on its width or position, so a
/// vector combines as 32-bit words.
template <typename T, Op O, typename V>
struct UnitReducer<T, O, V, true> {
  static constexpr int kWords = static_cast<int>(sizeof(V) / sizeof(uint32_t));
  V acc;

  __device__ __forceinline__ void first(V v) { acc = v; }
  __device__ __forceinline__ void add(V v) {
    uint32_t* a = reinterpret_cast<uint32_t*>(&acc);
    const uint32_t* b = reinterpret_cast<const uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < kWords; ++i) a[i] = combine<O, uint32_t>(a[i], b[i]);
  }
  __device__ __forceinline__ V result(int) const { return acc; }
};

/// A UnitReducer's first(a), add(b), result(divisor) in one step, with the same bits. The
/// 16-bit floats' SUM (divisor 1) adds in packed 16-bit instructions on NVIDIA GPUs, two elements
/// per instruction, instead of converting each element to float and back: the sum of two 16-bit
/// floats is exact in float, except when their exponents lie so far apart that the smaller one
/// (and float's rounding) stays under half the larger one's 16-bit rounding step, and then both
/// ways round to the larger. Two-rank kernels use it.
template <typename T, Op O, typename V = uint4>
__device__ __forceinline__ V reducePair(V a, V b, int divisor) {
#if !RCCLX_GPU_HIP
  constexpr bool kBf16 = std::is_same_v<T, rcclx_bf16>;
  if constexpr (O == Op::kSum && (kBf16 || std::is_same_v<T, rcclx_half>)) {
    if (divisor <= 1) {
      using T2 = std::conditional_t<kBf16, __nv_bfloat162, __half2>;
      const T2* x = reinterpret_cast<const T2*>(&a);
      const T2* y = reinterpret_cast<const T2*>(&b);
      V sum;
      T2* z = reinterpret_cast<T2*>(&sum);
#pragma unroll
      for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(T2)); ++i) z[i] = __hadd2(x[i], y[i]);
      return sum;
    }
  }
#endif
  UnitReducer<T, O, V> r;
  r.first(a);
  r.add(b);
  return r.result(divisor);
}

/// Stores a unit as two LL lines {data, flag, data, flag} at `dst` (a peer's LL slot). Each
/// 8-byte half of a line lands atomically, so a reader that sees both flags sees the data.
__device__ __forceinline__ void llStoreUnit(char* dst, uint4 v, uint32_t flag) {
#if RCCLX_GPU_HIP
  volatile uint64_t* d = reinterpret_cast<volatile uint64_t*>(dst);
  d[0] = (static_cast<uint64_t>(flag) << 32) | v.x;
  d[1] = (static_cast<uint64_t>(flag) << 32) | v.y;
  d[2] = (static_cast<uint64_t>(flag) << 32) | v.z;
  d[3] = (static_cast<uint64_t>(flag) << 32) | v.w;
#else
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x), "r"(flag),
               "r"(v.y), "r"(flag)
               : "memory");
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst + 16), "r"(v.z),
               "r"(flag), "r"(v.w), "r"(flag)
               : "memory");
#endif
}

/// Reads one LL line; true when both of its flags equal `flag`.
__device__ __forceinline__ bool llTryLine(const char* src, uint32_t flag, uint32_t& d0,
                                          uint32_t& d1) {
#if RCCLX_GPU_HIP
  const volatile uint64_t* s = reinterpret_cast<const volatile uint64_t*>(src);
  uint64_t a = s[0], b = s[1];
  d0 = static_cast<uint32_t>(a);
  d1 = static_cast<uint32_t>(b);
  return static_cast<uint32_t>(a >> 32) == flag && static_cast<uint32_t>(b >> 32) == flag;
#else
  uint32_t f0, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(src)
               : "memory");
  return f0 == flag && f1 == flag;
#endif
}

/// Waits for the unit a peer stored at `src` with llStoreUnit(..., flag) and returns it.
__device__ __forceinline__ uint4 llLoadUnit(const char* src, uint32_t flag, int rank, int peer,
                                            ctran::WaitBound bound) {
  uint4 v;
  if (!llTryLine(src, flag, v.x, v.y)) {
    ctran::device::WaitClock clock(bound);
    while (!llTryLine(src, flag, v.x, v.y)) {
      if (!clock.expired()) continue;
      if (!clock.aborted)
        ctran::device::waitTimedOut(ctran::WaitSubject::kLlLine, "an LL line", rank, peer, flag, 0,
                                    bound);
      return v;
    }
  }
  if (!llTryLine(src + 16, flag, v.z, v.w)) {
    ctran::device::WaitClock clock(bound);
    while (!llTryLine(src + 16, flag, v.z, v.w)) {
      if (!clock.expired()) continue;
      if (!clock.aborted)
        ctran::device::waitTimedOut(ctran::WaitSubject::kLlLine, "an LL line", rank, peer, flag, 0,
                                    bound);
      return v;
    }
  }
  return v;
}

template <typename T>
constexpr bool kFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, rcclx_half> || std::is_same_v<T, rcclx_bf16>;

/// Calls fn(T{}, std::integral_constant<Op, O>{}) for the runtime (type, op); AVG maps to SUM.
/// PREMUL_SUM is instantiated for the floating types only and the bitwise operators for uint8
/// only (the host passes kernelType(type, op)); gpuSupports() is checked before, so any other
/// combination is an internal error.
template <typename Fn>
void dispatch(DataType type, RedOp op, Fn&& fn) {
  auto withOp = [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg: return fn(T{}, std::integral_constant<Op, Op::kSum>{});
      case RedOp::kProd: return fn(T{}, std::integral_constant<Op, Op::kProd>{});
      case RedOp::kMin: return fn(T{}, std::integral_constant<Op, Op::kMin>{});
      case RedOp::kMax: return fn(T{}, std::integral_constant<Op, Op::kMax>{});
      case RedOp::kPreMulSum:
        if constexpr (kFloating<T>) return fn(T{}, std::integral_constant<Op, Op::kPreMulSum>{});
        break;
      case RedOp::kBitAnd:
      case RedOp::kBitOr:
      case RedOp::kBitXor:
        if constexpr (std::is_same_v<T, uint8_t>) {
          if (op == RedOp::kBitAnd) return fn(T{}, std::integral_constant<Op, Op::kBitAnd>{});
          if (op == RedOp::kBitOr) return fn(T{}, std::integral_constant<Op, Op::kBitOr>{});
          return fn(T{}, std::integral_constant<Op, Op::kBitXor>{});
        }
        break;
    }
    CTRAN_ASSERT(false, "GPU reduction kernel: op ", redOpName(op), " has no instantiation for ",
                 dataTypeName(type));
  };
  switch (type) {
    case DataType::kInt8: return withOp(int8_t{});
    case DataType::kUint8: return withOp(uint8_t{});
    case DataType::kInt32: return withOp(int32_t{});
    case DataType::kUint32: return withOp(uint32_t{});
    case DataType::kInt64: return withOp(int64_t{});
    case DataType::kUint64: return withOp(uint64_t{});
    case DataType::kFloat16: return withOp(rcclx_half{});
    case DataType::kFloat32: return withOp(float{});
    case DataType::kFloat64: return withOp(double{});
    case DataType::kBfloat16: return withOp(rcclx_bf16{});
    default: break;
  }
  CTRAN_ASSERT(false, "GPU reduction kernel: datatype ", dataTypeName(type),
               " has no instantiation");
}

/// The Buffers of a call.
inline Buffers buffersOf(const LaunchArgs& a) {
  const size_t per = kUnitBytes / dataTypeSize(a.type);
  Buffers b;
  b.send = a.send;
  b.recv = a.recv;
  b.count = a.count;
  b.units = (a.count + per - 1) / per;
  b.aligned =
      ((reinterpret_cast<uintptr_t>(a.send) | reinterpret_cast<uintptr_t>(a.recv)) % 16) == 0;
  b.avgDivisor = a.op == RedOp::kAvg ? a.window.nranks : 1;
  b.scale = a.premulScalar;
  b.pdlOneAhead = a.pdlOneAhead;
  return b;
}

/// Throws CudaError naming `what` if the launch just made failed.
inline void checkLaunch(const char* what, int blocks, int threads) {
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching ", what, " (", blocks, " blocks x ", threads,
                  " threads)");
}

}  // namespace rcclx::gpu
