"""TorchCommRCCLX.alltoallv_dynamic: the all-to-all-v whose split sizes are int64 tensors beside
the data. On GPU tensors the counts never reach the host (no sync; capturable in a CUDA graph,
replays read the counts anew); on host tensors they are read when the call runs."""

from __future__ import annotations

import math

import torch

import rcclx_core
from torchcomms_rcclx._work import CheckedWork, EventWork


def _splits(comm, what: str, name: str, t, optional: bool = False):
    if t is None and optional:
        return None
    t = comm._check(what, name, t)
    if t.dtype != torch.int64:
        raise rcclx_core.InvalidArgumentError(f"{what}: {name} has dtype {t.dtype}, not int64")
    if t.numel() != comm._size:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: {name} has {t.numel()} entries for {comm._size} ranks"
        )
    return t


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
    """See TorchCommRCCLX.alltoallv_dynamic."""
    what = "alltoallv_dynamic"
    core = comm._usable(what)
    output = comm._check(what, "output", output)
    input = comm._check(what, "input", input)
    comm._same_dtype(what, output, input)
    send = _splits(comm, what, "input_split_sizes", input_split_sizes)
    recv = _splits(comm, what, "output_split_sizes", output_split_sizes)
    send_at = _splits(comm, what, "input_offsets", input_offsets, optional=True)
    recv_at = _splits(comm, what, "output_offsets", output_offsets, optional=True)
    row = _row_elems(what, output, input, row_elems)
    known = bool(output_split_sizes_known)
    arrays = tuple(t for t in (output, input, send, recv, send_at, recv_at) if t is not None)

    def call(a, s):
        return core.alltoallv_dynamic(
            input, output, send, recv, send_at, recv_at, row, max_output_rows, known, a, None, s
        )

    if not (checked and comm._gpu):
        return comm._run(what, call, async_op, timeout, arrays)
    if torch.cuda.is_current_stream_capturing():
        raise rcclx_core.InvalidUsageError(
            f"{what}: checked=True waits on the host for the kernel, which a CUDA graph capture "
            "cannot do; capture with checked=False (errors then raise from the next call)"
        )
    ran = comm._run(what, call, async_op, timeout, arrays)
    if not async_op:
        # An event recorded behind the call on the current stream marks its end, whatever that
        # stream is (the legacy default stream included).
        event = torch.cuda.Event()
        event.record()
        ran = EventWork(event, arrays, comm._device, comm, what)
    work = CheckedWork(ran, core.check_alltoallv_dynamic)
    if not async_op:
        work.wait()
    return work
