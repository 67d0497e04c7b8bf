"""The check behind #wrong and maxerr, on deliberately corrupted results (it must notice what a
broken collective does), and the host buffers' layouts it reads (out of place, in place)."""

from __future__ import annotations

import numpy as np
import pytest

from rcclx_core.perf import check
from rcclx_core.perf.buffers import HostPlacement, Workspace
from rcclx_core.perf.spec import ROOT, Config, a2av_counts


def sends(cfg: Config, n: int, count: int) -> list[np.ndarray]:
    return [check.send_buffer(cfg, n, r, count) for r in range(n)]


@pytest.mark.parametrize("datatype", ["float16", "bfloat16", "int32"])
def test_check_counts_what_a_broken_all_reduce_gets_wrong(datatype):
    cfg, n, count = Config(datatype=datatype), 4, 1000
    dt = cfg.dtype
    inputs = [check.to_float64(s, dt) for s in sends(cfg, n, count)]
    good = check.to_storage(sum(inputs), dt)
    assert check.count_wrong(cfg, n, 0, count, good) == 0

    off_by_one = good.copy()
    off_by_one[[0, 17, 999]] = check.to_storage(check.to_float64(good[[0, 17, 999]], dt) + 1, dt)
    assert check.count_wrong(cfg, n, 0, count, off_by_one) == 3
    missing_rank = check.to_storage(sum(inputs[:-1]), dt)
    assert check.count_wrong(cfg, n, 0, count, missing_rank) == np.count_nonzero(inputs[-1])
    never_written = check.poison(good.copy())
    assert check.count_wrong(cfg, n, 0, count, never_written) == count


def test_check_counts_misplaced_all_to_all_blocks():
    cfg, n, count, rank = Config(collective="all_to_all", datatype="float32"), 3, 50, 1
    blocks = [s.reshape(n, count) for s in sends(cfg, n, count)]
    good = np.concatenate([blocks[src][rank] for src in range(n)])
    assert check.count_wrong(cfg, n, rank, count, good) == 0
    swapped = np.concatenate([blocks[src][rank] for src in (1, 0, 2)])
    assert check.count_wrong(cfg, n, rank, count, swapped) == 2 * count


def _a2av_segments(cfg, n, count, src):
    """Rank src's send buffer split into the uneven blocks it sends to each rank."""
    edges = np.cumsum([0] + [a2av_counts(count, n, src, d) for d in range(n)])
    buf = check.send_buffer(cfg, n, src, count)
    return [buf[edges[d] : edges[d + 1]] for d in range(n)]


def test_check_counts_all_to_all_v_blocks_from_the_wrong_rank_or_of_the_wrong_size():
    cfg, n, count, me = Config(collective="all_to_all_v", datatype="int32"), 3, 7, 2
    segs = [_a2av_segments(cfg, n, count, s) for s in range(n)]
    assert len(check.send_buffer(cfg, n, 0, count)) == count * 6  # n(n+1)/2 counts
    good = np.concatenate([segs[s][me] for s in range(n)])
    assert check.count_wrong(cfg, n, me, count, good) == 0
    # as if every rank had sent equal blocks of the first rank's counts: shifted positions
    shifted = np.concatenate([segs[0][me], segs[2][me], segs[1][me]])
    assert check.count_wrong(cfg, n, me, count, shifted) > count
    own = good.copy()
    own[-len(segs[2][me]) :] = segs[2][0][: len(segs[2][me])]  # the block rank 2 sent to 0
    assert check.count_wrong(cfg, n, me, count, own) > 0


def test_check_counts_a_send_recv_ring_turning_the_wrong_way():
    cfg, n, count = Config(collective="send_recv", datatype="float32"), 3, 64
    ins = sends(cfg, n, count)
    for me in range(n):
        assert check.count_wrong(cfg, n, me, count, ins[(me - 1) % n]) == 0
        assert check.count_wrong(cfg, n, me, count, ins[(me + 1) % n]) == count


def test_check_of_gather_reads_the_root_only_and_notices_swapped_blocks():
    cfg, n, count = Config(collective="gather", datatype="bfloat16"), 3, 40
    ins = sends(cfg, n, count)
    good = np.concatenate(ins)
    assert check.count_wrong(cfg, n, ROOT, count, good) == 0
    swapped = np.concatenate([ins[1], ins[0], ins[2]])
    assert check.count_wrong(cfg, n, ROOT, count, swapped) == 2 * count
    assert check.count_wrong(cfg, n, 1, count, check.poison(good.copy())) == 0  # not the root


def test_check_of_scatter_wants_the_roots_block_of_this_rank():
    cfg, n, count = Config(collective="scatter", datatype="uint8"), 3, 33
    root_blocks = check.send_buffer(cfg, n, ROOT, count).reshape(n, count)
    for me in range(n):
        assert check.count_wrong(cfg, n, me, count, root_blocks[me]) == 0
        assert check.count_wrong(cfg, n, me, count, root_blocks[(me + 1) % n]) > 0.9 * count
    own_input = check.send_buffer(cfg, n, 1, count).reshape(n, count)[1]  # not the root's
    assert check.count_wrong(cfg, n, 1, count, own_input) > 0.9 * count


@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "all_gather"])
def test_low_precision_error_measures_fp8_rounding_and_fails_a_broken_result(collective):
    cfg, n, count = Config(collective=collective, datatype="float32", low_precision=True), 2, 512
    bound = check.lp_bound(cfg, n)
    index = 1 if collective == "reduce_scatter" else 0
    parts = [check.to_float64(check.block(cfg, n, r, index, count), cfg.dtype) for r in range(n)]
    assert all(p.min() >= 0.25 for p in parts)  # positive: a sum has no cancellation
    if collective == "all_gather":
        exact = np.concatenate(
            [check.to_float64(check.block(cfg, n, r, 0, count), cfg.dtype) for r in range(n)]
        )
    else:
        exact = sum(parts)
    assert check.max_error(cfg, n, 1, count, check.to_storage(exact, cfg.dtype)) < 1e-6
    # every element off by 3% (FP8 e4m3 rounds by up to 1/16): within the bound
    rounded = check.to_storage(
        exact * (1 + 0.03 * np.sign(np.sin(np.arange(exact.size)))), cfg.dtype
    )
    assert 0.02 < check.max_error(cfg, n, 1, count, rounded) < bound
    if collective != "all_gather":  # a rank's contribution lost: far above the bound
        lost = check.to_storage(parts[0], cfg.dtype)
        assert check.max_error(cfg, n, 1, count, lost) > 3 * bound
    nan = check.poison(check.to_storage(exact, cfg.dtype))
    assert check.max_error(cfg, n, 1, count, nan) == float("inf")
    assert check.evaluate(cfg, n, 1, count, rounded).keys() == {"max_error"}


def test_low_precision_bound_is_the_documented_one_per_quantization():
    one = check.lp_bound(Config(collective="all_gather", low_precision=True), 2)
    two = check.lp_bound(Config(collective="all_reduce", low_precision=True), 2)
    assert one == pytest.approx(1 / 16, rel=1e-3) and two == pytest.approx(
        (17 / 16) ** 2 - 1, rel=1e-3
    )


def _offset(view: np.ndarray, whole: np.ndarray) -> int:
    return (view.ctypes.data - whole.ctypes.data) // view.itemsize


def test_buffer_layouts_in_place_as_nccl_tests_and_reset():
    n, rank, count, poison = 3, 1, 10, np.iinfo(np.int32).min

    def buffers(collective, inplace):
        cfg = Config(collective=collective, datatype="int32")
        ws = Workspace(cfg, HostPlacement(cfg.dtype), n, rank, count)
        bufs = ws.get(inplace)
        assert ws.get(inplace) is bufs  # shared by the columns that lay it out alike
        bufs.reset()
        assert np.array_equal(bufs.send, ws.inputs)
        return bufs

    same = buffers("all_reduce", True)
    assert same.send is same.recv
    gather = buffers("all_gather", True)  # send = block `rank` of recv, the rest poisoned
    assert len(gather.recv) == n * count and _offset(gather.send, gather.recv) == rank * count
    assert np.all(np.delete(gather.recv, np.arange(count, 2 * count)) == poison)
    scatter = buffers("reduce_scatter", True)  # recv = block `rank` of send
    assert len(scatter.send) == n * count and _offset(scatter.recv, scatter.send) == rank * count
    apart = buffers("all_gather", False)
    assert not np.shares_memory(apart.send, apart.recv) and np.all(apart.recv == poison)
