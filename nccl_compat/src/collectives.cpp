// The collectives and point-to-point calls: each converts its arguments into Buffers and one
// core call; placement (host or GPU), counts, roots and types are checked by the core.
#include <algorithm>
#include <vector>

#include "api.hpp"
#include "comm.hpp"
#include "redop.hpp"

namespace rcclx::nccl {
namespace {

using rcclx::Buffer;

rcclx::DataType typeOf(ncclDataType_t datatype) {
  return rcclx::checkDataType(static_cast<int>(datatype), "datatype");
}

/// A NULL stream is the default stream for GPU buffers, and the only one host buffers accept.
rcclx::CallOptions optionsFor(cudaStream_t stream, double premulScalar = 1.0) {
  rcclx::CallOptions o;
  if (stream != nullptr) o.stream = static_cast<void*>(stream);
  o.premulScalar = premulScalar;
  return o;
}

/// Runs `call(core, handle)` on the locked communicator inside the entry point's boundary.
template <typename Call>
ncclResult_t collective(const char* entryPoint, ncclComm_t comm, Call&& call) {
  return boundary(
      entryPoint,
      [&] {
        CommUse use(comm);
        call(*use, use.handle());
      },
      comm);
}

std::vector<size_t> entries(const size_t* values, int n, const char* name) {
  CTRAN_CHECK(values != nullptr, ctran::InvalidArgument, name, " is NULL");
  return std::vector<size_t>(values, values + n);
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::Buffer;
using rcclx::Communicator;
using rcclx::nccl::collective;
using rcclx::nccl::optionsFor;
using rcclx::nccl::resolveOp;
using rcclx::nccl::typeOf;

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective("ncclAllReduce", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    c.allReduce(Buffer::unknown(sendbuff, count, type), Buffer::unknown(recvbuff, count, type),
                red.op, optionsFor(stream, red.scalar));
  });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduce", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    c.reduce(Buffer::unknown(sendbuff, count, type), Buffer::unknown(recvbuff, count, type), red.op,
             root, optionsFor(stream, red.scalar));
  });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective("ncclBroadcast", comm, [&](Communicator& c, const ncclComm&) {
    const auto type = typeOf(datatype);
    c.broadcast(Buffer::unknown(sendbuff, count, type), Buffer::unknown(recvbuff, count, type),
                root, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return collective("ncclBcast", comm, [&](Communicator& c, const ncclComm&) {
    const auto type = typeOf(datatype);
    const Buffer b = Buffer::unknown(buff, count, type);
    c.broadcast(b, b, root, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAllGather", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    c.allGather(Buffer::unknown(sendbuff, sendcount, type),
                Buffer::unknown(recvbuff, sendcount * h.nranks, type), optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return collective("ncclReduceScatter", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const auto red = resolveOp(h, op, type);
    c.reduceScatter(Buffer::unknown(sendbuff, recvcount * h.nranks, type),
                    Buffer::unknown(recvbuff, recvcount, type), red.op,
                    optionsFor(stream, red.scalar));
  });
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAlltoAll", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t total = count * h.nranks;
    c.allToAll(Buffer::unknown(sendbuff, total, type), Buffer::unknown(recvbuff, total, type),
               optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclAllToAllv, const void* sendbuff, const size_t sendcounts[],
         const size_t sdispls[], void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  using rcclx::nccl::entries;
  return collective("ncclAllToAllv", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const int n = h.nranks;
    const auto sc = entries(sendcounts, n, "sendcounts");
    const auto sd = entries(sdispls, n, "sdispls");
    const auto rc = entries(recvcounts, n, "recvcounts");
    const auto rd = entries(rdispls, n, "rdispls");
    // The buffers' extents: up to the furthest block each side names.
    size_t sendEnd = 0, recvEnd = 0;
    for (int i = 0; i < n; ++i) {
      sendEnd = std::max(sendEnd, sd[i] + sc[i]);
      recvEnd = std::max(recvEnd, rd[i] + rc[i]);
    }
    c.allToAllV(Buffer::unknown(sendbuff, sendEnd, type), Buffer::unknown(recvbuff, recvEnd, type),
                sc, sd, rc, rd, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclAllToAllvDynamic, const void* sendbuff, size_t sendRows,
         const int64_t* sendSplits, const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
         int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllToAllvDynamic(const void* sendbuff, size_t sendRows, const int64_t* sendSplits,
                                  const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
                                  int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAllToAllvDynamic", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    const size_t n = static_cast<size_t>(h.nranks);
    const auto splits = [n](const int64_t* p) {
      return Buffer::unknown(p, p != nullptr ? n : 0, rcclx::DataType::kInt64);
    };
    rcclx::DynamicSplits sp;
    sp.sendSplits = splits(sendSplits);
    sp.recvSplits = splits(recvSplits);
    sp.sendOffsets = splits(sendOffsets);
    sp.recvOffsets = splits(recvOffsets);
    sp.rowElems = rowElems;
    c.allToAllvDynamic(Buffer::unknown(sendbuff, sendRows * rowElems, type),
                       Buffer::unknown(recvbuff, recvRows * rowElems, type), sp,
                       optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclGather", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    c.gather(Buffer::unknown(sendbuff, count, type),
             Buffer::unknown(recvbuff, count * h.nranks, type), root, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclScatter", comm, [&](Communicator& c, const ncclComm& h) {
    const auto type = typeOf(datatype);
    c.scatter(Buffer::unknown(sendbuff, count * h.nranks, type),
              Buffer::unknown(recvbuff, count, type), root, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclSend", comm, [&](Communicator& c, const ncclComm&) {
    c.send(Buffer::unknown(sendbuff, count, typeOf(datatype)), peer, optionsFor(stream));
  });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclRecv", comm, [&](Communicator& c, const ncclComm&) {
    c.recv(Buffer::unknown(recvbuff, count, typeOf(datatype)), peer, optionsFor(stream));
  });
}
