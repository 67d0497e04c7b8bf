// The window object behind ncclWindow_t (ncclCommWindowRegister) and how calls other than the
// registration ones (memory.cpp) read a window: as a copy taken while it is known to be live.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

/// A window of ncclCommWindowRegister.
struct ncclWindow_vidmem {
  ncclComm* comm = nullptr;
  void* base = nullptr;
  size_t bytes = 0;
  bool symmetric = false;  ///< device memory registered with the core (else host memory)
  uint32_t mirror = 0;     ///< host memory: its number in the communicator's Rma
};

namespace rcclx::nccl {

/// A copy of the live window `win` (its communicator's handle is never freed, so `comm` stays
/// readable); InvalidArgument naming `name` for NULL, a foreign or a deregistered handle, and
/// InvalidUsage when its communicator was destroyed or aborted.
ncclWindow_vidmem liveWindow(const void* win, const char* name);

}  // namespace rcclx::nccl
