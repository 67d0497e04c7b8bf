"""broadcast, gather, scatter, all_gather(_v), all_to_all(_v): world size x dtype x count,
arbitrary bit patterns (NaNs included) compared bitwise, roots moving, in place and out of place."""

import checks
import pytest
import rcclx_cases
import rcclx_helpers as H

from launcher import launch

FAMILIES = {
    "broadcast_gather_scatter": rcclx_cases.broadcast_gather_scatter,
    "all_gather": rcclx_cases.all_gather,
    "all_to_all": rcclx_cases.all_to_all,
}


def _family_rank(ctx, family):
    comm = H.comm_of(ctx)
    out = FAMILIES[family](comm)
    comm.destroy()
    return out


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_data_movement(nranks, family):
    results = launch(_family_rank, nranks, family, env=H.CHUNK_ENV, timeout=120)
    per_case = {"broadcast_gather_scatter": 3, "all_gather": 2, "all_to_all": 3}[family]
    checks.assert_cases(results, expect_cases=per_case * len(H.SPECS) * len(H.COUNTS))
