"""A rank killed while its peers' GPU collectives wait on it (ranks sharing a GPU where the
machine has one): every survivor's kernels stop waiting long before the in-kernel timeout
(which would trap and lose the GPU context), the next call raises a RemoteError naming the dead
rank, the GPU stays usable, and the survivors carry on in a new communicator on it, holding no
mapping of a peer's GPU memory once both communicators are destroyed.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpu_cases import rank_device  # noqa: E402

import rcclx_core as rc  # noqa: E402
import rcclx_core._testing  # noqa: E402, F401
from launcher import launch  # noqa: E402

pytestmark = pytest.mark.gpu

# Long, so that only the abort word (not the in-kernel timeout) can end the survivors' waits.
TIMEOUT_MS = 30000
REACH_S = 5.0  # a survivor raises within this of the victim's death


def _calls(comm, dev):
    n = comm.size
    x = torch.arange(1 << 18, dtype=torch.float32, device=dev)  # 1 MiB
    out = torch.empty_like(x)
    gathered = torch.empty(x.numel() * n, dtype=x.dtype, device=dev)
    return {
        "all_reduce": lambda: comm.all_reduce(x, out),
        "all_gather": lambda: comm.all_gather(x, gathered),
        "all_to_all": lambda: comm.all_to_all(gathered, gathered.clone()),
    }


def _gpu_failing_rank(ctx, collective, victim):
    import os
    import signal
    import threading
    import time

    store = ctx.store()
    dev = rank_device(ctx)
    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks, device=ctx.device)
    call = _calls(comm, dev)[collective]
    call()
    torch.cuda.synchronize()
    mapped = rc._testing.open_ipc_mappings()  # the peers' memory, mapped into this process
    store.set(f"gpu_failure/ready{ctx.rank}", b"1")
    if ctx.rank == victim:
        for r in range(ctx.nranks):
            store.get(f"gpu_failure/ready{r}")
        killed_at = time.time()
        store.set("gpu_failure/killed_at", str(killed_at + 0.2).encode())
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
    outcome = None
    start = time.monotonic()
    calls = 0
    while time.monotonic() - start < TIMEOUT_MS / 1000:
        try:
            call()
            calls += 1
            if calls % 8 == 0:
                torch.cuda.synchronize()
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), isinstance(e, rc.RemoteError))
            break
    raised_at = time.time()
    # The kernels ended: the stream drains and the GPU computes.
    torch.cuda.synchronize()
    usable = float(torch.ones(1000, device=dev).sum().item())
    t = time.monotonic()
    comm.destroy()
    destroy_s = time.monotonic() - t
    survivors = [r for r in range(ctx.nranks) if r != victim]
    sub = rc.Communicator.from_store(
        store, survivors.index(ctx.rank), len(survivors), prefix="gpu_failure/again",
        device=ctx.device,
    )  # fmt: skip
    y = torch.full((1000,), float(ctx.rank), device=dev)
    sub.all_reduce(y)
    torch.cuda.synchronize()
    again = y.cpu().tolist()
    sub.destroy()
    return {
        "mapped": (mapped, rc._testing.open_ipc_mappings()),
        "outcome": outcome,
        "raised_after_s": raised_at - float(store.get("gpu_failure/killed_at")),
        "usable": usable,
        "destroy_s": destroy_s,
        "again_ok": again == [float(sum(survivors))] * 1000,
    }


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "all_to_all"])
def test_gpu_survivors_raise_and_keep_their_gpu(collective):
    nranks, victim = 3, 2
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(
        _gpu_failing_rank, nranks, collective, victim, env=env, expect_errors=True, timeout=120
    )
    assert results[victim].error_type == "Died", results[victim]
    for res in results:
        if res.rank == victim:
            continue
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        v = res.value
        assert v["outcome"] is not None, f"rank {res.rank} never raised"
        kind, message, is_remote = v["outcome"]
        assert is_remote and f"rank {victim}" in message, f"rank {res.rank}: {kind}: {message}"
        assert v["raised_after_s"] < REACH_S, v
        assert v["usable"] == 1000.0 and v["again_ok"], v
        assert v["destroy_s"] < REACH_S, v
        during, after = v["mapped"]
        assert during > 0 and after == 0, f"rank {res.rank}: IPC mappings {during} -> {after}"


# A stopped peer is alive: no host wait sees it on the GPU path, only the kernels' own bounded
# waits do. Short, so that the test shows the in-kernel timeout ending the wait.
STOP_TIMEOUT_MS = 2000


def _gpu_stopped_peer_rank(ctx, victim):
    import os
    import signal
    import time

    store = ctx.store()
    dev = rank_device(ctx)
    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks, device=ctx.device)
    x = torch.arange(1 << 16, dtype=torch.float32, device=dev)
    out = torch.empty_like(x)
    comm.all_reduce(x, out)
    torch.cuda.synchronize()
    mapped = rc._testing.open_ipc_mappings()
    store.set(f"gpu_stop/pid{ctx.rank}", str(os.getpid()).encode())
    if ctx.rank == victim:
        # Stops once every survivor's next call is in flight, waiting for this rank.
        for r in range(ctx.nranks):
            if r != victim:
                store.get(f"gpu_stop/issued{r}")
        os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(3600)  # never reached: a survivor kills this process
    comm.all_reduce(x, out)  # its kernel waits for the victim, which never joins
    issued = time.monotonic()
    store.set(f"gpu_stop/issued{ctx.rank}", b"1")
    # Without the in-kernel timeout's report this synchronize would never return, and with a
    # trapping timeout it would raise and the GPU context would be lost.
    torch.cuda.synchronize()
    drained_s = time.monotonic() - issued
    outcome = None
    for _ in range(500):  # the report reaches the host within a poll period of the watch
        try:
            comm.all_reduce(x, out)
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), isinstance(e, rc.RemoteError))
            break
        time.sleep(0.01)
    raised_s = time.monotonic() - issued
    torch.cuda.synchronize()
    usable = float(torch.ones(1000, device=dev).sum().item())
    t = time.monotonic()
    comm.destroy()
    destroy_s = time.monotonic() - t
    survivors = [r for r in range(ctx.nranks) if r != victim]
    sub = rc.Communicator.from_store(
        store, survivors.index(ctx.rank), len(survivors), prefix="gpu_stop/again",
        device=ctx.device,
    )  # fmt: skip
    y = torch.full((1000,), float(ctx.rank), device=dev)
    sub.all_reduce(y)
    torch.cuda.synchronize()
    again = y.cpu().tolist()
    sub.destroy()
    if ctx.rank == survivors[0]:
        os.kill(int(store.get(f"gpu_stop/pid{victim}")), signal.SIGKILL)
    return {
        "mapped": (mapped, rc._testing.open_ipc_mappings()),
        "outcome": outcome,
        "drained_s": drained_s,
        "raised_s": raised_s,
        "usable": usable,
        "destroy_s": destroy_s,
        "again_ok": again == [float(sum(survivors))] * 1000,
    }


def test_gpu_stopped_peer_ends_in_a_timeout_error_and_the_gpu_stays_usable():
    """SIGSTOP of a rank whose peers' kernels wait on it: their waits end at RCCLX_TIMEOUT_MS
    without trapping, the next call raises a RemoteError naming the stopped rank, the GPU
    computes, destroy returns, and a new communicator of the survivors works."""
    nranks, victim = 3, 2
    env = {"RCCLX_TIMEOUT_MS": STOP_TIMEOUT_MS}
    results = launch(
        _gpu_stopped_peer_rank, nranks, victim, env=env, expect_errors=True, timeout=120
    )
    assert results[victim].error_type == "Died", results[victim]
    limit_s = STOP_TIMEOUT_MS / 1000 + 3.0
    for res in results:
        if res.rank == victim:
            continue
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        v = res.value
        assert v["outcome"] is not None, f"rank {res.rank} never raised: {v}"
        kind, message, is_remote = v["outcome"]
        assert is_remote and f"rank {victim}" in message, f"rank {res.rank}: {kind}: {message}"
        assert "timed out" in message, message
        assert v["drained_s"] < limit_s, v
        assert v["raised_s"] < limit_s, v
        assert v["usable"] == 1000.0 and v["again_ok"], v
        assert v["destroy_s"] < 5.0, v
        during, after = v["mapped"]
        assert during > 0 and after == 0, f"rank {res.rank}: IPC mappings {during} -> {after}"
