"""Low-precision all_reduce, reduce_scatter, all_gather and all_to_all on GPU buffers (2 GPUs,
one process each): bit-for-bit equal to the model of each algorithm (float32 and bfloat16, SUM
and AVG, in place and out of place, odd counts, misaligned buffers, block sizes 64..1024,
multi-round sizes, NaN / inf / wide-range inputs), CUDA graph replays on changing inputs, the
knob path and its size threshold, and a clear error for a first hinted call inside a capture.
The checks live in tools/gpu/lp_check.py (the device check script runs them too). Skipped
without 2 GPUs.
"""

from __future__ import annotations

import pytest
from gpu_support import require_gpus

require_gpus(2)

import lp_check as L  # noqa: E402
from gpu_common import run_ranks  # noqa: E402

pytestmark = pytest.mark.gpu


def test_low_precision_bit_exact_against_the_model():
    per_rank = run_ranks(L.check_rank, 2, L.SHAPES[:4], True, extra_ids=2, timeout=280)
    failures: list[str] = []
    total, ok = L.fold(per_rank, failures)
    assert not failures, "\n".join(failures[:20])
    assert total > 0 and ok == total
