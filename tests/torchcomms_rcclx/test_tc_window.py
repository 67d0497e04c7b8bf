"""One-sided windows (comm.new_window()): put, signal, wait_signal in a ring over shm and tcp
on 2 and 3 ranks with exact checks of what lands where, signal counting, map_remote_tensor,
errors naming the argument, use after finalize, a dead or silent peer (an error, not a hang);
the same ring on GPU tensors (marked gpu; ranks may share one GPU), where a silent peer's wait
ends at its timeout without a trap and fails the window, not the GPU or the communicator."""

from __future__ import annotations

import os
import time

import checks
import numpy as np
import pytest
import tc_helpers as H

from launcher import launch, values

torch = pytest.importorskip("torch")

N = 48  # elements of every window
PIECE = 8  # elements of one put
ROUNDS = 3  # puts (and signals) per peer before the peer waits


def _piece(sender: int, round_: int, dtype, device="cpu"):
    return H.make(sender, PIECE, dtype, salt=round_ + 1, device=device)


def _ring_case(comm, dtype, device="cpu"):
    """Every rank puts ROUNDS pieces into the next rank's window (piece k at element k*PIECE+1),
    signalling after each; then waits ROUNDS times for the previous rank and checks its own
    window element by element (unwritten elements keep their initial -1)."""
    n, me = comm.get_size(), comm.get_rank()
    nxt, prv = (me + 1) % n, (me - 1) % n
    win = comm.new_window()
    mine = torch.full((N,), -1, dtype=dtype, device=device)
    win.tensor_register(mine)
    problems = []
    if win.get_tensor() is not mine or win.get_size() != N * mine.element_size():
        problems.append(f"get_tensor/get_size: {win.get_size()}")
    for k in range(ROUNDS):
        win.put(_piece(me, k, dtype, device), nxt, k * PIECE + 1)
        win.signal(nxt)
    for _ in range(ROUNDS):
        win.wait_signal(prv)
    want = torch.full((N,), -1, dtype=dtype, device=device)
    for k in range(ROUNDS):
        want[k * PIECE + 1 : (k + 1) * PIECE + 1] = _piece(prv, k, dtype, device)
    if device != "cpu":
        torch.cuda.current_stream().synchronize()
    problems.append(H.compare(win.get_tensor(), want))
    problems.append(H.compare(mine, want))
    return win, want, [p for p in problems if p]


def _ring_rank(ctx):
    comm = H.backend_of(ctx, "win", timeout=10)
    out = {}
    for dtype in H.DTYPES:
        win, want, problems = _ring_case(comm, dtype)
        out[f"ring {H.name_of(dtype)}"] = ("", "; ".join(problems) or None)
        comm.barrier()  # every rank checked its window before the next puts land
        # A second ring on the same window: signals keep counting from where they were.
        n, me = comm.get_size(), comm.get_rank()
        win.put(_piece(me, 9, dtype), (me + 1) % n, N - PIECE)
        win.signal((me + 1) % n)
        win.wait_signal((me - 1) % n)
        want[N - PIECE :] = _piece((me - 1) % n, 9, dtype)
        out[f"ring again {H.name_of(dtype)}"] = ("", H.compare(win.get_tensor(), want))
        mine = win.get_tensor()
        win.tensor_deregister()
        # Deregistered: the tensor has its own storage back, holding the window's contents.
        out[f"deregistered {H.name_of(dtype)}"] = (
            "",
            H.compare(mine, want) or (None if win.get_tensor() is None else "still registered"),
        )
    comm.finalize()
    return out


@pytest.mark.parametrize("transport", ["shm", "tcp"])
@pytest.mark.parametrize("nranks", [2, 3])
def test_ring_put_signal_wait(nranks, transport):
    results = launch(_ring_rank, nranks, env={"RCCLX_TRANSPORT": transport})
    checks.assert_cases(results, expect_cases=3 * len(H.DTYPES))


def _counting_rank(ctx):
    """Rank 1 signals rank 0 twice; rank 0's third wait must time out, then a third signal
    releases a retry of it. Rank 0 also puts into itself and reads its own window back."""
    import rcclx_core

    comm = H.backend_of(ctx, "count", timeout=1)  # the third wait runs into it
    win = comm.new_window()
    t = torch.zeros(16, dtype=torch.int32)
    base = t.untyped_storage().data_ptr()
    win.tensor_register(t)
    out = {}
    if comm.get_rank() == 1:
        for v in (1, 2):
            win.put(torch.full((4,), v, dtype=torch.int32), 0, 4 * v)
            win.signal(0)
        ctx.barrier("timed out")
        win.put(torch.full((4,), 3, dtype=torch.int32), 0, 0)
        win.signal(0)
    else:
        win.wait_signal(1)
        win.wait_signal(1, async_op=True).wait()
        # A host put is complete when it returns, async_op or not; offsets may be numpy ints.
        done = win.put(torch.zeros(1, dtype=torch.int32), 0, np.int64(15), async_op=True)
        if not done.is_completed():
            out["async put"] = ("", "not complete on return")
        start = time.monotonic()
        try:
            win.wait_signal(1)
            out["third wait"] = ("", "returned without a third signal")
        except rcclx_core.TimeoutError as e:
            late = time.monotonic() - start
            ok = "peer_rank 1" in str(e) and 0.9 < late < 5
            out["third wait"] = ("", None if ok else f"{late:.1f} s: {e}")
        ctx.barrier("timed out")
        work = win.wait_signal(1, async_op=True, timeout=10)
        work.wait()
        win.put(torch.arange(4, dtype=torch.int32), 0, 12)
        want = torch.tensor([3] * 4 + [1] * 4 + [2] * 4 + [0, 1, 2, 3], dtype=torch.int32)
        out["values"] = ("", H.compare(t, want) or (None if work.is_completed() else "work"))
    win.tensor_deregister()
    out["own storage"] = ("", None if t.untyped_storage().data_ptr() == base else "not restored")
    comm.finalize()
    return out


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_signals_count(transport):
    results = values(launch(_counting_rank, 2, env={"RCCLX_TRANSPORT": transport}))
    assert list(results[0]) == ["third wait", "values", "own storage"], results[0]
    assert list(results[1]) == ["own storage"], results[1]
    problems = [f"rank {r} {k}: {p}" for r, v in enumerate(results) for k, (_, p) in v.items() if p]
    assert not problems, problems


def _map_rank(ctx, transport):
    import rcclx_core

    comm = H.backend_of(ctx, "map", timeout=10)
    n, me = comm.get_size(), comm.get_rank()
    win = comm.new_window()
    win.tensor_register(torch.full((6, 4), float(me), dtype=torch.float32))
    out = {}
    nxt = (me + 1) % n
    if transport == "tcp":
        try:
            win.map_remote_tensor(nxt)
            out["map"] = ("", "tcp peer mapped")
        except rcclx_core.InvalidUsageError as e:
            out["map"] = ("", None if f"rank {nxt}" in str(e) and "tcp" in str(e) else str(e))
        out["attr"] = ("", None if win.get_attr(nxt) == "tcp" else win.get_attr(nxt))
    else:
        peer = win.map_remote_tensor(nxt)
        ok = peer.shape == (6, 4) and peer.dtype == torch.float32
        out["map"] = ("", H.compare(peer, torch.full((6, 4), float(nxt))) or (None if ok else "x"))
        # A store through the mapping lands in the peer's registered tensor.
        peer[5, 3] = 100.0 + me
        win.signal(nxt)
        win.wait_signal((me - 1) % n)
        got = win.get_tensor()[5, 3].item()
        out["store"] = ("", None if got == 100.0 + (me - 1) % n else f"got {got}")
        own = win.map_remote_tensor(me)
        out["self"] = ("", None if own.data_ptr() == win.get_tensor().data_ptr() else "copy")
        out["attr"] = ("", None if win.get_attr(nxt) == "shm" else win.get_attr(nxt))
    win.tensor_deregister()
    comm.finalize()
    return out


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_map_remote_tensor(transport):
    checks.assert_cases(launch(_map_rank, 3, transport, env={"RCCLX_TRANSPORT": transport}))


def _split_rank(ctx):
    """Windows of a split communicator and of its parent, in one store at once: each window
    meets only its own ranks. Tensors taken from a window outlive its deregistration."""
    import gc

    comm = H.backend_of(ctx, "parent", timeout=10)
    me = comm.get_rank()
    pair = comm.split([0, 1] if me < 2 else [2], "child")
    solo = comm.split([2] if me == 2 else [1, 0], "child")  # the same name again
    out = {}
    outer = comm.new_window()
    outer.tensor_register(torch.zeros(4, dtype=torch.int64))
    for name, child in (("pair", pair), ("reversed", solo)):
        n, r = child.get_size(), child.get_rank()
        win = child.new_window()
        win.tensor_register(torch.zeros(4, dtype=torch.int64))
        win.put(torch.full((4,), 10 * me + 1, dtype=torch.int64), (r + 1) % n, 0)
        win.signal((r + 1) % n)
        win.wait_signal((r - 1) % n)
        prev = me if me == 2 else 1 - me  # the parent rank of the child rank before this one
        got = win.get_tensor().tolist()
        out[f"{name} window"] = ("", None if got == [10 * prev + 1] * 4 else f"got {got}")
        mapped = win.map_remote_tensor(r)
        win.tensor_deregister()
        del win
        gc.collect()
        out[f"{name} outlives"] = ("", None if mapped.tolist() == got else f"{mapped.tolist()}")
    # The parent's window saw none of the children's puts.
    out["parent window"] = ("", None if outer.get_tensor().tolist() == [0] * 4 else "written")
    outer.tensor_deregister()
    for c in (pair, solo, comm):
        c.finalize()
    return out


def test_split_communicators_have_their_own_windows():
    checks.assert_cases(launch(_split_rank, 3))


def _raises(out, key, fn, error, *words):
    try:
        fn()
        out[key] = ("", "did not raise")
    except error as e:
        missing = [w for w in words if w not in str(e)]
        out[key] = ("", f"{e} (missing {missing})" if missing else None)


def _errors_rank(ctx):
    import rcclx_core as rc

    comm = H.backend_of(ctx, "errors")
    win = comm.new_window()
    out = {}
    f32 = torch.zeros(4, dtype=torch.float32)
    _raises(out, "put unregistered", lambda: win.put(f32, 0, 0), rc.InvalidUsageError, "register")
    _raises(out, "empty", lambda: win.tensor_register(f32[:0]), rc.InvalidArgumentError, "0 ele")
    t = torch.zeros(10, dtype=torch.float32)
    win.tensor_register(t)
    _raises(out, "twice", lambda: win.tensor_register(t), rc.InvalidUsageError, "already")
    _raises(out, "bounds", lambda: win.put(f32, 1, 7), rc.InvalidArgumentError, "offset_nelems 7")
    _raises(out, "negative", lambda: win.put(f32, 1, -1), rc.InvalidArgumentError, "nelems", "-1")
    _raises(out, "not int", lambda: win.put(f32, 1, 1.5), rc.InvalidArgumentError, "nelems", "1.5")
    i32 = torch.zeros(4, dtype=torch.int32)
    _raises(out, "dtype", lambda: win.put(i32, 1, 0), rc.InvalidArgumentError, "torch.int32")
    meta = torch.zeros(4, device="meta")
    _raises(out, "device", lambda: win.put(meta, 1, 0), rc.InvalidArgumentError, "tensor", "meta")
    strided = torch.zeros(8)[::2]
    _raises(out, "strided", lambda: win.put(strided, 1, 0), rc.InvalidArgumentError, "contiguous")
    _raises(out, "dst", lambda: win.put(f32, 2, 0), rc.InvalidArgumentError, "dst_rank 2")
    _raises(out, "peer", lambda: win.signal(-1), rc.InvalidArgumentError, "peer_rank -1")
    _raises(out, "wait", lambda: win.wait_signal(5), rc.InvalidArgumentError, "peer_rank 5")
    _raises(out, "map", lambda: win.map_remote_tensor(9), rc.InvalidArgumentError, "rank 9")
    _raises(out, "t/o", lambda: win.wait_signal(1, timeout=0), rc.InvalidArgumentError, "timeout")
    _raises(out, "hints", lambda: win.signal(1, hints={"a": "1"}), rc.InvalidArgumentError, "hints")
    win.tensor_deregister()
    _raises(out, "deregister", win.tensor_deregister, rc.InvalidUsageError, "no tensor")
    # Sizes differ between ranks: every rank fails.
    other = comm.new_window()
    size = 4 + comm.get_rank()
    _raises(
        out, "size", lambda: other.tensor_register(torch.zeros(size)), rc.InvalidArgumentError,
        "same number of bytes", "[16, 20]",
    )  # fmt: skip
    # One rank's tensor refused: that rank names its argument, the others name that rank.
    bad = torch.zeros(8)[::2] if comm.get_rank() == 1 else torch.zeros(4)
    words = ("contiguous",) if comm.get_rank() == 1 else ("rank(s) [1]",)
    _raises(out, "one refused", lambda: other.tensor_register(bad), rc.InvalidArgumentError, *words)
    win.tensor_register(t)
    comm.finalize()
    for key, call in (
        ("put", lambda: win.put(f32, 1, 0)),
        ("signal", lambda: win.signal(1)),
        ("wait_signal", lambda: win.wait_signal(1)),
        ("tensor_deregister", win.tensor_deregister),
        ("new_window", comm.new_window),
    ):
        _raises(out, f"{key} after finalize", call, rc.InvalidUsageError, key, "finalized")
    return out


def test_errors_name_the_argument():
    checks.assert_cases(launch(_errors_rank, 2))


def _dead_peer_rank(ctx):
    import rcclx_core

    comm = H.backend_of(ctx, "dead", timeout=4)
    win = comm.new_window()
    win.tensor_register(torch.zeros(8))
    if comm.get_rank() == 1:
        os._exit(3)  # dies without signalling
    start = time.monotonic()
    try:
        win.wait_signal(1)
        return {"outcome": "returned"}
    except rcclx_core.RemoteError as e:
        return {"outcome": type(e).__name__, "message": str(e), "elapsed": time.monotonic() - start}


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_dead_peer_is_an_error(transport):
    env = {"RCCLX_TRANSPORT": transport}
    results = launch(_dead_peer_rank, 2, env=env, expect_errors=True, timeout=20)
    assert results[1].exitcode == 3
    assert results[0].ok, f"{results[0].error_type}: {results[0].error}\n{results[0].traceback}"
    res = results[0].value
    assert res["outcome"] != "returned"
    assert "peer_rank 1" in res["message"] and "rank 1" in res["message"], res
    assert res["elapsed"] < 6, res  # the peer's death, or at worst the communicator's timeout


def _gpu_rank(ctx):
    comm = H.backend_of(ctx, "win_gpu", device="cuda")
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        win, want, problems = _ring_case(comm, dtype, device=comm.get_device())
        out[f"ring {H.name_of(dtype)}"] = ("", "; ".join(problems) or None)
        comm.barrier()
        torch.cuda.synchronize()
        n, me = comm.get_size(), comm.get_rank()
        peer = win.map_remote_tensor((me + 1) % n)
        theirs = torch.full((N,), -1, dtype=dtype)  # what this rank put into the next one
        for k in range(ROUNDS):
            theirs[k * PIECE + 1 : (k + 1) * PIECE + 1] = _piece(me, k, dtype)
        out[f"map {H.name_of(dtype)}"] = ("", H.compare(peer, theirs))
        comm.barrier()
        torch.cuda.synchronize()
        # A kernel storing through the mapping, then a signal: the peer sees the store.
        peer[N - 1] = 100 + me
        win.signal((me + 1) % n)
        win.wait_signal((me - 1) % n)
        want[N - 1] = 100 + (me - 1) % n
        comm.barrier()
        torch.cuda.synchronize()
        # async_op=True: on the window's internal stream; the signal follows the put.
        work = win.put(_piece(me, 7, dtype, comm.get_device()), (me + 1) % n, 0, async_op=True)
        win.signal((me + 1) % n)
        win.wait_signal((me - 1) % n)
        work.wait()
        want[:PIECE] = _piece((me - 1) % n, 7, dtype, comm.get_device())
        torch.cuda.synchronize()
        out[f"async {H.name_of(dtype)}"] = ("", H.compare(win.get_tensor(), want))
        win.tensor_deregister()
    comm.finalize()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("nranks", [2, 3])
def test_gpu_ring_put_signal_wait(nranks):
    import launcher

    if launcher.gpu_count() == 0:
        pytest.skip("needs a GPU")
    checks.assert_cases(launch(_gpu_rank, nranks), expect_cases=6)


SILENT_TIMEOUT_S = 0.5  # rank 0's wait for a signal rank 1 never sends


def _gpu_silent_peer_rank(ctx):
    """Rank 1 never signals. Rank 0's wait kernel ends at the timeout without trapping: the
    stream drains, the GPU still computes, the window fails (its Work's ``wait()`` and every
    later call on it raise a TimeoutError naming the peer, the signal values and the timeout),
    and then the window deregisters, the communicator still reduces, and finalizes."""
    import rcclx_core

    comm = H.backend_of(ctx, "win_gpu_silent", device="cuda")
    dev = comm.get_device()
    win = comm.new_window()
    win.tensor_register(torch.zeros(16, device=dev))
    out = {}
    if comm.get_rank() == 0:
        start = time.monotonic()
        work = win.wait_signal(1, timeout=SILENT_TIMEOUT_S)  # enqueued: the host goes on
        enqueued = time.monotonic() - start
        torch.cuda.synchronize()  # returns, at the timeout: the kernel ended, no trap
        drained = time.monotonic() - start
        ok = enqueued < 0.4 and SILENT_TIMEOUT_S * 0.8 < drained < SILENT_TIMEOUT_S + 5
        out["drained"] = (
            "",
            None if ok else f"enqueued in {enqueued:.2f} s, drained in {drained:.2f} s",
        )
        # The timeout names this rank, the peer, what it expected and saw, and the limit.
        words = ("rank 0's wait_signal", "from rank 1", "500 ms", "expected signal 1, saw 0")
        x = torch.ones(4, device=dev)
        for key, call in (
            ("work.wait", work.wait),
            ("put", lambda: win.put(x, 1, 0)),
            ("signal", lambda: win.signal(1)),
            ("wait_signal", lambda: win.wait_signal(1, timeout=30)),
            ("async put", lambda: win.put(x, 1, 0, async_op=True)),
            ("map_remote_tensor", lambda: win.map_remote_tensor(1)),
            ("put again", lambda: win.put(x, 1, 0)),  # sticky
        ):
            start = time.monotonic()
            _raises(out, key, call, rcclx_core.TimeoutError, *words)
            late = time.monotonic() - start
            if out[key][1] is None and late > 0.2:
                out[key] = ("", f"raised after {late:.2f} s")
        # Nothing was enqueued by the refused calls; the GPU computes.
        total = float(torch.arange(1000, dtype=torch.float32, device=dev).sum().item())
        torch.cuda.synchronize()
        out["gpu"] = ("", None if total == 499500.0 else f"sum {total}")
    ctx.barrier("rank 0 done")
    win.tensor_deregister()  # a failed window deregisters as any other
    # The communicator is not failed by its window: its GPU collectives run.
    t = torch.full((64,), float(comm.get_rank() + 1), device=dev)
    comm.all_reduce(t)
    torch.cuda.synchronize()
    out["all_reduce"] = ("", None if t.tolist() == [3.0] * 64 else f"got {t.tolist()[:4]}")
    comm.finalize()
    return out


@pytest.mark.gpu
def test_gpu_wait_without_signal_is_an_error():
    import launcher

    if launcher.gpu_count() == 0:
        pytest.skip("needs a GPU")
    first, second = values(launch(_gpu_silent_peer_rank, 2, timeout=90))
    want = ["drained", "work.wait", "put", "signal", "wait_signal", "async put"]
    want += ["map_remote_tensor", "put again", "gpu", "all_reduce"]
    assert list(first) == want, first
    assert list(second) == ["all_reduce"], second
    problems = [
        f"rank {r} {k}: {p}" for r, v in enumerate((first, second)) for k, (_, p) in v.items() if p
    ]
    assert not problems, problems


def _gpu_graph_rank(ctx):
    """put + signal + wait_signal captured once in a CUDA graph and replayed: the sequence
    numbers live in device memory, so every replay matches the peer's next signal."""
    comm = H.backend_of(ctx, "win_graph", device="cuda", timeout=20)
    dev = comm.get_device()
    n, me = comm.get_size(), comm.get_rank()
    nxt, prv = (me + 1) % n, (me - 1) % n
    win = comm.new_window()
    mine = torch.zeros(N, device=dev)
    win.tensor_register(mine)
    src = torch.zeros(PIECE, device=dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        win.put(src, nxt, PIECE)
        win.signal(nxt)
        win.wait_signal(prv)
    out = {}
    for k in range(3):
        src.fill_(float(me * 10 + k))
        graph.replay()
        torch.cuda.synchronize()
        want = torch.zeros(N)
        want[PIECE : 2 * PIECE] = float(prv * 10 + k)
        out[f"replay {k}"] = ("", H.compare(mine, want))
        comm.barrier()  # every rank checked before the next replay's put lands
        torch.cuda.synchronize()
    win.tensor_deregister()
    comm.finalize()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("nranks", [2, 3])
def test_gpu_window_calls_in_a_cuda_graph(nranks):
    import launcher

    if launcher.gpu_count() == 0:
        pytest.skip("needs a GPU")
    checks.assert_cases(launch(_gpu_graph_rank, nranks), expect_cases=3)
