// The front door from C++, as the NCCL C ABI calls it: one communicator of one rank, Buffers
// whose placement the communicator finds itself (raw pointers), and the errors a bad call gets,
// each naming the argument and its value.
#include <cstdint>
#include <memory>
#include <vector>

#include "check.hpp"
#include "ctran/bootstrap.hpp"
#include "ctran/checks.hpp"
#include "rcclx/communicator.hpp"

using rcclx::Buffer;
using rcclx::CallOptions;
using rcclx::CommConfig;
using rcclx::Communicator;
using rcclx::DataType;
using rcclx::RedOp;

namespace {

std::unique_ptr<Communicator> oneRank(const CommConfig& config = {}) {
  return std::make_unique<Communicator>(
      ctran::Bootstrap::fromUniqueId(ctran::createUniqueId(), 0, 1), config);
}

}  // namespace

TEST_CASE("front door: raw host pointers are located and run on the host") {
  auto comm = oneRank();
  std::vector<float> in{1, 2, 3, 4}, out(4, 0);
  auto work = comm->allReduce(Buffer::unknown(in.data(), 4, DataType::kFloat32),
                              Buffer::unknown(out.data(), 4, DataType::kFloat32), RedOp::kSum);
  CHECK(work == nullptr);  // synchronous: done on return
  CHECK_EQ(out[3], 4.0f);
  std::vector<int64_t> gathered(1, 0);
  int64_t mine = 7;
  comm->allGather(Buffer::host(&mine, 1, DataType::kInt64),
                  Buffer::host(gathered.data(), 1, DataType::kInt64));
  CHECK_EQ(gathered[0], 7);
  CallOptions async;
  async.async = true;
  auto pending =
      comm->allReduce(Buffer::host(in.data(), 4, DataType::kFloat32),
                      Buffer::host(in.data(), 4, DataType::kFloat32), RedOp::kMax, async);
  CHECK(pending != nullptr);
  pending->wait();
  CHECK(pending->description() == "all_reduce #3");  // the third collective
  comm->destroy();
}

TEST_CASE("front door: errors name the argument and the value") {
  auto comm = oneRank();
  std::vector<float> a(4), b(5);
  std::vector<double> d(4);
  const Buffer fa = Buffer::host(a.data(), 4, DataType::kFloat32);
  CHECK_THROWS_AS(comm->allReduce(fa, Buffer::host(b.data(), 5, DataType::kFloat32), RedOp::kSum),
                  ctran::InvalidArgument, "all_reduce: recvbuf has 5 elements but needs 4");
  CHECK_THROWS_AS(comm->allReduce(fa, Buffer::host(d.data(), 4, DataType::kFloat64), RedOp::kSum),
                  ctran::InvalidArgument, "sendbuf is float32 but recvbuf is float64");
  CHECK_THROWS_AS(comm->allReduce(Buffer::host(nullptr, 4, DataType::kFloat32), fa, RedOp::kSum),
                  ctran::InvalidArgument, "all_reduce: sendbuf is null (count 4)");
  CHECK_THROWS_AS(comm->allReduce(fa, fa, RedOp::kBitAnd), ctran::InvalidArgument, "float32");
  Buffer readOnly = fa;
  readOnly.writable = false;
  CHECK_THROWS_AS(comm->allReduce(fa, readOnly, RedOp::kSum), ctran::InvalidArgument,
                  "sendbuf is read-only (in place");
  CallOptions onStream;
  onStream.stream = nullptr;
  CHECK_THROWS_AS(comm->allReduce(fa, fa, RedOp::kSum, onStream), ctran::InvalidArgument,
                  "stream= applies to GPU buffers only");
  CHECK_THROWS_AS(comm->broadcast(fa, fa, 1), ctran::InvalidArgument,
                  "broadcast: root 1 is out of range for a communicator of 1 ranks");
  CHECK_THROWS_AS(comm->send(fa, 3), ctran::InvalidArgument, "send: peer 3 is out of range");
  CHECK_THROWS_AS(comm->allGatherV(fa, fa, {4, 4}), ctran::InvalidArgument,
                  "all_gather_v: recv_counts has 2 entries for 1 ranks");
  CHECK_THROWS_AS(comm->allToAllV(fa, fa, {2}, {3}, {2}, {}), ctran::InvalidArgument,
                  "sendbuf block 0 (displacement 3, count 2) ends past its 4 elements");
  CHECK_THROWS_AS(
      comm->allReduce(Buffer::onDevice(a.data(), 4, DataType::kFloat32, 0), fa, RedOp::kSum),
      ctran::InvalidArgument, "sendbuf is on cuda:0 but the communicator was created without");
  comm->destroy();
  CHECK_THROWS_AS(comm->allReduce(fa, fa, RedOp::kSum), ctran::InvalidUsage,
                  "all_reduce: the communicator was already destroyed");
}

TEST_CASE("front door: hints configure one communicator, validated at creation") {
  CommConfig forced;
  forced.hints = {{"RCCLX_ALLREDUCE_ALGO", "ring"}, {"RCCLX_DDA_ENABLE", "0"}};
  auto comm = oneRank(forced);
  std::vector<float> x{1, 2};
  CallOptions large;
  large.algo = "dda_large";  // a per-call hint still overrides, and is checked
  CHECK_THROWS_AS(
      comm->allReduce(Buffer::host(x.data(), 2, DataType::kFloat32),
                      Buffer::host(x.data(), 2, DataType::kFloat32), RedOp::kSum, large),
      ctran::InvalidArgument,
      "without direct access (tcp transport or RCCLX_DDA_ENABLE=0) "
      "(algo='dda_large')");
  comm->destroy();
  CommConfig bad;
  bad.hints = {{"RCCLX_P2P_SLOTS", "many"}};
  CHECK_THROWS_AS(oneRank(bad), ctran::InvalidArgument, "hint RCCLX_P2P_SLOTS='many'");
}
