"""The "rcclx" backend's process groups and Works: init from the environment and the
"cpu:rcclx" device-backend form, new_group (the creator runs per group), futures (completed with
the outputs, chained as DDP's hooks chain them), point-to-point and batch_isend_irecv (a ring
larger than the transport's buffers), errors naming the argument, and timeouts that raise."""

import importlib.util

import checks
import pytest
import td_helpers as H

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)


def _groups_rank(ctx, port):
    import os

    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(ctx.rank),
        WORLD_SIZE=str(ctx.nranks),
    )
    dist.init_process_group("cpu:rcclx")  # env:// rendezvous
    n, me = dist.get_world_size(), dist.get_rank()
    out = {}
    out["backend string"] = ("", None if dist.get_backend() == "cpu:rcclx" else dist.get_backend())

    # new_group: a group of ranks 0 and 2 (and one of every rank), each its own communicator
    sub = dist.new_group([0, n - 1])
    full = dist.new_group(list(range(n)))
    t = torch.full((7,), float(me + 1))
    if me in (0, n - 1):
        dist.all_reduce(t, group=sub)
        H.collect(out, "new_group all_reduce", t, torch.full((7,), float(1 + n)))
        out["new_group rank"] = ("", None if dist.get_rank(sub) == (0 if me == 0 else 1) else "")
    else:
        out["new_group all_reduce"] = ("", None)
        out["new_group rank"] = ("", None if dist.get_rank(sub) == -1 else "not -1")
    t = torch.full((3,), float(me + 1))
    dist.broadcast(t, src=n - 1, group=full)
    H.collect(out, "full group broadcast", t, torch.full((3,), float(n)))

    # futures: completed with the outputs; then() chains as a DDP comm hook does
    x = H.rank_input(me, 1 << 16, torch.float32)
    want = H.reduce_ref([H.rank_input(r, 1 << 16, torch.float32) for r in range(n)], "SUM")
    fut = dist.all_reduce(x, async_op=True).get_future()
    halved = fut.then(lambda f: f.value()[0] / 2).wait()
    H.collect(out, "future value", x, want)
    H.collect(out, "future then", halved, want / 2)
    w = H.all_gather_tensor(dist)(torch.empty(n * 4), torch.full((4,), float(me)), async_op=True)
    w.wait()
    g = w.get_future().wait()[0]  # a complete Work's future is complete at once
    H.collect(out, "future after wait", g, torch.arange(n).float().repeat_interleave(4))
    out["is_completed"] = ("", None if w.is_completed() and w.is_success() else "not completed")

    # point-to-point: blocking send/recv, and a ring of 8 MiB isend/irecv in one batch
    if me == 0:
        dist.send(torch.arange(10, dtype=torch.int64), dst=1)
        out["send/recv"] = ("", None)
    elif me == 1:
        r = torch.empty(10, dtype=torch.int64)
        dist.recv(r, src=0)
        H.collect(out, "send/recv", r, torch.arange(10, dtype=torch.int64))
    else:
        out["send/recv"] = ("", None)
    big = 1 << 21
    send = H.rank_input(me, big, torch.float32, tag=3)
    recv = torch.empty(big)
    ops = [
        dist.P2POp(dist.isend, send, (me + 1) % n),
        dist.P2POp(dist.irecv, recv, (me - 1) % n),
    ]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    H.collect(
        out, "batch_isend_irecv ring", recv, H.rank_input((me - 1) % n, big, torch.float32, tag=3)
    )

    # errors name the argument
    errors = {}
    for what, call in {
        "non-contiguous": lambda: dist.all_reduce(torch.zeros(4, 6).t()),
        "meta device": lambda: dist.broadcast(torch.empty(4, device="meta"), src=0),
        "size mismatch": lambda: H.all_gather_tensor(dist)(torch.empty(3), torch.empty(2)),
        "bad splits": lambda: dist.all_to_all_single(
            torch.empty(4), torch.empty(4), [1] * n, [3] * n
        ),
        "wrong list length": lambda: dist.all_gather([torch.empty(2)], torch.empty(2)),
        "dtype": lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int16)),
        "op on float": lambda: dist.all_reduce(torch.zeros(4), op=dist.ReduceOp.BAND),
    }.items():
        try:
            call()
            errors[what] = "returned"
        except Exception as e:  # noqa: BLE001 - the message is what the test checks
            errors[what] = f"{type(e).__name__}: {e}"
    dist.barrier()
    dist.destroy_process_group()
    return out, errors


def test_groups_futures_p2p_errors():
    results = launch(_groups_rank, 3, checks.free_port(), timeout=90)
    checks.assert_cases([r.value[0] for r in results])
    errors = results[0].value[1]
    assert "tensor must be contiguous" in errors["non-contiguous"], errors
    assert "broadcast: tensor: " in errors["meta device"], errors
    assert "Cannot pack tensors on meta" in errors["meta device"], errors
    assert "output has 3 elements but needs 6" in errors["size mismatch"], errors
    assert (
        "input block 1 (displacement 3, count 3) ends past its 4 elements" in errors["bad splits"]
    ), errors
    assert "tensor_list must be a list of 3 tensors" in errors["wrong list length"], errors
    assert "tensor has dtype torch.int16" in errors["dtype"], errors
    assert "BAND" in errors["op on float"] or "band" in errors["op on float"], errors


def _timeout_rank(ctx, port):
    import time

    import torch

    dist = H.init(ctx, port, timeout_s=2.0)
    dist.barrier()
    if ctx.rank == 1:  # never joins the all_reduce
        time.sleep(3.5)
        return None
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
    except Exception as e:  # noqa: BLE001 - reported to the test
        return type(e).__name__, str(e), time.monotonic() - start
    return "returned", "", time.monotonic() - start


def test_timeout_raises():
    results = launch(_timeout_rank, 2, checks.free_port(), timeout=60)
    kind, msg, took = results[0].value
    assert kind != "returned", "an all_reduce without its peer returned"
    assert "timeout" in (kind + msg).lower() or "timed out" in msg.lower(), (kind, msg)
    assert took < 10, f"the timeout of 2 s took {took:.1f} s to raise"
