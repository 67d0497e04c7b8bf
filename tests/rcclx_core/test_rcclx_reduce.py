"""reduce, reduce_scatter and reduce_scatter_v: world size x dtype x op x count, roots moving,
in place and out of place, against exact or float64 references."""

import checks
import pytest
import rcclx_cases
import rcclx_helpers as H

from launcher import launch


def _reduce_rank(ctx):
    comm = H.comm_of(ctx)
    out = rcclx_cases.reduce(comm)
    comm.destroy()
    return out


def _reduce_scatter_rank(ctx, variable):
    comm = H.comm_of(ctx)
    out = rcclx_cases.reduce_scatter(comm, variable=variable)
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_reduce(nranks):
    results = launch(_reduce_rank, nranks, env=H.CHUNK_ENV, timeout=120)
    checks.assert_cases(results, expect_cases=len(H.reduction_cases()) * len(H.COUNTS))
    roots = {k.split("root=")[1].split()[0] for k in results[0].value}
    assert roots == {str(r) for r in range(nranks)}


@pytest.mark.parametrize("variable", [False, True], ids=["reduce_scatter", "reduce_scatter_v"])
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_reduce_scatter(nranks, variable):
    results = launch(_reduce_scatter_rank, nranks, variable, env=H.CHUNK_ENV, timeout=120)
    checks.assert_cases(results, expect_cases=len(H.reduction_cases()) * len(rcclx_cases.RS_COUNTS))
