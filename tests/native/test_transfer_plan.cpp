// rcclx_core/src/transfer_plan.hpp's sendsReadWhatReceivesWrite: what decides whether the sends
// of an exchange whose data the transport moves in place read a copy (an all_to_all in place)
// or the caller's memory.
#include <vector>

#include "check.hpp"
#include "transfer_plan.hpp"

using rcclx::Exchange;
using rcclx::sendsReadWhatReceivesWrite;
using rcclx::Transfer;

namespace {

char memory[4096];

Transfer send(size_t offset, size_t bytes) {
  return {Transfer::kSend, 1, memory + offset, nullptr, bytes};
}
Transfer recv(size_t offset, size_t bytes) {
  return {Transfer::kRecv, 1, nullptr, memory + offset, bytes};
}
Transfer self(size_t from, size_t to, size_t bytes) {
  return {Transfer::kSelf, 0, memory + from, memory + to, bytes};
}

std::vector<size_t> evenBlocks(size_t n, size_t count) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i * count;
  return v;
}

}  // namespace

TEST_CASE("in place: an exchange with nothing written, or nothing read, overlaps nothing") {
  CHECK(!sendsReadWhatReceivesWrite({}));
  CHECK(!sendsReadWhatReceivesWrite({send(0, 64), send(32, 64)}));
  CHECK(!sendsReadWhatReceivesWrite({recv(0, 64), recv(32, 64)}));
}

TEST_CASE("in place: ranges that touch do not overlap; one shared byte does") {
  CHECK(!sendsReadWhatReceivesWrite({send(0, 64), recv(64, 64)}));
  CHECK(!sendsReadWhatReceivesWrite({recv(0, 64), send(64, 64)}));
  CHECK(sendsReadWhatReceivesWrite({send(0, 65), recv(64, 64)}));
  CHECK(sendsReadWhatReceivesWrite({recv(0, 65), send(64, 64)}));
}

TEST_CASE("in place: a write that starts before the read and spans it is found among many") {
  // The overlapping write begins first and ends last; the writes between it and the read end
  // before the read begins.
  Exchange x{recv(0, 1000), recv(10, 10), recv(30, 10), send(500, 8)};
  CHECK(sendsReadWhatReceivesWrite(x));
  x[0] = recv(0, 20);
  CHECK(!sendsReadWhatReceivesWrite(x));
}

TEST_CASE("in place: an empty transfer overlaps nothing") {
  CHECK(!sendsReadWhatReceivesWrite({send(0, 0), recv(0, 64)}));
  CHECK(!sendsReadWhatReceivesWrite({send(0, 64), recv(0, 0)}));
}

TEST_CASE("in place: a copy to itself reads what it writes; one elsewhere does not") {
  CHECK(sendsReadWhatReceivesWrite({self(128, 128, 64)}));
  CHECK(!sendsReadWhatReceivesWrite({self(0, 128, 64)}));
}

TEST_CASE("in place: all_to_all_v exchanges, apart and in place") {
  for (int n : {1, 2, 3, 8}) {
    const std::vector<size_t> counts(n, 16);
    const std::vector<size_t> displs = evenBlocks(n, 16);
    for (int rank = 0; rank < n; ++rank) {
      Exchange apart = rcclx::allToAllVExchange(rank, n, memory, counts, displs, memory + 2048,
                                                counts, displs, 1);
      CHECK(!sendsReadWhatReceivesWrite(apart));
      Exchange inPlace =
          rcclx::allToAllVExchange(rank, n, memory, counts, displs, memory, counts, displs, 1);
      CHECK(sendsReadWhatReceivesWrite(inPlace));
    }
  }
}
