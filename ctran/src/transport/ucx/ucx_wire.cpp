// Implementation of ucx_wire.hpp.
#include "ucx_wire.hpp"

#include <cstring>
#include <string>

#include "ctran/checks.hpp"

namespace ctran::ucx {
namespace {

// Remote keys are a few hundred bytes; anything far larger is corrupt.
constexpr uint64_t kMaxField = 1 << 20;

class Writer {
 public:
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void bytes(const Bytes& b) {
    u64(b.size());
    raw(b.data(), b.size());
  }
  Bytes take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  Bytes out_;
};

class Reader {
 public:
  Reader(const Bytes& in, int rank, const char* what) : in_(in), rank_(rank), what_(what) {}
  uint64_t u64() {
    uint64_t v;
    need(sizeof(v));
    std::memcpy(&v, in_.data() + pos_, sizeof(v));
    pos_ += sizeof(v);
    return v;
  }
  Bytes bytes() {
    uint64_t n = u64();
    if (n > kMaxField) fail(strCat("a field of ", n, " bytes"));
    need(n);
    Bytes b(in_.begin() + pos_, in_.begin() + pos_ + n);
    pos_ += n;
    return b;
  }
  void end() {
    if (pos_ != in_.size()) fail(strCat(in_.size() - pos_, " trailing bytes"));
  }

 private:
  void need(uint64_t n) {
    if (in_.size() - pos_ < n) fail(strCat("it ends after ", in_.size(), " bytes"));
  }
  [[noreturn]] void fail(const std::string& why) {
    throw RemoteError(strCat("ucx transport: rank ", rank_, "'s ", what_, " is malformed: ", why));
  }
  const Bytes& in_;
  int rank_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace

Bytes WindowWire::encode() const {
  Writer w;
  w.u64(dataAddress);
  w.u64(dataBytes);
  w.u64(numSignals);
  w.bytes(dataKey);
  return w.take();
}

WindowWire WindowWire::decode(const Bytes& blob, int rank) {
  Reader r(blob, rank, "ucx window handle");
  WindowWire x;
  x.dataAddress = r.u64();
  x.dataBytes = r.u64();
  x.numSignals = r.u64();
  x.dataKey = r.bytes();
  r.end();
  return x;
}

}  // namespace ctran::ucx
