"""all_reduce under CUDA graph capture, 2 ranks: one graph holding every algorithm, replayed on
fresh inputs with every replay checked against the float64 reference and across ranks, with
graph registration (RCCLX_GPU_GRAPH_REGISTER=1: ordinary outputs mapped at capture) and without
it. Outputs are ordinary tensors, a symmetric buffer, a tensor one element in on odd ranks (the
outputs then differ modulo 16 bytes, so the call must stay staged) and a tensor in one of
torch's expandable segments (no IPC handle: staged). The calls that went zero-copy are counted
at capture, and the mappings must be gone once the graph is.
"""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
from gpu_cases import (  # noqa: E402
    Cases,
    all_reduce_reference,
    compare,
    current_stream,
    expandable_tensor,
    make_input,
    rank_device,
)

import rcclx_core as rc  # noqa: E402
from launcher import launch  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
# (algorithm, dtype, count, output): "plain" a tensor of its own, "symmetric" a slice of a
# symmetric buffer, "skewed" a plain tensor one element in on odd ranks, "expandable" a tensor
# in an expandable segment.
PLAN = [
    ("dda_flat", "bfloat16", 1001, "plain"),
    ("dda_tree", "float32", 65537, "plain"),
    ("dda_large", "bfloat16", 3_000_001, "plain"),  # registered when captured
    ("auto", "float32", 4097, "plain"),
    ("dda_flat", "float32", 300_000, "plain"),  # 128-byte lines
    ("dda_tree", "bfloat16", 2_000_001, "plain"),  # lines: not registered
    ("dda_tree", "bfloat16", 4_194_307, "plain"),  # 8 MiB + 6 bytes: registered when captured
    ("dda_large", "float32", 2_000_003, "skewed"),
    ("dda_tree", "float16", 4_194_304, "expandable"),
    ("dda_tree", "bfloat16", 4_194_305, "symmetric"),
    ("dda_large", "float32", 3_000_001, "symmetric"),
]


def _zero_copy(algo, dtype_bytes, count, output, register):
    """Whether the captured call should store straight into the peers' outputs."""
    pays = algo == "dda_large" or (algo == "dda_tree" and count * dtype_bytes >= 6 << 20)
    if output == "symmetric":
        return pays
    return pays and register and output == "plain"


def _outputs(comm, ins, dtypes, rank, dev):
    """The output of every PLAN entry, and the symmetric buffer the symmetric ones are in."""
    symmetric = [x for x, (*_, o) in zip(ins, PLAN) if o == "symmetric"]
    sym = comm.alloc_symmetric(sum(x.nbytes + 256 for x in symmetric))
    outs, at = [], 0
    for x, d, (_, _, c, output) in zip(ins, dtypes, PLAN):
        if output == "symmetric":
            outs.append(sym.as_tensor(torch.uint8)[at : at + x.nbytes].view(d))
            at += (x.nbytes + 255) // 256 * 256
        elif output == "skewed":
            outs.append(torch.empty(c + 1, dtype=d, device=dev)[rank % 2 :][:c])
        elif output == "expandable":
            segment = expandable_tensor(dev)
            assert segment is not None, "torch did not put a tensor in an expandable segment"
            outs.append(segment[: c * d.itemsize].view(d))
        else:
            outs.append(torch.empty_like(x))
    return outs, sym


def _graph_rank(ctx, replays, register):
    """One graph holding every PLAN call, replayed on fresh inputs; each replay checked."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    n = ctx.nranks
    dtypes = [getattr(torch, t) for _, t, _, _ in PLAN]
    ins = [torch.empty(c, dtype=d, device=dev) for (_, _, c, _), d in zip(PLAN, dtypes)]
    outs, sym = _outputs(comm, ins, dtypes, ctx.rank, dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # eager warm-up, off the capture
        for (algo, *_), x, o in zip(PLAN, ins, outs):
            x.normal_()
            comm.all_reduce(x, o, algo=algo, stream=current_stream())
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    c = Cases()
    g = torch.cuda.CUDAGraph()
    before = rc._testing.symmetric_calls(comm)
    with torch.cuda.graph(g):
        for (algo, *_), x, o in zip(PLAN, ins, outs):
            comm.all_reduce(x, o, algo=algo, stream=current_stream())
    counted = rc._testing.symmetric_calls(comm) - before
    zero_copy = [
        _zero_copy(a, d.itemsize, n_, o, register) for (a, _, n_, o), d in zip(PLAN, dtypes)
    ]
    want = sum(zero_copy)
    c.record(
        "zero-copy calls counted at capture",
        None if counted == want else f"{counted} counted, expected {want}",
    )
    held = rc._testing.graph_registrations(comm)
    want_held = sum(z and o != "symmetric" for z, (*_, o) in zip(zero_copy, PLAN))
    c.record(
        "outputs mapped for the live graph",
        None if held == want_held else f"{held} held, expected {want_held}",
    )
    for rep in range(replays):
        seeds = [5000 + rep * 20 + i for i in range(len(PLAN))]
        for (_, _, count, _), d, x, o, seed in zip(PLAN, dtypes, ins, outs, seeds):
            x.copy_(make_input(d, count, "SUM", seed, ctx.rank, dev))
            checks.poison(o)
        g.replay()
        torch.cuda.synchronize()
        for (algo, t, count, output), d, o, seed in zip(PLAN, dtypes, outs, seeds):
            ref = all_reduce_reference(d, count, "SUM", seed, n, dev)
            c.record(f"replay {rep} {algo} {t} n={count} {output}", compare(o, ref, n), o)
    del g
    torch.cuda.synchronize()
    # The runtime reports a destroyed graph on a thread of its own, soon after.
    deadline = time.monotonic() + 10
    while rc._testing.graph_registrations(comm) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = rc._testing.graph_registrations(comm)
    c.record(
        "mappings closed once the graph is destroyed",
        None if left == 0 else f"{left} still held 10 s after the graph was destroyed",
    )
    sym.free()
    comm.destroy()
    return c.results


@pytest.mark.parametrize(
    "replays, register",
    [pytest.param(100, True, id="registered"), pytest.param(10, False, id="staged")],
)
def test_graph_replays_on_changing_inputs(replays, register):
    env = {"RCCLX_GPU_GRAPH_REGISTER": int(register)}
    results = launch(_graph_rank, NRANKS, replays, register, env=env, timeout=240)
    checks.assert_cases(results, expect_cases=3 + replays * len(PLAN))
