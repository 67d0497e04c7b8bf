// NCCL 2.31's one-sided calls: ncclPutSignal, ncclSignal, ncclWaitSignal. The stream says where
// a call runs:
//  * NULL: on windows of host memory, on the calling thread (rma.hpp says how a put reaches a
//    peer's registered memory). A call has done its part when it returns (a put: the data has
//    left localbuff; a wait: the data of the puts it waited for is in this rank's windows).
//  * any other stream: on windows of device memory, through the core's one-sided GPU calls
//    (rcclx/communicator.hpp): a call enqueues its work on the stream and returns; work enqueued
//    after a wait sees the puts whose signals it waited for. Capturable in CUDA graphs.
// The two have signals of their own: a signal sent on a stream is waited for on a stream. RCCLX
// has one signal per ordered pair of ranks and communicator: sigIdx and ctx must be 0.
#include <cstdint>
#include <string>
#include <vector>

#include "api.hpp"
#include "comm.hpp"
#include "ctran/device.hpp"
#include "gpu.hpp"
#include "groups.hpp"
#include "rcclx/types.hpp"
#include "rma.hpp"
#include "windows.hpp"

namespace rcclx::nccl {
namespace {

const void* address(cudaStream_t stream) { return static_cast<const void*>(stream); }

/// The checks every one-sided call shares: not inside a group, `peer` (named `peerName`, -1:
/// none) a rank, the signal index and context 0, no flags.
void checkCall(const ncclComm& c, int peer, const char* peerName, int sigIdx, int ctx,
               unsigned int flags) {
  CTRAN_CHECK(!groups::active(), ctran::InvalidUsage,
              "called inside ncclGroupStart / ncclGroupEnd: one-sided calls are not grouped");
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

/// The communicator's one-sided channel on host memory, for a call with a NULL stream;
/// InvalidUsage before any host window was registered.
Rma& hostChannel(ncclComm& c) {
  CTRAN_CHECK(c.rma != nullptr, ctran::InvalidUsage,
              "no host-memory window was registered on comm: ncclCommWindowRegister makes the "
              "signals (and the windows puts reach)",
              c.gpuSignals ? "; the stream is NULL, which selects the host-memory windows' "
                             "signals: calls on device-memory windows take a stream"
                           : "");
  return *c.rma;
}

/// The core communicator, for a call enqueued on `stream` (not NULL); InvalidUsage naming why
/// the communicator has no GPU signals.
rcclx::Communicator& gpuChannel(const CommUse& use, cudaStream_t stream) {
  const ncclComm& c = use.handle();
  CTRAN_CHECK(c.device >= 0, ctran::InvalidUsage, "stream ", address(stream),
              " is not NULL, which enqueues the call on a GPU, but comm is a host-memory "
              "communicator (",
              gpu::whyNoDevice(), "): one-sided calls on host-memory windows take a NULL stream");
  CTRAN_CHECK(c.gpuSignals, ctran::InvalidUsage,
              "no device-memory window was registered on comm: ncclCommWindowRegister on device "
              "memory makes the signals of calls on a stream (stream ",
              address(stream), "; a NULL stream selects the host-memory windows' signals)");
  return *use;
}

/// A put into a host-memory window: on the calling thread, from host memory.
void putHost(ncclComm& c, const ncclWindow_vidmem& w, const void* win, int peer, size_t offset,
             const void* localbuff, size_t bytes, cudaStream_t stream) {
  CTRAN_CHECK(stream == nullptr, ctran::InvalidArgument, "stream ", address(stream),
              " is not NULL: one-sided calls on host-memory windows (peerWin ", win,
              ") run on the calling thread");
  const int where = bytes == 0 ? -1 : ctran::device::pointerDevice(localbuff);
  CTRAN_CHECK(where < 0, ctran::InvalidUsage, "localbuff ", localbuff, " is device memory (GPU ",
              where, ") but peerWin ", win,
              " is on host memory: a put into a host-memory window copies from host memory");
  hostChannel(c).put(peer, w.mirror, offset, localbuff, bytes);
}

/// A put into a device-memory window: enqueued on `stream`, from this GPU's memory.
void putDevice(const CommUse& use, const ncclWindow_vidmem& w, const void* win, int peer,
               size_t offset, const void* localbuff, size_t bytes, cudaStream_t stream) {
  const ncclComm& c = use.handle();
  CTRAN_CHECK(stream != nullptr, ctran::InvalidArgument, "stream is NULL but peerWin ", win,
              " is on device memory: one-sided calls on device-memory windows are enqueued on a "
              "stream (cudaStreamLegacy for the legacy default stream); NULL selects the "
              "host-memory windows");
  const int where = bytes == 0 ? c.device : ctran::device::pointerDevice(localbuff);
  CTRAN_CHECK(
      where == c.device, ctran::InvalidUsage, "localbuff ", localbuff,
      where < 0 ? std::string(" is host memory") : ctran::strCat(" is memory of GPU ", where),
      " but peerWin ", win, " is on device memory of GPU ", c.device,
      ": a put into a device-memory window copies from device memory of its "
      "communicator's GPU");
  rcclx::Communicator& core = gpuChannel(use, stream);
  core.devicePutSignal(peer, w.base, offset, localbuff, bytes, stream);
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
        rcclx::nccl::checkCall(c, peer, "peer", sigIdx, ctx, flags);
        const rcclx::DataType type = rcclx::checkDataType(static_cast<int>(datatype), "");
        const ncclWindow_vidmem w = rcclx::nccl::liveWindow(peerWin, "peerWin");
        const void* win = static_cast<const void*>(peerWin);
        CTRAN_CHECK(w.comm == &c, ctran::InvalidArgument, "peerWin ", win,
                    " was registered with another communicator");
        const size_t size = rcclx::dataTypeSize(type);
        CTRAN_CHECK(peerWinOffset <= w.bytes && count <= (w.bytes - peerWinOffset) / size,
                    ctran::InvalidArgument, "count ", count, " elements of ",
                    rcclx::dataTypeName(type), " at peerWinOffset ", peerWinOffset,
                    " do not fit the window's ", w.bytes, " bytes");
        CTRAN_CHECK(count == 0 || localbuff != nullptr, ctran::InvalidArgument,
                    "localbuff is NULL but holds ", count, " elements");
        if (w.symmetric) {
          rcclx::nccl::putDevice(use, w, win, peer, peerWinOffset, localbuff, count * size, stream);
        } else {
          rcclx::nccl::putHost(c, w, win, peer, peerWinOffset, localbuff, count * size, stream);
        }
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
        rcclx::nccl::checkCall(use.handle(), peer, "peer", sigIdx, ctx, flags);
        if (stream == nullptr) {
          rcclx::nccl::hostChannel(use.handle()).signal(peer);
        } else {
          rcclx::nccl::gpuChannel(use, stream).deviceSignal(peer, stream);
        }
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
        rcclx::nccl::checkCall(c, -1, nullptr, 0, 0, 0);
        CTRAN_CHECK(nDesc >= 0, ctran::InvalidArgument, "nDesc ", nDesc, " is negative");
        CTRAN_CHECK(nDesc == 0 || signalDescs != nullptr, ctran::InvalidArgument,
                    "signalDescs is NULL but nDesc is ", nDesc);
        // Every descriptor is checked before any wait starts; a peer's descriptors add up.
        std::vector<uint64_t> counts(static_cast<size_t>(c.nranks), 0);
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
          counts[static_cast<size_t>(d.peer)] += static_cast<uint64_t>(d.opCnt);
          waits = waits || d.opCnt > 0;
        }
        if (!waits) return;
        if (stream != nullptr) {
          rcclx::nccl::gpuChannel(use, stream).deviceWaitSignals(counts, stream);
          return;
        }
        rcclx::nccl::Rma& rma = rcclx::nccl::hostChannel(c);
        for (int i = 0; i < nDesc; ++i) {
          rma.wait(signalDescs[i].peer, static_cast<uint64_t>(signalDescs[i].opCnt));
        }
      },
      comm);
}
