// The staged device back-end: GPU buffers of a communicator whose ranks span hosts. No kernel
// reaches a peer on another host, so each call copies its GPU inputs to pinned host memory,
// runs the host back-end's collective on the copies (whatever that picks across hosts: the
// hierarchical forms, ucx or tcp between hosts, low precision) and copies the outputs back.
//
// Stream order is kept: a call first waits for the work enqueued on its stream before it, and
// the copies back are enqueued on that stream. The call returns once the collective finished
// on the host (it blocks the caller, unlike a kernel launch); the copies back need not have
// finished. A call that fails leaves its GPU outputs as they were. Graph capture is refused:
// the host part cannot be captured.
#pragma once

#include <memory>

#include "device/device_backend.hpp"

namespace rcclx {

/// GPU `device`'s collectives, run by `host` on copies in pinned memory.
std::unique_ptr<DeviceBackend> makeStagedBackend(HostBackend& host, int device);

}  // namespace rcclx
