"""The GPU side of allreduce that runs without a GPU: the pure selector's GPU choices and
errors, and a communicator asked for a GPU on a build or machine without one failing cleanly."""

import pytest

import rcclx_core as rc
from launcher import launch

KIB, MIB = 1 << 10, 1 << 20


@pytest.mark.parametrize(
    "nbytes, algo",
    [
        (0, "dda_flat"),
        (256 * KIB, "dda_flat"),
        (256 * KIB + 1, "dda_tree"),
        (32 * MIB, "dda_tree"),
        (32 * MIB + 1, "dda_large"),
        (1 << 30, "dda_large"),
    ],
)
def test_gpu_thresholds(nbytes, algo):
    assert rc._testing.select_all_reduce(nbytes, gpu=True)[0] == algo


def test_gpu_thresholds_are_configurable():
    assert rc._testing.select_all_reduce(MIB, gpu=True, gpu_flat_max_bytes=2 * MIB)[0] == "dda_flat"
    assert (
        rc._testing.select_all_reduce(
            MIB, gpu=True, gpu_flat_max_bytes=KIB, gpu_tree_max_bytes=KIB
        )[0]
        == "dda_large"
    )


def test_forced_gpu_algorithms():
    for algo in ("dda_flat", "dda_tree", "dda_large"):
        assert rc._testing.select_all_reduce(64, gpu=True, forced=algo) == (
            algo,
            f"forced by forced='{algo}'",
        )


def test_ring_is_refused_on_gpu_and_dda_large_without_direct_access():
    with pytest.raises(rc.InvalidArgumentError, match="ring is not implemented on GPU"):
        rc._testing.select_all_reduce(64, gpu=True, forced="ring")
    with pytest.raises(rc.InvalidArgumentError, match="dda_large needs every rank on one host"):
        rc._testing.select_all_reduce(64, forced="dda_large", direct_access=False)


def test_gpu_needs_one_host():
    with pytest.raises(rc.InvalidArgumentError, match="one host"):
        rc._testing.select_all_reduce(64, gpu=True, num_hosts=2)


def _comm_with_device(ctx):
    import ctran

    if ctran.cuda_device_count()[0] > 0:
        return "has a GPU"
    try:
        # The launch's store outlives both ranks, so neither sees the other's exit.
        rc.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks, device=0)
    except ctran.CudaError as e:
        return str(e)
    return "no error"


def test_device_without_gpu_is_a_clean_error():
    import ctran

    if ctran.cuda_device_count()[0] > 0:
        pytest.skip("this machine has a GPU")
    for r in launch(_comm_with_device, 2, timeout=60):
        assert "GPU" in r.value, r.value
