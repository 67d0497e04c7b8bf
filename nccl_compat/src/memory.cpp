// Memory and registration: ncclMemAlloc / ncclMemFree, ncclCommRegister / Deregister (local),
// ncclCommWindowRegister / Deregister (collective: the core's symmetric buffers and one-sided
// signals on the GPU, mirrors for one-sided calls on the host), ncclWinGetUserPtr.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>

#include "api.hpp"
#include "comm.hpp"
#include "ctran/device.hpp"
#include "gpu.hpp"
#include "rma.hpp"
#include "windows.hpp"

namespace rcclx::nccl {
namespace {

/// A registration of ncclCommRegister.
struct Registration {
  ncclComm* comm;
  void* base;
  size_t bytes;
};

/// The handles of one kind this library handed out and has not yet taken back. A handle given to a
/// deregistration is looked up here before it is read, so NULL, a foreign pointer or one already
/// deregistered is refused instead of dereferenced.
template <typename Handle>
class LiveHandles {
 public:
  void add(Handle* h) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(h);
  }
  /// `h` as a live handle of `owner`, else InvalidArgument naming `name` (the parameter) and
  /// `made` (the entry that makes such handles). Read under the lock: a handle of another
  /// communicator may be released meanwhile by its own thread, never one of `owner`, whose
  /// callMu the caller holds.
  Handle* owned(const void* h, const ncclComm* owner, const char* name, const char* made) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto* handle = static_cast<Handle*>(const_cast<void*>(h));
    CTRAN_CHECK(live_.count(handle) == 1, ctran::InvalidArgument, name, " ", h,
                " is not a live handle of ", made, " (foreign, or deregistered)");
    CTRAN_CHECK(handle->comm == owner, ctran::InvalidArgument, name, " ", h,
                " was registered with another communicator");
    return handle;
  }
  /// A copy of the live handle `h` of any communicator, taken under the lock (InvalidArgument
  /// as owned() says otherwise).
  Handle copy(const void* h, const char* name, const char* made) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto* handle = static_cast<const Handle*>(h);
    CTRAN_CHECK(h != nullptr, ctran::InvalidArgument, name, " is NULL");
    CTRAN_CHECK(live_.count(handle) == 1, ctran::InvalidArgument, name, " ", h,
                " is not a live handle of ", made, " (foreign, or deregistered)");
    return *handle;
  }
  /// Forgets `h` and frees it.
  void release(Handle* h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(h);
    }
    delete h;
  }

 private:
  mutable std::mutex mu_;
  std::set<const Handle*> live_;
};

LiveHandles<Registration> gRegistrations;
LiveHandles<ncclWindow_vidmem> gWindows;

// Host memory ncclMemAlloc handed out (no usable GPU), so ncclMemFree tells it from device
// memory and refuses pointers it did not allocate.
std::mutex gHostAllocMu;
std::set<void*> gHostAllocs;

constexpr size_t kHostAlignment = NCCL_WIN_REQUIRED_ALIGNMENT;

void checkRange(void* buff, size_t size) {
  CTRAN_CHECK(buff != nullptr, ctran::InvalidArgument, "buff is NULL");
  CTRAN_CHECK(size > 0, ctran::InvalidArgument, "size is 0");
}

}  // namespace

ncclWindow_vidmem liveWindow(const void* win, const char* name) {
  ncclWindow_vidmem w = gWindows.copy(win, name, "ncclCommWindowRegister");
  CTRAN_CHECK(w.comm->state.load(std::memory_order_acquire) != CommState::kDestroyed,
              ctran::InvalidUsage, name, " ", win,
              " belongs to a communicator that was destroyed or aborted");
  return w;
}

}  // namespace rcclx::nccl

using rcclx::nccl::boundary;
using rcclx::nccl::CommUse;

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  namespace nccl = rcclx::nccl;
  return boundary("ncclMemAlloc", [&] {
    CTRAN_CHECK(ptr != nullptr, ctran::InvalidArgument, "ptr is NULL");
    CTRAN_CHECK(size > 0, ctran::InvalidArgument, "size is 0");
    *ptr = nullptr;
    if (nccl::gpu::currentDevice() >= 0) {
      *ptr = nccl::gpu::allocDevice(size);
      return;
    }
    void* p = nullptr;
    // Rounded up to whole pages; a size within a page of SIZE_MAX would wrap to 0 and "succeed".
    CTRAN_CHECK(size <= SIZE_MAX - (nccl::kHostAlignment - 1), ctran::SystemError, "size ", size,
                " is more host memory than can be allocated");
    const size_t rounded =
        (size + nccl::kHostAlignment - 1) / nccl::kHostAlignment * nccl::kHostAlignment;
    CTRAN_CHECK(posix_memalign(&p, nccl::kHostAlignment, rounded) == 0, ctran::SystemError, "size ",
                size, ": cannot allocate that many bytes of host memory");
    std::lock_guard<std::mutex> lock(nccl::gHostAllocMu);
    nccl::gHostAllocs.insert(p);
    *ptr = p;
  });
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t ncclMemFree(void* ptr) {
  namespace nccl = rcclx::nccl;
  return boundary("ncclMemFree", [&] {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(nccl::gHostAllocMu);
      if (nccl::gHostAllocs.erase(ptr) == 1) {
        std::free(ptr);
        return;
      }
    }
    CTRAN_CHECK(ctran::device::pointerDevice(ptr) >= 0, ctran::InvalidArgument, "ptr ", ptr,
                " was not allocated by ncclMemAlloc");
    nccl::gpu::freeDevice(ptr);
  });
}

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return boundary("ncclCommRegister", [&] {
    CommUse use(comm, false);
    rcclx::nccl::checkRange(buff, size);
    CTRAN_CHECK(handle != nullptr, ctran::InvalidArgument, "handle is NULL");
    auto reg = std::make_unique<rcclx::nccl::Registration>(
        rcclx::nccl::Registration{&use.handle(), buff, size});
    rcclx::nccl::gRegistrations.add(reg.get());
    *handle = reg.release();
  });
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  using rcclx::nccl::gRegistrations;
  return boundary("ncclCommDeregister", [&] {
    CommUse use(comm, false);
    gRegistrations.release(
        gRegistrations.owned(handle, &use.handle(), "handle", "ncclCommRegister"));
  });
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return boundary(
      "ncclCommWindowRegister",
      [&] {
        CommUse use(comm, false);
        rcclx::nccl::checkRange(buff, size);
        CTRAN_CHECK(win != nullptr, ctran::InvalidArgument, "win is NULL");
        // Strict ordering asks for what every window of RCCLX already gives: one peer's puts
        // are applied in the order they were issued.
        constexpr int kKnownFlags = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING;
        CTRAN_CHECK((winFlags & ~kKnownFlags) == 0, ctran::InvalidArgument, "winFlags 0x", std::hex,
                    winFlags, std::dec,
                    " has bits other than NCCL_WIN_COLL_SYMMETRIC and NCCL_WIN_STRICT_ORDERING");
        auto w = std::make_unique<ncclWindow_vidmem>();
        w->comm = &use.handle();
        w->base = buff;
        w->bytes = size;
        // Device memory becomes one of the core's symmetric buffers (collective, zero-copy),
        // which one-sided calls on a stream put into; host memory gets a mirror that peers'
        // one-sided puts on the calling thread reach (collective, rma.hpp).
        if (ctran::device::pointerDevice(buff) >= 0) {
          // The signals those calls share come with the first such window (collective, as
          // this call is); on a host-memory communicator, or one across hosts, the
          // registration refuses below.
          ncclComm& h = use.handle();
          if (h.device >= 0 && use->topology().nHosts == 1 && !h.gpuSignals) {
            use->openDeviceSignals();
            h.gpuSignals = true;
          }
          use->registerSymmetric(buff, size);
          w->symmetric = true;
        } else {
          auto& rma = use.handle().rma;
          if (!rma) rma = std::make_shared<rcclx::nccl::Rma>(*use);
          w->mirror = rma->addWindow(*use, buff, size);
        }
        rcclx::nccl::gWindows.add(w.get());
        *win = w.release();
      },
      comm);
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return boundary(
      "ncclCommWindowDeregister",
      [&] {
        CommUse use(comm, false);
        auto& windows = rcclx::nccl::gWindows;
        ncclWindow_vidmem* w = windows.owned(win, &use.handle(), "win", "ncclCommWindowRegister");
        if (w->symmetric) {
          use->freeSymmetric(w->base);
        } else {
          // No peer may still put into the mirror: every rank deregisters it together.
          use->barrier();
          use.handle().rma->removeWindow(w->mirror);
        }
        windows.release(w);
      },
      comm);
}

NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  return boundary(
      "ncclWinGetUserPtr",
      [&] {
        CommUse use(comm, false);
        CTRAN_CHECK(outUserPtr != nullptr, ctran::InvalidArgument, "outUserPtr is NULL");
        *outUserPtr =
            rcclx::nccl::gWindows.owned(win, &use.handle(), "win", "ncclCommWindowRegister")->base;
      },
      comm);
}
