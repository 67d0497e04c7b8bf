"""The short soak: a few thousand random collectives on 4 CPU ranks, every result right, no
file descriptor or thread left behind, resident memory flat. `nox -s soak` runs the long one
(tests/soak/soak_run.py, 100000 steps)."""

import gc

import pytest
import soak_run

from launcher import launch

NRANKS = 4
STEPS = 3000
# Trimmed RSS (after malloc_trim, see soak_run) may grow 5% of the warm-up sample plus this
# much. The short run's processes are small (about 55 MiB each, most of it the interpreter,
# numpy and the libraries), so 5% is under 3 MiB, and its warm-up is short (150 steps): the
# trimmed RSS still creeps up about 1 MiB over the 2850 steps after it, by less and less
# (about +2.4% after 100000 steps on the ranks that do not host the bootstrap store, see the
# last test; no leak of the library traced to it). The slack keeps load and timing from failing
# the test; a leak of more than about 1.3 KiB per step still fails it. The raw RSS moves by
# several MiB either way from sample to sample (the allocator's free heap), which would hide
# such a leak; it is printed, not checked.
RSS_SLACK_KIB = 2 * 1024


@pytest.fixture(scope="module")
def short_soak() -> soak_run.SoakReport:
    return soak_run.run_soak(NRANKS, STEPS, seed=0, timeout=120)


@pytest.mark.slow
def test_every_result_is_right(short_soak):
    assert short_soak.checked > STEPS * NRANKS  # every step checks at least one output per rank
    assert short_soak.wrong == 0, "\n".join(short_soak.problems())


@pytest.mark.slow
def test_no_fd_or_thread_is_left_behind(short_soak):
    for rank in range(NRANKS):
        assert short_soak.delta(rank, "fds") == 0, "\n".join(short_soak.lines())
        assert short_soak.delta(rank, "threads") == 0, "\n".join(short_soak.lines())


@pytest.mark.slow
def test_resident_memory_is_flat(short_soak):
    for rank, r in enumerate(short_soak.ranks):
        allowed = r["start"]["trimmed_kib"] * 0.05 + RSS_SLACK_KIB
        grown = short_soak.delta(rank, "trimmed_kib")
        assert grown <= allowed, f"rank {rank}\n" + "\n".join(short_soak.lines())


def test_the_soak_sees_wrong_results_and_leaked_fds():
    """The checks themselves: corrupted outputs are counted as wrong and a file left open
    after the warm-up sample shows as a changed fd count, failing the run."""
    report = soak_run.run_soak(NRANKS, 200, seed=1, timeout=60, faults=("wrong", "fd"))
    assert report.wrong > 0
    assert all(report.delta(rank, "fds") == 1 for rank in range(NRANKS))
    failures = " ".join(report.failures())
    assert "wrong results" in failures and "open fds changed by +1" in failures


SPLIT_CYCLES = 150


def _split_cycles_rank(ctx, cycles: int) -> int:
    """This rank's trimmed RSS growth (KiB) over `cycles` rounds of split + destroy."""
    import rcclx_core as rc

    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)

    def cycle():
        comm.split(0, key=ctx.rank).destroy()

    for _ in range(10):  # warm-up: first-use allocations
        cycle()
    gc.collect()
    before = soak_run.resources()["trimmed_kib"]
    for _ in range(cycles):
        cycle()
    gc.collect()
    after = soak_run.resources()["trimmed_kib"]
    comm.barrier()  # rank 0 samples before the others leave the store it hosts
    comm.destroy()
    return after - before


@pytest.mark.slow
def test_split_and_destroy_leave_nothing_behind():
    """What the long soak found on rank 0 (the bootstrap store's host grew about 12 KiB per
    split + destroy while the store kept every allGather and barrier key, then 3.4 KiB while it
    kept each call's "all read" flag and each communicator's join and size records): every
    rank stays within 256 KiB over these cycles (measured: 0 KiB over 150 and 450)."""
    results = launch(_split_cycles_rank, NRANKS, SPLIT_CYCLES, env=soak_run.SOAK_ENV, timeout=120)
    grown = [r.value for r in results]
    assert max(grown) < 256, f"trimmed RSS growth per rank, KiB: {grown}"


def test_the_gpu_soak_script_runs_on_the_cpu(capsys):
    # The GPU soak (nox -s gpu's long run) drives the rcclx backend's own calls, alltoallv_dynamic
    # among them; a short CPU run keeps the script in step with the backend between GPU runs.
    import gpu_soak_run

    assert gpu_soak_run.main(["--device", "cpu", "--ops", "200", "--ranks", "2"]) == 0
    assert "passed" in capsys.readouterr().out
