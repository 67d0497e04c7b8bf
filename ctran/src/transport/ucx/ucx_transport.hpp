// The ucx transport: peers' windows reached through UCX (UCP) remote memory access, for ranks
// on other hosts (InfiniBand, RoCE, TCP, whatever the UCX in use drives).
//
// This header names no UCX type: a build without UCX's headers compiles ucx_unavailable.cpp in
// place of the transport, whose functions say so.
//
// Semantics (those of PeerWindow in transport.hpp):
//   - exportWindow maps the window's data and signal cells (ucp_mem_map) and returns their
//     addresses and packed remote keys; importWindow unpacks them on the endpoint to the peer,
//     one per peer, created when the transport connects from the worker addresses the ranks
//     exchange through the bootstrap (a window's handle need not repeat them);
//   - put is ucp_put_nbx, waited for until it completes locally (the source is reusable); a
//     put of at most 8 KiB is copied and travels in the next signal's message to that peer
//     instead (visible by that signal, as the contract asks, without a flush first);
//   - signal makes every earlier put to that peer land first by flushing the endpoint
//     (ucp_ep_flush_nbx: remote completion, so nothing relies on delivery order, which networks
//     such as EFA do not keep), then adds: by an active message the peer's progress thread
//     applies with signalAdd (waking its waiters), or, with RCCLX_UCX_SIGNAL=atomic, by
//     ucp_atomic_op_nbx(ADD, 64 bit) on the peer's cell, whose sleepers the peer's progress
//     thread wakes when it sees the value change;
//   - the waits of a rank on its own cells are ctran's (wait.hpp);
//   - a peer whose endpoint fails (UCX's error handler, UCP_ERR_HANDLING_MODE_PEER) is
//     recorded; checkPeer, put and signal to it then throw RemoteError naming it. Failure
//     reports travel to ucx peers as active messages, which the receiver records in the
//     group's GroupFailure;
//   - an orderly destroy (no failure in the group) flushes every endpoint, then tells each
//     peer it leaves; the peer marks it left (peerLeft): puts and signals to it are dropped
//     and its endpoint's closing is no failure, as for tcp's close message.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "ctran/failure.hpp"
#include "ctran/transport.hpp"

namespace ctran {

/// Why the ucx transport cannot be used in this process ("" when it can). Loads libucp on the
/// first call that finds it (see ucp_library.hpp for where it looks).
std::string ucxUnavailableReason();

/// The UCX library in use, "UCX 1.22.0 from /path/libucp.so.0 (libucx wheel)"; "" when none.
std::string ucxLibraryDescription();

/// Collective over `bootstrap` (every rank calls it, as for TcpTransport): creates the worker,
/// exchanges worker addresses, connects to every rank in `peers` and
/// starts the progress thread, which records the failures peers report in `failure`. Throws
/// InvalidUsage when the library cannot be loaded or this build has no ucx transport.
std::unique_ptr<Transport> createUcxTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                              GroupFailure* failure);

}  // namespace ctran
