"""Bad input gets an error naming the argument and its value (wrong device, non-contiguous,
unsupported dtype, sizes, list lengths, roots, ops, hint values), before anything runs, on the
backend and through torchcomms (the real one where installed, else the stand-in) alike; hints
rcclx does not know are ignored; calls after finalize or abort raise; finalize is safe twice and
from __del__; timeouts raise (or abort the process when asked), a per-call one within its bound
and the communicator's through the core."""

from __future__ import annotations

import gc
import signal
import time

import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")

import torchcomms  # noqa: E402

import rcclx_core  # noqa: E402
import torchcomms_rcclx as tc  # noqa: E402

BadArg = rcclx_core.InvalidArgumentError


@pytest.fixture
def comm(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    c = tc.new_comm("rcclx", "cpu", "solo", store=dist.HashStore())
    yield c
    c.finalize()


def test_tensors_are_checked_naming_the_argument(comm):
    SUM = tc.ReduceOp.SUM
    cases = [
        (lambda: comm.all_reduce(torch.ones(4, device="meta"), SUM), BadArg,
         "all_reduce: tensor: .*Cannot pack tensors on meta"),
        (lambda: comm.all_reduce(torch.ones(4, 4).t(), SUM), BadArg,
         r"all_reduce: tensor must be contiguous, but has shape \(4, 4\) and strides \(1, 4\)"),
        (lambda: comm.all_reduce([1.0], SUM), TypeError,
         "all_reduce: tensor must be a torch.Tensor, got list"),
        (lambda: comm.all_reduce(torch.ones(2, dtype=torch.complex64), tc.ReduceOp.MAX), BadArg,
         "tensor has dtype torch.complex64, which ReduceOp.MAX cannot reduce"),
        (lambda: comm.all_reduce(torch.ones(2, dtype=torch.bool), tc.ReduceOp.AVG), BadArg,
         "tensor has dtype torch.bool, which ReduceOp.AVG cannot reduce"),
        (lambda: comm.all_reduce(torch.ones(2, dtype=torch.int16), SUM), BadArg,
         "tensor has dtype torch.int16, which rcclx moves but cannot reduce"),
        (lambda: comm.all_reduce(torch.ones(2), "SUMM"), TypeError, "op must be"),
        (lambda: comm.all_reduce(torch.ones(2), SUM, hints={"low_precision": "maybe"}), BadArg,
         "must be 1 or 0"),
        (lambda: comm.all_reduce(torch.ones(2), SUM, timeout=0), BadArg, "timeout must be"),
        (lambda: comm.broadcast(torch.ones(2), 1), BadArg,
         "broadcast: root 1 is out of range for a communicator of 1 ranks"),
        (lambda: comm.send(torch.ones(2), -1), BadArg, "send: dst -1 is out of range"),
        (lambda: comm.recv(torch.ones(2), 3), BadArg, "recv: src 3 is out of range"),
        (lambda: comm.all_gather_single(torch.ones(3), torch.ones(2)), BadArg,
         "all_gather_single: output has 3 elements but needs 2"),
        (lambda: comm.all_gather_single(torch.ones(2, dtype=torch.int32), torch.ones(2)), BadArg,
         "all_gather_single: input is float32 but output is int32"),
        (lambda: comm.all_gather([torch.ones(2)] * 2, torch.ones(2)), BadArg,
         "all_gather: tensor_list must be a list of 1 tensors \\(one per rank\\), got 2"),
        (lambda: comm.all_gather(torch.ones(2), torch.ones(2)), TypeError,
         "all_gather: tensor_list must be a list of 1 tensors \\(one per rank\\), got Tensor"),
        (lambda: comm.all_gather([torch.ones(3)], torch.ones(2)), BadArg,
         r"all_gather: tensor_list\[0\] has 3 elements but needs 2"),
        (lambda: comm.reduce_scatter_single(torch.ones(2), torch.ones(3)), BadArg,
         "reduce_scatter_single: input has 3 elements but needs 2"),
        (lambda: comm.reduce_scatter_v(torch.ones(2), [torch.ones(3)]), BadArg,
         r"reduce_scatter_v: output has 2 elements but needs 3 \(input_list\[rank\]\)"),
        (lambda: comm.all_to_all_single(torch.ones(3), torch.ones(2)), BadArg,
         "all_to_all_single: output has 3 elements but needs 2"),
        (lambda: comm.all_to_all_v_single(torch.ones(2), torch.ones(2), [2, 0], [2]), BadArg,
         "all_to_all_v_single: output_split_sizes has 2 entries for 1 ranks"),
        (lambda: comm.all_to_all_v_single(torch.ones(2), torch.ones(2), [2], ["x"]), TypeError,
         "all_to_all_v_single: input_split_sizes must be a sequence of integers"),
        (lambda: comm.all_to_all([torch.ones(2)], [torch.ones(2, dtype=torch.int32)]), BadArg,
         r"output_tensor_list\[0\] has dtype torch.float32"),
        (lambda: comm.gather_single(torch.ones(1), torch.ones(2), 0), BadArg,
         "gather_single: output has 1 elements but needs 2"),
        (lambda: comm.gather([torch.ones(2)], torch.ones(2), 2), BadArg,
         "gather: root 2 is out of range"),
        (lambda: comm.scatter(torch.ones(2), [torch.ones(1)], 0), BadArg,
         r"scatter: input_tensor_list\[0\] has 1 elements but needs 2"),
        (lambda: _issue(comm, torch.ones(2), 1), BadArg, "batch issue: peer 1 is out of range"),
        (lambda: comm.split([0, 0], "x"), BadArg, r"split: ranks \[0, 0\] name \[0\] twice"),
        (lambda: comm.split([1], "x"), BadArg, "split: ranks\\[0\\] 1 is not a rank"),
        (lambda: comm.split([0], "x", hints={"rcclx_allreduce_algo": "no"}), BadArg,
         "RCCLX_ALLREDUCE_ALGO"),
        (lambda: comm.tensor_register(torch.ones(4, 4).t()), BadArg, "tensor_register: tensor"),
        (lambda: comm.set_timeout("soon"), BadArg, "set_timeout: timeout must be"),
    ]  # fmt: skip
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    # Nothing above ran or broke the communicator; hints rcclx does not know are ignored.
    t = torch.ones(3)
    assert comm.all_reduce(t, tc.ReduceOp.SUM, hints={"fast": "1", "algo": "ring"}) is None
    assert t.tolist() == [1.0] * 3
    child = comm.split([0], "x", hints={"nccl_cga_cluster_size": "4"})
    child.broadcast(t, 0, hints={"hint_key": "value"})
    child.finalize()


def _issue(comm, tensor, peer):
    batch = comm.batch_op_create()
    batch.send(tensor, peer)  # recorded; checked when issued
    return batch.issue()


def test_errors_reach_torchcomms_users_as_they_are(monkeypatch):
    """Through torchcomms' TorchComm (the real one's C++ included) an error keeps its type and
    its message, which names the caller's argument."""
    import torch.distributed as dist

    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    comm = torchcomms.new_comm("rcclx", torch.device("cpu"), "solo", store=dist.HashStore())
    SUM = torchcomms.ReduceOp.SUM
    with pytest.raises(BadArg, match="all_reduce: tensor must be contiguous"):
        comm.all_reduce(torch.ones(4, 4).t(), SUM, False)
    with pytest.raises(BadArg, match="all_gather_single: output has 3 elements but needs 2"):
        comm.all_gather_single(torch.ones(3), torch.ones(2), False)
    with pytest.raises(BadArg, match="all_to_all_v_single: output_split_sizes has 2 entries"):
        comm.all_to_all_v_single(torch.ones(2), torch.ones(2), [2, 0], [2], False)
    with pytest.raises(BadArg, match="torch.bool, which ReduceOp.PREMUL_SUM cannot reduce"):
        comm.all_reduce(torch.ones(2, dtype=torch.bool), torchcomms.ReduceOp.PREMUL_SUM(2.0), False)
    t = torch.ones(3)
    comm.all_reduce(t, SUM, False, hints={"hint_key": "value"})  # another backend's hint
    assert t.tolist() == [1.0] * 3
    comm.finalize()


def test_finalize_abort_and_calls_after_them(comm):
    comm.tensor_register(torch.ones(4))  # host tensors: a check and nothing else
    comm.tensor_deregister(torch.ones(4))
    comm.finalize()
    comm.finalize()  # a second finalize does nothing
    assert not comm.is_aborted()
    with pytest.raises(rcclx_core.InvalidUsageError, match="all_reduce: the communicator 'solo'"
                       " was already finalized"):  # fmt: skip
        comm.all_reduce(torch.ones(2), tc.ReduceOp.SUM)
    with pytest.raises(rcclx_core.InvalidUsageError, match="batch_op_create"):
        comm.batch_op_create()


def test_abort_then_finalize_and_del(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    c = tc.new_comm("rcclx", "cpu", "a", store=dist.HashStore())
    assert c.is_abort_supported() and c.get_backend_version() == rcclx_core.__version__
    c.abort()
    assert c.is_aborted()
    with pytest.raises(rcclx_core.InvalidUsageError, match="was already aborted"):
        c.barrier()
    c.finalize()  # nothing left to release
    d = tc.new_comm("rcclx", "cpu", "d", store=dist.HashStore())
    d.finalize()
    del c, d  # __del__ after finalize and after abort: silent
    e = tc.new_comm("rcclx", "cpu", "e", store=dist.HashStore())
    del e  # never finalized: __del__ releases it
    gc.collect()


def _timeout_rank(ctx, per_call: bool):
    # A per-call timeout is the backend's (torchcomms' Python-backend interface drops it).
    make = H.backend_of if per_call else H.comm_of
    comm = make(ctx, "late", timeout=None if per_call else 0.5)
    out = None
    if ctx.rank == 0:
        t = torch.ones(16)
        start = time.monotonic()
        try:
            if per_call:
                comm.all_reduce(t, tc.ReduceOp.SUM, False, timeout=0.3)
            else:
                comm.all_reduce(t, torchcomms.ReduceOp.SUM, False)
            out = "no error"
        except rcclx_core.TimeoutError as e:
            out = (type(e).__name__, str(e), time.monotonic() - start)
    ctx.barrier("rank 0 timed out")
    if per_call:  # the late rank joins: the call rank 0 gave up on completes, then both end
        if ctx.rank == 1:
            comm.all_reduce(torch.ones(16), tc.ReduceOp.SUM, False)
        comm.finalize()
    else:
        # torchcomms' Python-backend interface has no abort(): the backend's is reached directly.
        comm.get_backend_impl().abort()
    return out


@pytest.mark.parametrize("per_call", [True, False], ids=["per-call", "communicator"])
def test_timeouts_raise(per_call):
    got = launch(_timeout_rank, 2, per_call)[0].value
    assert isinstance(got, tuple), got
    kind, message, seconds = got
    assert kind == "TimeoutError"
    if per_call:
        assert "all_reduce: not complete within 0.3 s on rank 0" in message
        assert 0.3 <= seconds < 2.0
    else:
        assert 0.5 <= seconds < 3.0, message


def _abort_process_rank(ctx):
    comm = H.backend_of(ctx, "fatal", abort_process_on_timeout_or_error=True)
    if ctx.rank == 0:
        comm.all_reduce(torch.ones(4), tc.ReduceOp.SUM, False, timeout=0.2)
        return "still alive"
    time.sleep(1.0)
    comm.abort()
    return "ok"


def test_timeout_aborts_the_process_when_asked():
    results = launch(_abort_process_rank, 2, expect_errors=True)
    assert results[0].exitcode == -signal.SIGABRT, results[0]
    assert results[1].value == "ok", results[1]
