// The staged device back-end: GPU buffers of a communicator whose ranks span hosts. No kernel
// reaches a peer on another host, so each call copies its GPU inputs to pinned host memory,
// runs the host back-end's collective on the copies (whatever that picks across hosts: the
// hierarchical forms, ucx or tcp between hosts, low precision) and copies the outputs back.
//
// Stream order is kept and the caller does not wait: the copies, the host part and the copies
// back are ordered behind the stream's earlier work by the host proxy (host_proxy.hpp), and the
// call returns once they are enqueued; the host parts run in call order on the host back-end's
// executor, with the communicator's host-buffer calls. A call that fails makes the outputs of
// the calls in flight undefined and the next call raise. A call captured into a CUDA graph runs
// its host part at every replay, with the arguments of the capture, on a channel of its own
// (host_proxy.hpp, "Graph capture").
#pragma once

#include <memory>

#include "device/device_backend.hpp"
#include "settings.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {

/// GPU `device`'s collectives over `group`, run by `host` on copies in pinned memory, under
/// the communicator's `settings` (RCCLX_TIMEOUT_MS, RCCLX_STAGED_BYTES_IN_FLIGHT).
std::unique_ptr<DeviceBackend> makeStagedBackend(HostBackend& host, ctran::PeerGroup& group,
                                                 int device, const Settings& settings);

}  // namespace rcclx
