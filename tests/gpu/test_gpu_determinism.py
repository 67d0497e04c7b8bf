"""Deterministic reductions on GPU buffers: every all_reduce algorithm (eager and captured in a
CUDA graph), reduce_scatter and reduce give the bits of the fold order (docs/determinism.rst) for
the whole message, for a prefix and for a window reduced alone; 2 and 3 ranks sharing the GPU
(under MPS where a daemon serves the environment, which nox -s gpu starts)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fold_reference import canonical, inputs_of, mismatch  # noqa: E402
from gpu_cases import current_stream, rank_device  # noqa: E402

from launcher import launch  # noqa: E402

pytestmark = pytest.mark.gpu

N = (3 << 20) + 5  # elements: past dda_tree's and into dda_large's sizes in float32
WINDOWS = [(0, N), (0, 1000), (123457, 97)]
ALGOS = ("dda_flat", "dda_tree", "dda_large", None)  # None: the selector's choice
TYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _on_gpu(name, array, dev):
    t = torch.from_numpy(array.copy()).to(dev)
    return t.view(TYPES[name]) if name == "bfloat16" else t


def _bits(name, t):
    host = t.cpu()
    return (
        (host.view(torch.int16) if name == "bfloat16" else host)
        .numpy()
        .view(np.uint16 if name == "bfloat16" else np.float32)
    )


def _rank(ctx):
    import rcclx_core as rc

    dev = rank_device(ctx)
    comm = ctx.communicator()
    n, me = ctx.nranks, ctx.rank
    bad, ran = {}, []

    def check(key, got, want):
        wrong = mismatch(got, want)
        if wrong:
            bad[key] = f"{wrong} of {len(want)} elements differ from the fold order"

    for name in TYPES:
        inputs = [inputs_of(name, r, N) for r in range(n)]
        want = canonical(name, inputs)
        for algo in ALGOS:
            for off, count in WINDOWS:
                x = _on_gpu(name, inputs[me][off : off + count], dev)
                try:
                    comm.all_reduce(x, algo=algo, stream=current_stream())
                except rc.InvalidArgumentError:
                    continue  # an algorithm this size cannot take (the selector says why)
                torch.cuda.synchronize()
                ran.append((name, algo, count))
                check(f"all_reduce {name} {algo} [{off}:+{count}]", _bits(name, x),
                      want[off : off + count])  # fmt: skip
        # Captured once, replayed twice: the same bits.
        x = _on_gpu(name, inputs[me], dev)
        y = torch.empty_like(x)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            comm.all_reduce(x, y, stream=current_stream())  # staging made outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            comm.all_reduce(x, y, stream=current_stream())
        for k in range(2):
            y.zero_()
            graph.replay()
            torch.cuda.synchronize()
            check(f"all_reduce {name} graph replay {k}", _bits(name, y), want)
        block = N // n
        x = _on_gpu(name, inputs[me][: block * n], dev)
        out = torch.empty(block, dtype=TYPES[name], device=dev)
        comm.reduce_scatter(x, out, stream=current_stream())
        torch.cuda.synchronize()
        check(f"reduce_scatter {name}", _bits(name, out), want[me * block : (me + 1) * block])
        x = _on_gpu(name, inputs[me], dev)
        comm.reduce(x, root=n - 1, stream=current_stream())
        torch.cuda.synchronize()
        if me == n - 1:
            check(f"reduce {name}", _bits(name, x), want)
    comm.destroy()
    ctx.barrier("done")
    return bad, ran


@pytest.mark.parametrize("nranks", [2, 3])
def test_gpu_reductions_fold_in_the_one_order(nranks):
    results = launch(_rank, nranks, timeout=240)
    problems = {f"rank {r.rank}: {k}": v for r in results for k, v in r.value[0].items()}
    assert not problems, "\n".join(f"{k}: {v}" for k, v in sorted(problems.items())[:40])
    ran = {(name, algo) for name, algo, _ in results[0].value[1]}
    assert {("float32", a) for a in ALGOS} <= ran, sorted(ran, key=str)
