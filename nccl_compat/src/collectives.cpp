// The collectives and point-to-point calls: each converts its arguments into Buffers and one
// core call. Placement (host or GPU), roots, peers and how counts match are checked by the core;
// what only the C signature has (NULL buffers, counts whose sizes overflow, C arrays) is checked
// here, naming the parameter as nccl.h does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "api.hpp"
#include "coll_config.hpp"
#include "comm.hpp"
#include "groups.hpp"
#include "redop.hpp"

namespace rcclx::nccl {
namespace {

using rcclx::Buffer;

rcclx::DataType typeOf(ncclDataType_t datatype) {
  return rcclx::checkDataType(static_cast<int>(datatype), "");
}

/// A NULL stream is the default stream for GPU buffers, and the only one host buffers accept.
/// `config` (the nccl*Config calls' per-call options; NULL: none) for one call of `collective`.
rcclx::CallOptions optionsFor(cudaStream_t stream, double premulScalar = 1.0,
                              const ncclCollConfig_t* config = nullptr,
                              const char* collective = "") {
  rcclx::CallOptions o;
  if (stream != nullptr) o.stream = static_cast<void*>(stream);
  o.premulScalar = premulScalar;
  applyCollConfig(config, collective, o);
  return o;
}

/// Runs `call(core, handle)` on the locked communicator inside the entry point's boundary; a
/// failure inside a group is also the group's (ncclGroupEnd returns it).
template <typename Call>
ncclResult_t collective(const char* entryPoint, ncclComm_t comm, Call&& call) {
  return boundary(
      entryPoint,
      [&] {
        groups::joiningGroup(entryPoint, [&] {
          CommUse use(comm);
          call(*use, use.handle());
        });
      },
      comm);
}

/// `count` elements of `type` times `blocks` (the ranks a buffer has a block for), checked
/// against the address space (naming `countName`): the core computes byte sizes from it, and a
/// product that wraps would describe a buffer smaller than the caller's count.
size_t elements(size_t count, size_t blocks, rcclx::DataType type, const char* countName) {
  const size_t most = static_cast<size_t>(PTRDIFF_MAX) / rcclx::dataTypeSize(type) / blocks;
  CTRAN_CHECK(count <= most, ctran::InvalidArgument, countName, " ", count, " is more elements of ",
              rcclx::dataTypeName(type), " than an address space holds",
              blocks > 1 ? ctran::strCat(" (x ", blocks, " ranks)") : std::string());
  return count * blocks;
}

/// A caller's buffer of `count` elements, NULL only when empty; named by its nccl.h parameter.
Buffer buffer(const void* data, size_t count, rcclx::DataType type, const char* name) {
  CTRAN_CHECK(count == 0 || data != nullptr, ctran::InvalidArgument, name, " is NULL but holds ",
              count, " elements");
  return Buffer::unknown(data, count, type);
}

/// A buffer only the root reads or writes (ncclReduce's recvbuff, ncclBroadcast's and
/// ncclScatter's sendbuff, ncclGather's recvbuff): checked as `buffer` on the root; elsewhere it
/// may be anything, NULL included, and is left to the core, which ignores it there.
Buffer rootBuffer(const void* data, size_t count, rcclx::DataType type, const char* name, int root,
                  const ncclComm& comm) {
  if (root == comm.rank) return buffer(data, count, type, name);
  return Buffer::unknown(data, count, type);
}

std::vector<size_t> entries(const size_t* values, int n, const char* name) {
  CTRAN_CHECK(values != nullptr, ctran::InvalidArgument, name, " is NULL");
  return std::vector<size_t>(values, values + n);
}

/// The elements a side of an all-to-all-v spans: up to the end of its furthest non-empty block.
/// An empty block's displacement points at nothing, whatever its value (RCCL ignores it): it
/// becomes 0, so that it neither widens the buffer nor lies past it. Each block's end is checked
/// against the address space, so no wrapped sum reaches the core's bounds checks.
size_t extent(const std::vector<size_t>& counts, std::vector<size_t>& displs, rcclx::DataType type,
              const char* countsName, const char* displsName) {
  const size_t most = static_cast<size_t>(PTRDIFF_MAX) / rcclx::dataTypeSize(type);
  size_t end = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) {
      displs[i] = 0;
      continue;
    }
    CTRAN_CHECK(counts[i] <= most && displs[i] <= most - counts[i], ctran::InvalidArgument,
                displsName, "[", i, "] ", displs[i], " + ", countsName, "[", i, "] ", counts[i],
                " ends past any address space (", most, " elements of ", rcclx::dataTypeName(type),
                ")");
    end = std::max(end, displs[i] + counts[i]);
  }
  return end;
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::Buffer;
using rcclx::Communicator;
using rcclx::nccl::buffer;
using rcclx::nccl::collective;
using rcclx::nccl::elements;
using rcclx::nccl::optionsFor;
using rcclx::nccl::resolveOp;
using rcclx::nccl::rootBuffer;
using rcclx::nccl::typeOf;

namespace {

ncclResult_t allReduceCall(const char* entryPoint, const void* sendbuff, void* recvbuff,
                           size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream, const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    const size_t n = elements(count, 1, type, "count");
    c.allReduce(buffer(sendbuff, n, type, "sendbuff"), buffer(recvbuff, n, type, "recvbuff"),
                red.op, optionsFor(stream, red.scalar, config, "all_reduce"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return allReduceCall("ncclAllReduce", sendbuff, recvbuff, count, datatype, op, comm, stream,
                       nullptr);
}

NCCL_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config) {
  return allReduceCall("ncclAllReduceConfig", sendbuff, recvbuff, count, datatype, op, comm, stream,
                       config);
}

namespace {

ncclResult_t reduceCall(const char* entryPoint, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream, const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    const size_t n = elements(count, 1, type, "count");
    c.reduce(buffer(sendbuff, n, type, "sendbuff"),
             rootBuffer(recvbuff, n, type, "recvbuff", root, h), red.op, root,
             optionsFor(stream, red.scalar, config, "reduce"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return reduceCall("ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                    nullptr);
}

NCCL_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config) {
  return reduceCall("ncclReduceConfig", sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                    config);
}

namespace {

ncclResult_t broadcastCall(const char* entryPoint, const void* sendbuff, void* recvbuff,
                           size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream, const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t n = elements(count, 1, type, "count");
    c.broadcast(rootBuffer(sendbuff, n, type, "sendbuff", root, h),
                buffer(recvbuff, n, type, "recvbuff"), root,
                optionsFor(stream, 1.0, config, "broadcast"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return broadcastCall("ncclBroadcast", sendbuff, recvbuff, count, datatype, root, comm, stream,
                       nullptr);
}

NCCL_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config) {
  return broadcastCall("ncclBroadcastConfig", sendbuff, recvbuff, count, datatype, root, comm,
                       stream, config);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return collective("ncclBcast", comm, [&](Communicator& c, const ncclComm&) {
    const auto type = typeOf(datatype);
    const Buffer b = buffer(buff, elements(count, 1, type, "count"), type, "buff");
    c.broadcast(b, b, root, optionsFor(stream));
  });
}

namespace {

ncclResult_t allGatherCall(const char* entryPoint, const void* sendbuff, void* recvbuff,
                           size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream, const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t total = elements(sendcount, h.nranks, type, "sendcount");
    c.allGather(buffer(sendbuff, sendcount, type, "sendbuff"),
                buffer(recvbuff, total, type, "recvbuff"),
                optionsFor(stream, 1.0, config, "all_gather"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return allGatherCall("ncclAllGather", sendbuff, recvbuff, sendcount, datatype, comm, stream,
                       nullptr);
}

NCCL_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config) {
  return allGatherCall("ncclAllGatherConfig", sendbuff, recvbuff, sendcount, datatype, comm, stream,
                       config);
}

namespace {

ncclResult_t reduceScatterCall(const char* entryPoint, const void* sendbuff, void* recvbuff,
                               size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    const size_t total = elements(recvcount, h.nranks, type, "recvcount");
    c.reduceScatter(buffer(sendbuff, total, type, "sendbuff"),
                    buffer(recvbuff, recvcount, type, "recvbuff"), red.op,
                    optionsFor(stream, red.scalar, config, "reduce_scatter"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return reduceScatterCall("ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, comm,
                           stream, nullptr);
}

NCCL_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff,
         size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
         cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     cudaStream_t stream, const ncclCollConfig_t* config) {
  return reduceScatterCall("ncclReduceScatterConfig", sendbuff, recvbuff, recvcount, datatype, op,
                           comm, stream, config);
}

namespace {

ncclResult_t alltoAllCall(const char* entryPoint, const void* sendbuff, void* recvbuff,
                          size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream, const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t total = elements(count, h.nranks, type, "count");
    c.allToAll(buffer(sendbuff, total, type, "sendbuff"), buffer(recvbuff, total, type, "recvbuff"),
               optionsFor(stream, 1.0, config, "all_to_all"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return alltoAllCall("ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm, stream, nullptr);
}

NCCL_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                const ncclCollConfig_t* config) {
  return alltoAllCall("ncclAlltoAllConfig", sendbuff, recvbuff, count, datatype, comm, stream,
                      config);
}

NCCL_API(ncclResult_t, ncclAllToAllv, const void* sendbuff, const size_t sendcounts[],
         const size_t sdispls[], void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  using rcclx::nccl::entries;
  using rcclx::nccl::extent;
  return collective("ncclAllToAllv", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const int n = h.nranks;
    const auto sc = entries(sendcounts, n, "sendcounts");
    auto sd = entries(sdispls, n, "sdispls");
    const auto rc = entries(recvcounts, n, "recvcounts");
    auto rd = entries(rdispls, n, "rdispls");
    const size_t sendEnd = extent(sc, sd, type, "sendcounts", "sdispls");
    const size_t recvEnd = extent(rc, rd, type, "recvcounts", "rdispls");
    // The block a rank keeps is copied locally: both sides must agree on its size.
    const int self = h.rank;
    CTRAN_CHECK(sc[self] == rc[self], ctran::InvalidArgument, "sendcounts[", self, "] ", sc[self],
                " and recvcounts[", self, "] ", rc[self], " differ: rank ", self,
                " sends itself what it receives from itself");
    c.allToAllV(buffer(sendbuff, sendEnd, type, "sendbuff"),
                buffer(recvbuff, recvEnd, type, "recvbuff"), sc, sd, rc, rd, optionsFor(stream));
  });
}

namespace {

// The two dynamic entries: recvSplits written (the counts exchanged by the call) or read (the
// caller knows them; recvSplitsKnown).
ncclResult_t allToAllvDynamic(const char* fn, const void* sendbuff, size_t sendRows,
                              const int64_t* sendSplits, const int64_t* sendOffsets, void* recvbuff,
                              size_t recvRows, const int64_t* recvSplits, int64_t* recvOffsets,
                              size_t rowElems, ncclDataType_t datatype, bool recvSplitsKnown,
                              ncclComm_t comm, cudaStream_t stream) {
  return collective(fn, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t n = static_cast<size_t>(h.nranks);
    CTRAN_CHECK(rowElems > 0, ctran::InvalidArgument, "rowElems is 0 (a row needs an element)");
    CTRAN_CHECK(sendSplits != nullptr, ctran::InvalidArgument, "sendSplits is NULL");
    CTRAN_CHECK(recvSplits != nullptr, ctran::InvalidArgument, "recvSplits is NULL");
    const auto rowsOf = [&](size_t rows, const char* rowsName) {
      const size_t most = static_cast<size_t>(PTRDIFF_MAX) / rcclx::dataTypeSize(type);
      CTRAN_CHECK(rowElems <= most && rows <= most / rowElems, ctran::InvalidArgument, rowsName,
                  " ", rows, " x rowElems ", rowElems, " is more elements of ",
                  rcclx::dataTypeName(type), " than an address space holds");
      return rows * rowElems;
    };
    const size_t sendElems = rowsOf(sendRows, "sendRows");
    const size_t recvElems = rowsOf(recvRows, "recvRows");
    const auto splits = [n](const int64_t* p) {
      return Buffer::unknown(p, p != nullptr ? n : 0, rcclx::DataType::kInt64);
    };
    rcclx::DynamicSplits sp;
    sp.sendSplits = splits(sendSplits);
    sp.recvSplits = splits(recvSplits);
    sp.sendOffsets = splits(sendOffsets);
    sp.recvOffsets = splits(recvOffsets);
    sp.rowElems = rowElems;
    sp.recvSplitsKnown = recvSplitsKnown;
    c.allToAllvDynamic(buffer(sendbuff, sendElems, type, "sendbuff"),
                       buffer(recvbuff, recvElems, type, "recvbuff"), sp, optionsFor(stream));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllToAllvDynamic, const void* sendbuff, size_t sendRows,
         const int64_t* sendSplits, const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
         int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllToAllvDynamic(const void* sendbuff, size_t sendRows, const int64_t* sendSplits,
                                  const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
                                  int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return allToAllvDynamic("ncclAllToAllvDynamic", sendbuff, sendRows, sendSplits, sendOffsets,
                          recvbuff, recvRows, recvSplits, recvOffsets, rowElems, datatype,
                          /*recvSplitsKnown=*/false, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllToAllvDynamicKnownCounts, const void* sendbuff, size_t sendRows,
         const int64_t* sendSplits, const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
         const int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllToAllvDynamicKnownCounts(const void* sendbuff, size_t sendRows,
                                             const int64_t* sendSplits, const int64_t* sendOffsets,
                                             void* recvbuff, size_t recvRows,
                                             const int64_t* recvSplits, int64_t* recvOffsets,
                                             size_t rowElems, ncclDataType_t datatype,
                                             ncclComm_t comm, cudaStream_t stream) {
  return allToAllvDynamic("ncclAllToAllvDynamicKnownCounts", sendbuff, sendRows, sendSplits,
                          sendOffsets, recvbuff, recvRows, recvSplits, recvOffsets, rowElems,
                          datatype, /*recvSplitsKnown=*/true, comm, stream);
}

namespace {

ncclResult_t gatherCall(const char* entryPoint, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                        const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t total = elements(count, h.nranks, type, "count");
    c.gather(buffer(sendbuff, count, type, "sendbuff"),
             rootBuffer(recvbuff, total, type, "recvbuff", root, h), root,
             optionsFor(stream, 1.0, config, "gather"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return gatherCall("ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
}

NCCL_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config) {
  return gatherCall("ncclGatherConfig", sendbuff, recvbuff, count, datatype, root, comm, stream,
                    config);
}

namespace {

ncclResult_t scatterCall(const char* entryPoint, const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                         const ncclCollConfig_t* config) {
  return collective(entryPoint, comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t total = elements(count, h.nranks, type, "count");
    c.scatter(rootBuffer(sendbuff, total, type, "sendbuff", root, h),
              buffer(recvbuff, count, type, "recvbuff"), root,
              optionsFor(stream, 1.0, config, "scatter"));
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return scatterCall("ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream,
                     nullptr);
}

NCCL_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config) {
  return scatterCall("ncclScatterConfig", sendbuff, recvbuff, count, datatype, root, comm, stream,
                     config);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclSend", comm, [&](Communicator& c, const ncclComm&) {
    const auto type = typeOf(datatype);
    c.send(buffer(sendbuff, elements(count, 1, type, "count"), type, "sendbuff"), peer,
           optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclRecv", comm, [&](Communicator& c, const ncclComm&) {
    const auto type = typeOf(datatype);
    c.recv(buffer(recvbuff, elements(count, 1, type, "count"), type, "recvbuff"), peer,
           optionsFor(stream));
  });
}
