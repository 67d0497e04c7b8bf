"""Collectives on CuPy arrays (DLPack, CuPy's own stream), 2 ranks (sharing a GPU where the
machine has one): all_reduce with every GPU algorithm and an all_gather, compared exactly (small
integers, so every sum is exact). Skipped without CuPy."""

from __future__ import annotations

import pytest

cupy = pytest.importorskip("cupy")

from launcher import launch, values  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
COUNT = 100_003  # odd: the kernels' tails run too


def _cupy_rank(ctx) -> list[str]:
    cupy.cuda.Device(ctx.device).use()
    comm = ctx.communicator()
    stream = cupy.cuda.get_current_stream()
    problems = []
    want = float(sum(r + 1 for r in range(ctx.nranks)))
    for algo in ("dda_flat", "dda_tree", "dda_large", "auto"):
        x = cupy.full((COUNT,), float(ctx.rank + 1), dtype=cupy.float32)
        comm.all_reduce(x, algo=algo, stream=stream.ptr)
        stream.synchronize()
        wrong = int(cupy.count_nonzero(x != want))
        if wrong:
            problems.append(f"all_reduce {algo}: {wrong} of {COUNT} elements differ from {want}")
    mine = cupy.arange(COUNT, dtype=cupy.int32) + ctx.rank * COUNT
    gathered = cupy.full((COUNT * ctx.nranks,), -1, dtype=cupy.int32)
    comm.all_gather(mine, gathered, stream=stream.ptr)
    stream.synchronize()
    wrong = int(cupy.count_nonzero(gathered != cupy.arange(COUNT * ctx.nranks, dtype=cupy.int32)))
    if wrong:
        problems.append(f"all_gather: {wrong} elements out of place")
    comm.destroy()
    return problems


def test_cupy_arrays_on_cupy_streams():
    problems = values(launch(_cupy_rank, NRANKS, timeout=120))
    assert problems == [[]] * NRANKS, problems
