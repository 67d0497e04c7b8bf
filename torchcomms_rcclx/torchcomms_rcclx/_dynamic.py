"""TorchCommRCCLX.alltoallv_dynamic: the all-to-all-v whose split sizes are int64 tensors beside
the data. On GPU tensors the counts never reach the host (no sync; capturable in a CUDA graph,
replays read the counts anew); on host tensors they are read when the call runs."""

from __future__ import annotations

import math

import torch

import rcclx_core
from torchcomms_rcclx._args import plain
from torchcomms_rcclx._work import CheckedWork, EventWork


def _row_elems(what: str, output, input, row_elems) -> int:
    if row_elems is None:
        row = math.prod(input.shape[1:]) if input.dim() > 1 else 1
        out_row = math.prod(output.shape[1:]) if output.dim() > 1 else 1
        if input.numel() and output.numel() and out_row != row:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: output rows have {out_row} elements (shape {tuple(output.shape)}) "
                f"but input rows {row} (shape {tuple(input.shape)}); pass row_elems="
            )
        return row
    if isinstance(row_elems, bool) or not isinstance(row_elems, int) or row_elems < 1:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: row_elems must be a positive integer, got {row_elems!r}"
        )
    return row_elems


def alltoallv_dynamic(
    comm,
    output,
    input,
    input_split_sizes,
    output_split_sizes,
    *,
    output_offsets=None,
    input_offsets=None,
    row_elems=None,
    max_output_rows=None,
    output_split_sizes_known=False,
    checked=False,
    async_op=False,
    timeout=None,
):
    """All-to-all-v whose split sizes are int64 tensors on the communicator's device
    (never read on the host for GPU tensors: no sync, capturable in a CUDA graph).
    ``input_split_sizes[p]`` rows of input (``row_elems`` elements each; default: a row
    of dimension 0) go to rank p, packed or at ``input_offsets[p]``; the call writes
    ``output_split_sizes`` (rows from each rank) and ``output_offsets`` (their exclusive
    prefix sum), the rows packed in rank order. The capacity is the output's rows (at most
    ``max_output_rows``): rows past it are dropped and the call fails (GPU: the next call)
    naming sender, receiver and counts. ``checked=True`` (GPU tensors, not in a graph
    capture) raises that from ``work.wait()`` instead, which blocks the host until the
    kernel finished (the synchronous call waits at once). ``output_split_sizes_known``
    reads ``output_split_sizes`` instead of exchanging counts. The core checks every tensor
    (the split sizes: int64, one entry per rank)."""
    what = "alltoallv_dynamic"
    core = comm._usable(what)
    output, input = plain(what, "output", output), plain(what, "input", input)
    send, recv = (
        plain(what, "input_split_sizes", input_split_sizes),
        plain(what, "output_split_sizes", output_split_sizes),
    )
    send_at = None if input_offsets is None else plain(what, "input_offsets", input_offsets)
    recv_at = None if output_offsets is None else plain(what, "output_offsets", output_offsets)
    row = _row_elems(what, output, input, row_elems)
    known = bool(output_split_sizes_known)
    arrays = tuple(t for t in (output, input, send, recv, send_at, recv_at) if t is not None)
    gpu = input.is_cuda

    def call(a, s):
        return core.alltoallv_dynamic(
            input, output, send, recv, send_at, recv_at, row, max_output_rows, known, a, None, s
        )

    if not (checked and gpu):
        return comm._run(what, call, gpu, async_op, timeout, arrays)
    if torch.cuda.is_current_stream_capturing():
        raise rcclx_core.InvalidUsageError(
            f"{what}: checked=True waits on the host for the kernel, which a CUDA graph capture "
            "cannot do; capture with checked=False (errors then raise from the next call)"
        )
    ran = comm._run(what, call, gpu, async_op, timeout, arrays)
    if not async_op:
        # An event recorded behind the call on the current stream marks its end, whatever that
        # stream is (the legacy default stream included).
        event = torch.cuda.Event()
        event.record()
        ran = EventWork(event, arrays, input.device, comm, what)
    work = CheckedWork(ran, core.check_alltoallv_dynamic)
    if not async_op:
        work.wait()
    return work
