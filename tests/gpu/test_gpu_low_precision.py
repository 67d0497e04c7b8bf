"""Low-precision all_reduce, reduce_scatter, all_gather and all_to_all on GPU buffers (2 GPUs,
one process each): bit-for-bit equal to the model of each algorithm (float32 and bfloat16, SUM
and AVG, in place and out of place, odd counts, misaligned buffers, block sizes 64..1024,
multi-round sizes, NaN / inf / wide-range inputs), CUDA graph replays on changing inputs, the
knob path and its size threshold, and a clear error for a first hinted call inside a capture.
The checks live in tools/gpu/lp_check.py (the device check script runs them too). Skipped
without 2 GPUs.
"""

from __future__ import annotations

import os
import sys

import pytest

ctran = pytest.importorskip("ctran")
if ctran.cuda_device_count()[0] < 2:
    pytest.skip(
        f"needs 2 GPUs: {ctran.cuda_device_count()[1] or 'fewer than 2'}", allow_module_level=True
    )
pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "gpu"))
import lp_check as L  # noqa: E402
from gpu_common import run_ranks  # noqa: E402

pytestmark = pytest.mark.gpu


def test_low_precision_bit_exact_against_the_model():
    per_rank = run_ranks(L.check_rank, 2, L.SHAPES[:4], True, extra_ids=2, timeout=280)
    failures: list[str] = []
    total, ok = L.fold(per_rank, failures)
    assert not failures, "\n".join(failures[:20])
    assert total > 0 and ok == total
