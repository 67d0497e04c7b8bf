"""Every collective but allreduce on GPU buffers (2 GPUs, one process each): all_gather(_v),
reduce_scatter(_v), all_to_all(_v), broadcast, reduce, gather, scatter, send / recv and barrier
over dtypes, operators (PREMUL_SUM with a scalar per rank, BAND / BOR / BXOR), odd counts and
multi-round sizes, compared bitwise with a torch reference (and across ranks where every rank
gets the same output); one CUDA graph of all of them replayed on changing inputs; a send whose
receiver never comes fails within the timeout. The checks live in
tools/gpu/collectives_check.py (the device check script runs them too). Skipped without 2 GPUs.
"""

from __future__ import annotations

import pytest
from gpu_support import require_gpus

require_gpus(2)

import collectives_check as C  # noqa: E402
from gpu_common import run_ranks  # noqa: E402

pytestmark = pytest.mark.gpu


def _assert_all(per_rank):
    failures = []
    total, ok = C.fold(per_rank, failures)
    assert not failures, "\n".join(failures[:20])
    assert total > 0 and ok == total


def test_every_collective_odd_counts_and_rounds():
    _assert_all(run_ranks(C.check_rank, 2, (1, 1001, 3_000_001), timeout=280))


def test_graph_capture_replays():
    _assert_all(run_ranks(C.graph_rank, 2, 20, timeout=200))


def test_send_without_receiver_is_an_error_not_a_hang():
    st = run_ranks(C.stalled_receiver_rank, 2, 2000, timeout=60)[0]
    assert st["error"] is not None, f"a send without its receiver completed: {st}"
    assert st["seconds"] < 15, f"the error took {st['seconds']:.1f} s for a 2 s timeout"
