"""all_reduce on GPU buffers (2 GPUs, one process each): every GPU algorithm over dtypes, ops
(PREMUL_SUM with a scalar per rank, BAND / BOR / BXOR) and odd counts against a float64
reference with bitwise-identical results on every rank; a one-rank communicator (PREMUL_SUM
still scales); outputs in symmetric buffers (alloc_symmetric: the all-gather stores into the
peers' outputs), their errors and their memory returned; graph capture then 100 replays on
changing inputs, with the outputs mapped at capture (graph registration) and without; device
memory returned after destroy; a peer that never joins becomes an error within the timeout (LL
lines, 128-byte lines, two-shot, staggered two-shot). The checks live in
tools/gpu/allreduce_check.py (the device check script runs them too). Skipped without 2 GPUs.
"""

from __future__ import annotations

import pytest
from gpu_support import require_gpus

require_gpus(2)

import allreduce_check as C  # noqa: E402
from gpu_common import run_ranks  # noqa: E402

pytestmark = pytest.mark.gpu


def _assert_all(per_rank):
    failures = []
    for cases in zip(*per_rank):
        errs = [f"rank {r}: {c['error']}" for r, c in enumerate(cases) if c["error"]]
        if errs:
            failures.append(f"{cases[0]['case']}: {'; '.join(errs)}")
        elif len({c["digest"] for c in cases}) != 1:
            failures.append(f"{cases[0]['case']}: ranks' results differ bitwise")
    assert not failures, "\n".join(failures[:20])
    assert len(per_rank[0]) > 0


def test_all_reduce_every_algorithm():
    _assert_all(run_ranks(C.correctness_rank, 2, (1, 1001, 65537), timeout=280))


def test_one_rank_premul_sum_scales_and_bitwise_copies():
    _assert_all(run_ranks(C.one_rank, 1, timeout=120))


def test_outputs_in_symmetric_buffers_go_zero_copy():
    _assert_all(run_ranks(C.symmetric_rank, 2, timeout=280))


def test_graph_capture_100_replays_outputs_registered_at_capture():
    _assert_all(run_ranks(C.graph_rank, 2, 100, True, timeout=280))


def test_graph_capture_staged_without_graph_registration():
    _assert_all(run_ranks(C.graph_rank, 2, 10, False, timeout=200))


def test_no_device_memory_left_after_destroy():
    lost = run_ranks(C.leak_rank, 2, 3, timeout=120)
    assert all(abs(d) < (4 << 20) for d in lost), f"device bytes not returned, by rank: {lost}"


@pytest.mark.parametrize(
    "algo, tuning, symmetric, capture",
    [
        ("dda_flat", "", False, False),
        ("dda_flat", "flat_lines_min_bytes=1", False, False),
        ("dda_tree", "", False, False),
        ("dda_tree", "tree_symmetric_min_bytes=1", True, False),
        ("dda_tree", C.STAGGERED_TWO_SHOT, False, False),
        ("dda_tree", "", False, True),
    ],
    ids=[
        "dda_flat",
        "dda_flat_lines",
        "dda_tree",
        "dda_tree_zero_copy",
        "dda_tree_two_shot_staggered",
        "dda_tree_captured",
    ],
)
def test_stalled_peer_is_an_error_not_a_hang(algo, tuning, symmetric, capture):
    st = run_ranks(C.stalled_peer_rank, 2, 2000, algo, tuning, symmetric, capture, timeout=60)[0]
    assert st["error"] is not None, f"all_reduce without its peer completed: {st}"
    assert st["seconds"] < 15, f"the error took {st['seconds']:.1f} s for a 2 s timeout"
