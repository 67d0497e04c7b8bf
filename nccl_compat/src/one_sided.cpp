// NCCL 2.31's one-sided host calls: ncclPutSignal, ncclSignal, ncclWaitSignal, on windows of
// host memory (rma.hpp says how a put reaches a peer's registered memory). Each runs on the
// calling thread and has completed its part when it returns (a put: the data has left
// localbuff; a wait: the data of the puts it waited for is in this rank's windows). RCCLX
// has one signal per ordered pair of ranks: sigIdx and ctx must be 0.
#include <cstdint>
#include <string>

#include "api.hpp"
#include "comm.hpp"
#include "ctran/device.hpp"
#include "groups.hpp"
#include "rcclx/types.hpp"
#include "rma.hpp"
#include "windows.hpp"

namespace rcclx::nccl {
namespace {

/// The checks every one-sided call shares: not inside a group, a host-memory stream, `peer`
/// (named `peerName`, -1: none) a rank, the signal index and context 0, no flags.
void checkCall(const ncclComm& c, cudaStream_t stream, int peer, const char* peerName, int sigIdx,
               int ctx, unsigned int flags) {
  CTRAN_CHECK(!groups::active(), ctran::InvalidUsage,
              "called inside ncclGroupStart / ncclGroupEnd: one-sided calls are not grouped");
  CTRAN_CHECK(stream == nullptr, ctran::InvalidArgument, "stream ",
              static_cast<const void*>(stream),
              " is not NULL: one-sided calls run on host-memory windows, on the calling thread");
  if (peerName != nullptr) {
    CTRAN_CHECK(peer >= 0 && peer < c.nranks, ctran::InvalidArgument, peerName, " ", peer,
                " is not a rank of the communicator (0..", c.nranks - 1, ")");
  }
  CTRAN_CHECK(sigIdx == 0, ctran::InvalidArgument, "sigIdx ", sigIdx,
              " is not 0: RCCLX has one signal per pair of ranks");
  CTRAN_CHECK(ctx == 0, ctran::InvalidArgument, "ctx ", ctx,
              " is not 0: RCCLX has one context per communicator");
  CTRAN_CHECK(flags == 0, ctran::InvalidArgument, "flags 0x", std::hex, flags, std::dec,
              " has bits set: none is defined");
}

/// The communicator's one-sided channel; InvalidUsage before any host window was registered.
Rma& channel(ncclComm& c) {
  CTRAN_CHECK(c.rma != nullptr, ctran::InvalidUsage,
              "no host-memory window was registered on comm: ncclCommWindowRegister makes the "
              "signals (and the windows puts reach)");
  return *c.rma;
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;
using rcclx::nccl::CommUse;

NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
         unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  return boundary(
      "ncclPutSignal",
      [&] {
        CommUse use(comm, false);
        ncclComm& c = use.handle();
        rcclx::nccl::checkCall(c, stream, peer, "peer", sigIdx, ctx, flags);
        const rcclx::DataType type = rcclx::checkDataType(static_cast<int>(datatype), "datatype");
        const ncclWindow_vidmem w = rcclx::nccl::liveWindow(peerWin, "peerWin");
        CTRAN_CHECK(w.comm == &c, ctran::InvalidArgument, "peerWin ",
                    static_cast<const void*>(peerWin), " was registered with another communicator");
        CTRAN_CHECK(!w.symmetric, ctran::InvalidUsage, "peerWin ",
                    static_cast<const void*>(peerWin),
                    " is on device memory: one-sided calls are provided on host-memory windows");
        const size_t size = rcclx::dataTypeSize(type);
        CTRAN_CHECK(peerWinOffset <= w.bytes && count <= (w.bytes - peerWinOffset) / size,
                    ctran::InvalidArgument, "count ", count, " elements of ",
                    rcclx::dataTypeName(type), " at peerWinOffset ", peerWinOffset,
                    " do not fit the window's ", w.bytes, " bytes");
        CTRAN_CHECK(count == 0 || localbuff != nullptr, ctran::InvalidArgument,
                    "localbuff is NULL but holds ", count, " elements");
        CTRAN_CHECK(count == 0 || ctran::device::pointerDevice(localbuff) < 0, ctran::InvalidUsage,
                    "localbuff ", localbuff,
                    " is device memory: one-sided calls are provided on host memory");
        rcclx::nccl::channel(c).put(peer, w.mirror, peerWinOffset, localbuff, count * size);
      },
      comm);
}

NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream) {
  return boundary(
      "ncclSignal",
      [&] {
        CommUse use(comm, false);
        rcclx::nccl::checkCall(use.handle(), stream, peer, "peer", sigIdx, ctx, flags);
        rcclx::nccl::channel(use.handle()).signal(peer);
      },
      comm);
}

NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream) {
  return boundary(
      "ncclWaitSignal",
      [&] {
        CommUse use(comm, false);
        ncclComm& c = use.handle();
        rcclx::nccl::checkCall(c, stream, -1, nullptr, 0, 0, 0);
        CTRAN_CHECK(nDesc >= 0, ctran::InvalidArgument, "nDesc ", nDesc, " is negative");
        CTRAN_CHECK(nDesc == 0 || signalDescs != nullptr, ctran::InvalidArgument,
                    "signalDescs is NULL but nDesc is ", nDesc);
        // Every descriptor is checked before any wait starts.
        bool waits = false;
        for (int i = 0; i < nDesc; ++i) {
          const ncclWaitSignalDesc_t& d = signalDescs[i];
          const std::string at = ctran::strCat("signalDescs[", i, "].");
          CTRAN_CHECK(d.opCnt >= 0, ctran::InvalidArgument, at, "opCnt ", d.opCnt, " is negative");
          CTRAN_CHECK(d.peer >= 0 && d.peer < c.nranks, ctran::InvalidArgument, at, "peer ", d.peer,
                      " is not a rank of the communicator (0..", c.nranks - 1, ")");
          CTRAN_CHECK(d.sigIdx == 0, ctran::InvalidArgument, at, "sigIdx ", d.sigIdx,
                      " is not 0: RCCLX has one signal per pair of ranks");
          CTRAN_CHECK(d.ctx == 0, ctran::InvalidArgument, at, "ctx ", d.ctx,
                      " is not 0: RCCLX has one context per communicator");
          waits = waits || d.opCnt > 0;
        }
        if (!waits) return;
        rcclx::nccl::Rma& rma = rcclx::nccl::channel(c);
        for (int i = 0; i < nDesc; ++i) {
          rma.wait(signalDescs[i].peer, static_cast<uint64_t>(signalDescs[i].opCnt));
        }
      },
      comm);
}
