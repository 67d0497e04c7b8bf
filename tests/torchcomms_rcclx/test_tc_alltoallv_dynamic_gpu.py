"""alltoallv_dynamic and the MoE layer on GPU tensors, 2 and 3 ranks (sharing a GPU where the
machine has one): exact results for random counts (zeros, a silent sender, one receiver,
row sizes that are and are not multiples of 16 bytes, blocks larger than a staging slot); an
overflow recorded by the kernel and raised by the next call, or by work.wait() with
checked=True (async and not; known receive counts); one call captured in a CUDA
graph and replayed 12 times with counts and data changing between replays; the captured
graph holds kernel / memcpy / memset nodes only (no host node); a MoE dispatch -> expert ->
combine captured and replayed with new routings."""

from __future__ import annotations

import ctypes

import checks
import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

# cudaGraphNodeType: kernel, memcpy, memset, empty (the rest, host nodes among them, are not
# expected in a collective's capture).
_ALLOWED_NODES = {0: "kernel", 1: "memcpy", 2: "memset", 5: "empty"}


def _matrix(step: int, n: int, kind: str = "random", big: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 + step)
    m = torch.randint(0, 9, (n, n), generator=g)
    m = torch.where(torch.rand((n, n), generator=g) < 0.3, torch.zeros_like(m), m)
    if kind == "silent":
        m[step % n, :] = 0
    elif kind == "one_receiver":
        m[:, :] = 0
        m[:, step % n] = torch.randint(1, 9, (n,), generator=g)
    if big:
        m[0, n - 1] = big
    return m


def _rows(s, d, count, row, dtype, dev, salt=0):
    r = torch.arange(count, device=dev)[:, None]
    e = torch.arange(row, device=dev)[None, :]
    return ((((s * 16 + d) * 4096 + r) * 8 + e + salt) % 251).to(dtype)


def _inputs(m, me, row, dtype, dev, salt=0):
    n = m.shape[0]
    send = torch.cat([_rows(me, d, int(m[me, d]), row, dtype, dev, salt) for d in range(n)])
    want = torch.cat([_rows(s, me, int(m[s, me]), row, dtype, dev, salt) for s in range(n)])
    return send, want


def _eager_cases(comm, out):
    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    cases = [
        ("random", 0, 1, torch.float32, 0),
        ("random", 1, 3, torch.bfloat16, 0),  # 6-byte rows: the unaligned copy path
        ("silent", 2, 8, torch.float32, 0),
        ("one_receiver", 3, 64, torch.float16, 0),
        ("random", 4, 256, torch.float32, 700),  # 700 KB from rank 0: streams through slots
    ]
    for kind, step, row, dtype, big in cases:
        m = _matrix(step, n, kind, big)
        send, want = _inputs(m, me, row, dtype, dev)
        recv = torch.full((want.shape[0] + 3, row), -1, dtype=dtype, device=dev)
        splits = m[me].to(dev)
        counts = torch.full((n,), -5, dtype=torch.int64, device=dev)
        offsets = torch.full((n,), -5, dtype=torch.int64, device=dev)
        comm.alltoallv_dynamic(recv, send, splits, counts, output_offsets=offsets)
        col = m[:, me].to(dev)
        problem = checks.join_problems(
            None if torch.equal(counts, col) else f"counts {counts.tolist()} != {col.tolist()}",
            None if torch.equal(offsets, torch.cumsum(col, 0) - col) else "offsets differ",
            H.compare(recv[: want.shape[0]], want),
            None if bool((recv[want.shape[0] :] == -1).all()) else "wrote past the rows",
        )
        out[f"eager {kind} step={step} row={row} {dtype}"] = ("", problem)


def _overflow_case(comm, out):
    import rcclx_core

    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    splits = torch.full((n,), 4, dtype=torch.int64, device=dev)
    send = torch.ones(4 * n, 2, device=dev)
    recv = torch.zeros(4 * n - 1, 2, device=dev)  # one row short on every rank
    counts = torch.zeros(n, dtype=torch.int64, device=dev)
    comm.alltoallv_dynamic(recv, send, splits, counts)
    torch.cuda.synchronize()
    kept = [4] * (n - 1) + [3]
    problem = None if counts.tolist() == kept else f"clipped counts {counts.tolist()} != {kept}"
    roomy = torch.zeros(4 * n, 2, device=dev)
    try:
        # This call still runs (every rank stays in step), then raises the earlier overflow.
        comm.alltoallv_dynamic(roomy, send, splits, counts)
        problem = checks.join_problems(problem, "the next call did not raise the overflow")
    except rcclx_core.InvalidArgumentError as e:
        want = f"output overflow on rank {me}: rank {n - 1} sent 4 rows starting at row {4 * n - 4}"
        problem = checks.join_problems(problem, None if want in str(e) else str(e))
    torch.cuda.synchronize()
    problem = checks.join_problems(
        problem, None if counts.tolist() == [4] * n else "the raising call did not run"
    )
    out["overflow raised by the next call"] = ("", problem)


def _checked_case(comm, out):
    """checked=True: the overflow is raised by work.wait() (async) or the call (sync), once."""
    import rcclx_core

    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    want = f"output overflow on rank {me}: rank {n - 1} sent 4 rows starting at row {4 * n - 4}"
    splits = torch.full((n,), 4, dtype=torch.int64, device=dev)
    send = torch.ones(4 * n, 2, device=dev)
    short = torch.zeros(4 * n - 1, 2, device=dev)
    counts = torch.zeros(n, dtype=torch.int64, device=dev)
    problem = None
    for async_op in (True, False):
        try:
            work = comm.alltoallv_dynamic(
                short, send, splits, counts, checked=True, async_op=async_op
            )
            work.wait()
            problem = checks.join_problems(problem, f"async_op={async_op}: nothing raised")
        except rcclx_core.InvalidArgumentError as e:
            problem = checks.join_problems(problem, None if want in str(e) else str(e))
    # Raised once: an exact-capacity call with known receive counts after it raises nothing.
    exact = torch.zeros(4 * n, 2, device=dev)
    known = torch.full((n,), 4, dtype=torch.int64, device=dev)
    try:
        comm.alltoallv_dynamic(
            exact, send, splits, known, output_split_sizes_known=True, checked=True
        ).wait()
        torch.cuda.synchronize()
        if not bool((exact == 1).all()):
            problem = checks.join_problems(problem, "known counts: rows differ")
    except rcclx_core.InvalidArgumentError as e:
        problem = checks.join_problems(problem, f"raised again: {e}")
    out["checked: overflow raised by work.wait()"] = ("", problem)


def _cudart():
    """The CUDA runtime torch loaded (found among this process's mappings)."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libcudart" in line}
    if not paths:
        raise RuntimeError("libcudart is not loaded in this process")
    return ctypes.CDLL(sorted(paths)[0])


def _node_types(graph) -> list[int]:
    rt = _cudart()
    g = ctypes.c_void_p(graph.raw_cuda_graph())
    count = ctypes.c_size_t(0)
    assert rt.cudaGraphGetNodes(g, None, ctypes.byref(count)) == 0
    nodes = (ctypes.c_void_p * count.value)()
    assert rt.cudaGraphGetNodes(g, nodes, ctypes.byref(count)) == 0
    types = []
    for i in range(count.value):
        t = ctypes.c_int(-1)
        assert rt.cudaGraphNodeGetType(ctypes.c_void_p(nodes[i]), ctypes.byref(t)) == 0
        types.append(t.value)
    return types


def _check_nodes(graph) -> str | None:
    types = _node_types(graph)
    bad = sorted({t for t in types if t not in _ALLOWED_NODES})
    if bad:
        return f"captured graph has node types {bad} (allowed {sorted(_ALLOWED_NODES)})"
    return None if 0 in types else "captured graph has no kernel node"


def _graph_case(comm, out):
    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    row, cap = 5, 9 * n
    send = torch.zeros(9 * n, row, device=dev)
    recv = torch.zeros(cap, row, device=dev)
    splits = torch.zeros(n, dtype=torch.int64, device=dev)
    counts = torch.zeros(n, dtype=torch.int64, device=dev)
    offsets = torch.zeros(n, dtype=torch.int64, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the first call allocates the staging: outside the capture
        comm.alltoallv_dynamic(recv, send, splits, counts, output_offsets=offsets)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph(keep_graph=True)  # its nodes are inspected below
    with torch.cuda.graph(graph):
        comm.alltoallv_dynamic(recv, send, splits, counts, output_offsets=offsets)
    out["graph nodes"] = ("", _check_nodes(graph))
    for step in range(12):
        m = _matrix(50 + step, n, ("random", "silent", "one_receiver")[step % 3])
        x, want = _inputs(m, me, row, torch.float32, dev, salt=step)
        send.zero_()
        send[: x.shape[0]].copy_(x)
        splits.copy_(m[me])
        recv.fill_(-1)
        graph.replay()
        col = m[:, me].to(dev)
        problem = checks.join_problems(
            None if torch.equal(counts, col) else f"counts {counts.tolist()} != {col.tolist()}",
            None if torch.equal(offsets, torch.cumsum(col, 0) - col) else "offsets differ",
            H.compare(recv[: want.shape[0]], want),
        )
        out[f"graph replay {step}"] = ("", problem)


def _moe_graph_case(comm, out):
    from torchcomms_rcclx import moe

    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    tokens, k, local, hidden = 16, 2, 4, 32
    experts = local * n
    x = torch.zeros(tokens, hidden, device=dev)
    ids = torch.zeros(tokens, k, dtype=torch.int64, device=dev)
    w = torch.zeros(tokens, k, device=dev)

    def layer():
        rows, counts, offsets, handle = moe.dispatch(comm, x, ids, experts, major_align=4)
        return moe.combine(comm, rows * 2, handle, weights=w), counts

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer()
        # No device-to-host synchronisation anywhere in dispatch / combine: torch raises on
        # any it performs (.item(), .tolist(), nonzero, a blocking copy...).
        torch.cuda.set_sync_debug_mode("error")
        try:
            layer()
            out["moe without host sync"] = ("", None)
        except RuntimeError as e:
            out["moe without host sync"] = ("", f"dispatch / combine synchronised: {e}")
        finally:
            torch.cuda.set_sync_debug_mode("default")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph(keep_graph=True)  # its nodes are inspected below
    with torch.cuda.graph(graph):
        y, counts = layer()
    out["moe graph nodes"] = ("", _check_nodes(graph))
    for step in range(10):
        routes = []
        for s in range(n):
            g = torch.Generator().manual_seed(700 + 10 * step + s)
            routes.append(torch.randint(0, experts, (tokens, k), generator=g))
        g = torch.Generator().manual_seed(900 + step + me)
        xs = torch.randint(-40, 40, (tokens, hidden), generator=g).float() / 8
        ws = torch.randint(-4, 5, (tokens, k), generator=g).float() / 4
        x.copy_(xs)
        ids.copy_(routes[me])
        w.copy_(ws)
        graph.replay()
        ref = (xs.double()[:, None, :] * 2 * ws.double()[..., None]).sum(1).float()
        mine = torch.cat([r.reshape(-1) for r in routes])
        want_counts = torch.bincount(mine, minlength=experts)[me * local : (me + 1) * local]
        # Exact in value: a weighted sum of a token's k rows may give -0.0 where the float64
        # reference gives 0.0, so signed zeros are not compared.
        problem = checks.join_problems(
            checks.same_values(y.cpu(), ref),
            None if torch.equal(counts.cpu(), want_counts) else f"counts {counts.tolist()}",
        )
        out[f"moe graph replay {step}"] = ("", problem)


def _gpu_rank(ctx):
    torch.cuda.set_device(ctx.device)
    comm = H.backend_of(ctx, "a2av_dyn", device=torch.device("cuda"))
    out = {}
    _eager_cases(comm, out)
    _overflow_case(comm, out)
    _checked_case(comm, out)
    _graph_case(comm, out)
    _moe_graph_case(comm, out)
    torch.cuda.synchronize()
    comm.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_alltoallv_dynamic_gpu(nranks):
    checks.assert_cases(launch(_gpu_rank, nranks, timeout=300), same_on_all_ranks=False)
