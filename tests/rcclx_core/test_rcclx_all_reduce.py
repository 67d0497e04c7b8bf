"""all_reduce: every algorithm x world size x dtype x op x count, in place and out of place.

One launch per (world size, algorithm) runs every case. Rank 0 checks its output against an
exact or float64 reference (see rcclx_helpers); the parent checks that every rank's output has
the same bits. Chunks of 4 KiB make the large count span many pipeline steps.
"""

import checks
import pytest
import rcclx_cases
import rcclx_helpers as H

from launcher import launch

ALGOS = ["ring", "dda_flat", "dda_tree", "dda_large"]


def _all_reduce_rank(ctx, algo):
    comm = H.comm_of(ctx)
    out = rcclx_cases.all_reduce(comm, algo)
    comm.destroy()
    return out


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_all_reduce(nranks, algo):
    results = launch(_all_reduce_rank, nranks, algo, env=H.CHUNK_ENV, timeout=120)
    checks.assert_cases(results, expect_cases=len(H.reduction_cases()) * len(H.COUNTS))
