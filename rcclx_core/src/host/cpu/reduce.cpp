// Implementation of reduce.hpp: one template per shape, dispatched on (type, op).
#include "host/cpu/reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ctran/checks.hpp"
#include "host/cpu/numeric.hpp"

namespace rcclx::cpu {
namespace {

// Storage codecs: how an element is widened for arithmetic and narrowed back.
template <typename T>
struct Plain {
  using Storage = T;
  using Acc = T;
  static Acc load(Storage v) { return v; }
  static Storage store(Acc a) { return a; }
};
struct Half {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage v) { return halfToFloat(v); }
  static Storage store(Acc a) { return floatToHalf(a); }
};
struct Bf16 {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage v) { return bf16ToFloat(v); }
  static Storage store(Acc a) { return floatToBf16(a); }
};
struct E4m3 {
  using Storage = uint8_t;
  using Acc = float;
  static Acc load(Storage v) { return e4m3Table()[v]; }
  static Storage store(Acc a) { return floatToE4m3(a); }
};
struct E5m2 {
  using Storage = uint8_t;
  using Acc = float;
  static Acc load(Storage v) { return e5m2Table()[v]; }
  static Storage store(Acc a) { return floatToE5m2(a); }
};

// Signed integers wrap on overflow (as NCCL's do): compute in the unsigned type.
template <typename A, bool = std::is_integral_v<A>>
struct WrappingOf {
  using type = A;
};
template <typename A>
struct WrappingOf<A, true> {
  using type = std::make_unsigned_t<A>;
};
template <typename A>
using Wrapping = typename WrappingOf<A>::type;

struct OpSum {
  template <typename A>
  static A apply(A a, A b) {
    return static_cast<A>(static_cast<Wrapping<A>>(a) + static_cast<Wrapping<A>>(b));
  }
};
struct OpProd {
  template <typename A>
  static A apply(A a, A b) {
    return static_cast<A>(static_cast<Wrapping<A>>(a) * static_cast<Wrapping<A>>(b));
  }
};
struct OpMax {
  template <typename A>
  static A apply(A a, A b) {
    return a < b ? b : a;
  }
};
struct OpMin {
  template <typename A>
  static A apply(A a, A b) {
    return b < a ? b : a;
  }
};
struct OpAnd {
  template <typename A>
  static A apply(A a, A b) {
    return a & b;
  }
};
struct OpOr {
  template <typename A>
  static A apply(A a, A b) {
    return a | b;
  }
};
struct OpXor {
  template <typename A>
  static A apply(A a, A b) {
    return a ^ b;
  }
};

template <typename C, typename Op>
void reduce2Impl(void* dst, const void* a, const void* b, size_t n) {
  using S = typename C::Storage;
  auto* d = static_cast<S*>(dst);
  auto* x = static_cast<const S*>(a);
  auto* y = static_cast<const S*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = C::store(Op::apply(C::load(x[i]), C::load(y[i])));
}

// Works in blocks so the accumulator stays in L1 and the inner loops vectorise. The first pass
// combines the first two sources and the last pass stores as it combines the last one, so n
// sources cost n - 1 passes over a block (two sources: one, as reduce2); the operations and
// their order are those of a left fold widened and rounded once, whatever the number of passes.
template <typename C, typename Op>
void reduceManyImpl(void* dst, const void* const* srcs, int numSrcs, size_t n) {
  using S = typename C::Storage;
  using A = typename C::Acc;
  auto* d = static_cast<S*>(dst);
  auto src = [&](int s) { return static_cast<const S*>(srcs[s]); };
  if (numSrcs == 1) {
    if (src(0) != d) {
      for (size_t i = 0; i < n; ++i) d[i] = C::store(C::load(src(0)[i]));
    }
    return;
  }
  if (numSrcs == 2) {
    reduce2Impl<C, Op>(dst, srcs[0], srcs[1], n);
    return;
  }
  constexpr size_t kBlock = 1024;
  A acc[kBlock];
  const int last = numSrcs - 1;
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t len = std::min(kBlock, n - base);
    const S* s0 = src(0) + base;
    const S* s1 = src(1) + base;
    for (size_t i = 0; i < len; ++i) acc[i] = Op::apply(C::load(s0[i]), C::load(s1[i]));
    for (int s = 2; s < last; ++s) {
      const S* sp = src(s) + base;
      for (size_t i = 0; i < len; ++i) acc[i] = Op::apply(acc[i], C::load(sp[i]));
    }
    const S* sl = src(last) + base;
    for (size_t i = 0; i < len; ++i) d[base + i] = C::store(Op::apply(acc[i], C::load(sl[i])));
  }
}

template <typename C>
void scaleImpl(void* dst, const void* src, size_t n, double factor) {
  using S = typename C::Storage;
  using A = typename C::Acc;
  auto* d = static_cast<S*>(dst);
  auto* s = static_cast<const S*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = C::store(static_cast<A>(C::load(s[i]) * factor));
}

template <typename C>
void divideImpl(void* dst, size_t n, int divisor) {
  using S = typename C::Storage;
  using A = typename C::Acc;
  auto* d = static_cast<S*>(dst);
  const A div = static_cast<A>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = C::store(C::load(d[i]) / div);
}

// Calls fn.template operator()<Codec>() for `type`.
template <typename Fn>
void withCodec(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(Plain<int8_t>{});
    case DataType::kUint8: return fn(Plain<uint8_t>{});
    case DataType::kInt32: return fn(Plain<int32_t>{});
    case DataType::kUint32: return fn(Plain<uint32_t>{});
    case DataType::kInt64: return fn(Plain<int64_t>{});
    case DataType::kUint64: return fn(Plain<uint64_t>{});
    case DataType::kFloat16: return fn(Half{});
    case DataType::kFloat32: return fn(Plain<float>{});
    case DataType::kFloat64: return fn(Plain<double>{});
    case DataType::kBfloat16: return fn(Bf16{});
    case DataType::kFloat8E4M3: return fn(E4m3{});
    case DataType::kFloat8E5M2: return fn(E5m2{});
  }
  CTRAN_ASSERT(false, "unknown datatype ", static_cast<int>(type));
}

template <typename C>
constexpr bool kIntegral = std::is_integral_v<typename C::Acc>;

// Calls fn(Codec{}, Op{}) for (type, op); AVG and PREMUL_SUM combine as SUM.
template <typename Fn>
void withCodecOp(DataType type, RedOp op, Fn&& fn) {
  withCodec(type, [&](auto codec) {
    using C = decltype(codec);
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
      case RedOp::kPreMulSum: return fn(codec, OpSum{});
      case RedOp::kProd: return fn(codec, OpProd{});
      case RedOp::kMax: return fn(codec, OpMax{});
      case RedOp::kMin: return fn(codec, OpMin{});
      case RedOp::kBitAnd:
      case RedOp::kBitOr:
      case RedOp::kBitXor:
        if constexpr (kIntegral<C>) {
          if (op == RedOp::kBitAnd) return fn(codec, OpAnd{});
          if (op == RedOp::kBitOr) return fn(codec, OpOr{});
          return fn(codec, OpXor{});
        }
        break;
    }
    CTRAN_ASSERT(false, "op ", redOpName(op), " reached a kernel for ", dataTypeName(type));
  });
}

}  // namespace

void reduce2(void* dst, const void* a, const void* b, size_t count, DataType type, RedOp op) {
  if (count == 0) return;
  withCodecOp(type, op, [&](auto codec, auto o) {
    reduce2Impl<decltype(codec), decltype(o)>(dst, a, b, count);
  });
}

void reduceMany(void* dst, const void* const* srcs, int numSrcs, size_t count, DataType type,
                RedOp op) {
  if (count == 0) return;
  CTRAN_ASSERT(numSrcs >= 1);
  withCodecOp(type, op, [&](auto codec, auto o) {
    reduceManyImpl<decltype(codec), decltype(o)>(dst, srcs, numSrcs, count);
  });
}

void scale(void* dst, const void* src, size_t count, DataType type, double factor) {
  if (count == 0) return;
  withCodec(type, [&](auto codec) { scaleImpl<decltype(codec)>(dst, src, count, factor); });
}

void divide(void* dst, size_t count, DataType type, int divisor) {
  if (count == 0) return;
  withCodec(type, [&](auto codec) { divideImpl<decltype(codec)>(dst, count, divisor); });
}

const float* e4m3Table() {
  static const auto* table = [] {
    static float t[256];
    for (int i = 0; i < 256; ++i) t[i] = fp8ToFloat<4, 3>(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

const float* e5m2Table() {
  static const auto* table = [] {
    static float t[256];
    for (int i = 0; i < 256; ++i) t[i] = fp8ToFloat<5, 2>(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

}  // namespace rcclx::cpu
