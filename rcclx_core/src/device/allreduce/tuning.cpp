// Implementation of tuning.hpp, and StagingLayout::of (launch.hpp): the host-side sizes of the
// GPU allreduce, compiled in every build.
#include "device/allreduce/tuning.hpp"

#include <cstdlib>

#include "ctran/checks.hpp"

namespace rcclx::gpu {
namespace {

size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

std::string fieldNames() {
  std::string names;
  for (const TuningField& f : kTuningFields) {
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

const TuningField* findField(const std::string& name) {
  for (const TuningField& f : kTuningFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

/// Stores `v` (already known to be a non-negative integer, positive unless the field allows 0)
/// into field `f` of `t`, after the checks of the field's kind.
void store(Tuning& t, const TuningField& f, long long v) {
  switch (f.kind) {
    case TuningKind::kThreads:
      CTRAN_CHECK(v % kWarpThreads == 0 && v <= kMaxThreads, ctran::InvalidArgument,
                  "GPU tuning: ", f.name, "=", v, " must be a multiple of ", kWarpThreads,
                  " up to ", kMaxThreads);
      t.*f.intMember = static_cast<int>(v);
      return;
    case TuningKind::kBlocks:
    case TuningKind::kLineBlocks: {
      const int limit = f.kind == TuningKind::kBlocks ? kMaxBlocks : kMaxLineBlocks;
      CTRAN_CHECK(v <= limit, ctran::InvalidArgument, "GPU tuning: ", f.name, "=", v,
                  " exceeds the ", limit, "-block limit");
      t.*f.intMember = static_cast<int>(v);
      return;
    }
    case TuningKind::kSize: t.*f.sizeMember = static_cast<size_t>(v); return;
    case TuningKind::kBool:
      CTRAN_CHECK(v <= 1, ctran::InvalidArgument, "GPU tuning: ", f.name, "=", v,
                  " must be 0 or 1");
      t.*f.boolMember = v == 1;
      return;
  }
}

}  // namespace

StagingLayout StagingLayout::of(int nranks, size_t flatBytes, size_t rawBytes, size_t linesBytes) {
  StagingLayout l;
  l.llSlotBytes = roundUp(flatBytes, kUnitBytes) / kUnitBytes * kLlBytesPerUnit;
  l.llOffset = 0;
  l.rawOffset = roundUp(static_cast<size_t>(nranks) * l.llSlotBytes, 256);
  l.rawBytes = roundUp(rawBytes, 256);
  l.linesOffset = l.rawOffset + l.rawBytes;
  l.linesMaxBytes = linesBytes;
  l.linesSlotBytes = linesBytes ? linesPerSegment(linesBytes, nranks) * kLineBytes : 0;
  l.halfBytes = l.linesOffset + 2 * static_cast<size_t>(nranks) * l.linesSlotBytes;
  return l;
}

void Tuning::apply(const std::string& spec) {
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    CTRAN_CHECK(eq != std::string::npos, ctran::InvalidArgument, "GPU tuning: '", item,
                "' is not name=value (in '", spec, "')");
    const std::string name = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    const TuningField* f = findField(name);
    CTRAN_CHECK(f != nullptr, ctran::InvalidArgument, "GPU tuning: unknown name '", name, "' (",
                fieldNames(), ")");
    char* stop = nullptr;
    const long long v = std::strtoll(text.c_str(), &stop, 10);
    CTRAN_CHECK(!text.empty() && *stop == '\0' && (v > 0 || (f->zeroAllowed && v == 0)),
                ctran::InvalidArgument, "GPU tuning: ", name, "=", text, " must be a ",
                f->zeroAllowed ? "non-negative" : "positive", " integer");
    store(*this, *f, v);
  }
}

std::string Tuning::spec() const {
  std::string out;
  for (const TuningField& f : kTuningFields) {
    if (!out.empty()) out += ',';
    out += f.name;
    out += '=';
    switch (f.kind) {
      case TuningKind::kThreads:
      case TuningKind::kBlocks:
      case TuningKind::kLineBlocks: out += std::to_string(this->*f.intMember); break;
      case TuningKind::kSize: out += std::to_string(this->*f.sizeMember); break;
      case TuningKind::kBool: out += (this->*f.boolMember) ? '1' : '0'; break;
    }
  }
  return out;
}

}  // namespace rcclx::gpu
