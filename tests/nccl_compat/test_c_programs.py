"""The NCCL ABI from plain C programs (c/*.c, compiled here against our nccl.h and nccl_device.h
only), as 2-4 processes on host memory: every collective verified exactly, groups, split /
shrink, the ways of initialising, abort from another thread, errors, ncclConfig_t of other NCCL
versions, and the device API's host calls."""

from __future__ import annotations

import pytest
from nccl_programs import build, check_ranks, check_ranks_passed, rank_env, run_ranks

import launcher


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_collectives(nranks):
    results = run_ranks(build("collectives.c"), nranks)
    check_ranks_passed(results)


@pytest.mark.parametrize("nranks", [2, 3])
def test_per_collective_config_calls(nranks):
    results = run_ranks(build("coll_config.c"), nranks, env=rank_env({"RCCLX_DEBUG": "INFO"}))
    check_ranks(results)
    log = results[0].stderr
    # each all_reduce's choice, in call order: automatic twice, then Tree as dda_tree, the first
    # algorithm this library has in "NVLS,ring", the allreduce segment, automatic twice more
    for picked in ("-> dda_tree", "-> ring", "-> dda_flat (forced"):
        assert picked in log, log


def test_parameter_calls_read_the_knobs():
    env = rank_env(
        {
            "RCCLX_TIMEOUT_MS": "70000",
            "RCCLX_P2P_CHUNK_BYTES": "16M",
            "RCCL_LOW_PRECISION_ENABLE": "1",
            "NCCL_DEBUG": "WARN",
        }
    )
    (result,) = run_ranks(build("params.c"), 1, env=env)
    check_ranks([result])


@pytest.mark.parametrize("nranks", [2, 3])
def test_device_api_host_calls(nranks):
    # nccl_device.h compiled as C: ncclCommQueryProperties, and ncclDevCommCreate refusing.
    results = run_ranks(build("device_api.c"), nranks)
    check_ranks_passed(results)
    # The refusal is logged once per call at WARN, naming the call and the requirements.
    assert "ncclDevCommCreate: RCCLX provides no device communicators" in results[0].stderr


@pytest.mark.parametrize("library", ["nccl", "rccl"])
def test_ll_all_to_all_gin_scratch_and_debug_reset(library):
    # ncclLLA2ACalcSlots counts, the LL all-to-all and GIN scratch requirements refuse, and
    # ncclResetDebugInitInternal re-reads RCCLX_DEBUG: the program made three refusals, at NONE,
    # WARN and NONE again, and only the second is logged.
    exe = build("lla2a_gin_debug.c", library=library)
    (result,) = run_ranks(exe, 1, env=rank_env({"RCCLX_DEBUG": "NONE"}))
    check_ranks([result])
    assert "rank 0: passed (0 failures)" in result.stdout
    logged = [line for line in result.stderr.splitlines() if "ncclGinOutboxCreate" in line]
    assert len(logged) == 1, result.stderr[-3000:]
    assert logged[0].endswith(
        "WARN] ncclGinOutboxCreateRequirement: nBlocks -102 is negative (invalid argument)"
    ), logged


@pytest.mark.parametrize("nranks", [2, 3])
def test_one_sided_calls_on_host_windows(nranks):
    # ncclPutSignal / ncclSignal / ncclWaitSignal: a ring, all pairs, a sender far ahead.
    results = run_ranks(build("one_sided.c"), nranks, timeout=120)
    check_ranks_passed(results)
    # A call on a stream (device-memory windows) is refused, saying why there is no GPU.
    assert "comm is a host-memory communicator (RCCLX_NCCL_HOST_ONLY is set" in results[0].stdout


def test_one_sided_call_on_a_stream_names_the_missing_gpu():
    # Without RCCLX_NCCL_HOST_ONLY a communicator is a host one only where no GPU is usable; the
    # refusal of a call on a stream then carries the runtime's reason.
    if launcher.gpu_count() > 0:
        pytest.skip("a GPU is usable here: the communicator would be a GPU one")
    env = rank_env({"RCCLX_NCCL_HOST_ONLY": "0"})
    results = run_ranks(build("one_sided.c"), 2, env=env, timeout=120)
    check_ranks(results)
    assert "comm is a host-memory communicator (no GPU: " in results[0].stdout, results[0].stdout


def test_one_sided_calls_over_tcp():
    # The same with every pair of ranks on tcp (as ranks on different hosts are).
    env = rank_env({"RCCLX_TRANSPORT": "tcp"})
    check_ranks(run_ranks(build("one_sided.c"), 2, env=env, timeout=120))


def test_collectives_over_tcp_with_nccl_comm_id():
    # NCCL_COMM_ID: every rank calls ncclGetUniqueId itself; rank 0 hosts the store there.
    env = rank_env({"RCCLX_TRANSPORT": "tcp"}, comm_id=True)
    check_ranks(run_ranks(build("collectives.c"), 2, env=env))


def test_rcclx_knobs_apply_through_the_abi():
    # The core reads RCCLX_* / RCCL_* at communicator creation; the ABI passes them untouched.
    env = rank_env({"RCCLX_ALLREDUCE_ALGO": "ring", "RCCLX_DEBUG": "INFO"})
    results = run_ranks(build("collectives.c"), 2, env=env)
    check_ranks(results)
    assert "-> ring" in results[0].stderr
    assert "-> dda_flat" not in results[0].stderr


def test_collectives_on_librccl():
    check_ranks(run_ranks(build("collectives.c", library="rccl"), 2))


def test_nonblocking_init():
    results = run_ranks(build("init_modes.c"), 3, ("nonblocking",))
    check_ranks(results)


@pytest.mark.parametrize("mode", ["group", "initall"])
def test_one_thread_drives_several_ranks(mode):
    # One process: three communicators of one clique from one thread.
    check_ranks(run_ranks(build("init_modes.c"), 3, (mode,), launched=1))


def test_two_ranks_per_process_in_groups():
    # As nccl-tests -g 2 under MPI: 2 processes, each driving 2 of the 4 ranks from one thread.
    check_ranks(run_ranks(build("init_modes.c"), 4, ("two_per_process",), launched=2))


def test_abort_from_watchdog_thread():
    check_ranks(run_ranks(build("init_modes.c"), 2, ("abort",)))


@pytest.mark.parametrize("mode", ["dead_peer", "dead_peer_group"])
def test_dead_peer_reaches_watchdog_then_abort(mode):
    env = rank_env({"RCCLX_TIMEOUT_MS": "5000"})
    results = run_ranks(build("init_modes.c"), 2, (mode,), env=env, timeout=60)
    check_ranks(results)
    assert f"rank 0 {mode}: passed" in results[0].stdout


@pytest.mark.parametrize("nranks", [3, 4])
def test_dead_peer_fails_every_survivor_at_once(nranks):
    # A timeout far beyond the bound below: only the failure's propagation can be that fast.
    env = rank_env({"RCCLX_TIMEOUT_MS": "30000"})
    results = run_ranks(build("init_modes.c"), nranks, ("dead_peer_loop",), env=env, timeout=90)
    check_ranks(results)
    for res in results[:-1]:
        assert f"rank {res.rank} dead_peer_loop: passed" in res.stdout, res.stdout
        elapsed_ms = float(res.stdout.split("raised after ")[1].split(" ms")[0])
        assert elapsed_ms < 5000, res.stdout


def test_config_layouts_of_other_nccl_versions():
    env = rank_env({"NCCL_DEBUG": "INFO"})
    env.pop("RCCLX_DEBUG", None)
    (result,) = run_ranks(build("config_layouts.c"), 1, env=env)
    check_ranks([result])
    for layout in ("48", "72", "80", "112", "newer", "initializer"):
        assert f"layout-{layout}: initialised" in result.stdout
    # commName is read at its offset from the 72-byte and longer structs; 2.17's has none.
    for named in ("72", "80", "112", "newer", "initializer"):
        assert f"communicator 'layout-{named}' rank 0 of 1" in result.stderr
    assert "'layout-48'" not in result.stderr


def test_nccl_comm_blocking_zero_makes_init_non_blocking():
    (result,) = run_ranks(build("config_layouts.c"), 1, env=rank_env({"NCCL_COMM_BLOCKING": "0"}))
    check_ranks([result])
    assert "NCCL_COMM_BLOCKING=0: honoured" in result.stdout


@pytest.mark.parametrize(
    ("rcclx_debug", "nccl_debug", "info"),
    [(None, "info", True), (None, "VERSION", False), ("WARN", "INFO", False), ("INFO", "", True)],
)
def test_nccl_debug_is_an_alias_of_rcclx_debug(rcclx_debug, nccl_debug, info):
    env = rank_env({"NCCL_DEBUG": nccl_debug})
    env.pop("RCCLX_DEBUG", None)
    if rcclx_debug is not None:
        env["RCCLX_DEBUG"] = rcclx_debug
    (result,) = run_ranks(build("config_layouts.c"), 1, env=env)
    check_ranks([result])
    assert ("INFO] nccl_compat: RCCLX's libnccl" in result.stderr) == info, result.stderr[-2000:]


def test_a_failing_check_fails_the_program(tmp_path):
    # The harness itself: a program whose expectation is wrong must exit non-zero.
    src = tmp_path / "wrong.c"
    src.write_text(
        '#include "nccl_test.h"\n'
        "int main(int argc, char** argv) {\n"
        "  int r, n; test_init_args(argc, argv, &r, &n);\n"
        "  int v = 0; NCCLCHECK(ncclGetVersion(&v));\n"
        '  EXPECT(v == 1, "version %d", v);\n'
        "  return g_failures ? 1 : 0;\n"
        "}\n"
    )
    (result,) = run_ranks(build(src), 1)
    assert result.returncode == 1 and "FAILED v == 1" in result.stderr


@pytest.mark.parametrize(("old", "new"), [(2, 3), (1, 3), (3, 4)])
def test_grow_adds_ranks(tmp_path, old, new):
    # ncclCommGetUniqueId on rank 0 of the old communicator, ncclCommGrow on old and new ranks.
    env = rank_env({"NCCL_TEST_GROW_FILE": str(tmp_path / "grow_id")})
    results = run_ranks(build("grow.c"), new, args=(str(old),), env=env, timeout=120)
    check_ranks_passed(results)


@pytest.mark.parametrize("nranks", [2, 3])
def test_suspend_resume_and_memory_statistics(nranks):
    results = run_ranks(build("suspend.c"), nranks)
    check_ranks_passed(results)


@pytest.mark.parametrize(
    ("mode", "rounds"),
    [("destroy", 40), ("abort", 40), ("failed_join", 20), ("unused", 100), ("bad_arguments", 100)],
)
def test_unique_id_store_ends_with_its_use(mode, rounds):
    # Each ncclGetUniqueId starts a store (a socket and a thread) in this process; once the id's
    # communicators are destroyed or aborted, or joining it failed, the store is gone, and of
    # ids never joined here at most 64 are kept: fds and threads stay flat.
    env = rank_env({"RCCLX_TIMEOUT_MS": "300"})
    (result,) = run_ranks(build("unique_id_lifetime.c"), 1, args=(mode, str(rounds)), env=env)
    check_ranks([result])
    assert "rank 0: passed (0 failures)" in result.stdout, result.stdout + result.stderr[-2000:]


def test_shrink_with_differing_lists_fails_on_the_ranks_taking_part():
    results = run_ranks(build("shrink_mismatch.c"), 3, timeout=90)
    check_ranks_passed(results)


def test_grow_again_after_a_failed_grow(tmp_path):
    env = rank_env({"NCCL_TEST_GROW_FILE": str(tmp_path / "grow_id"), "RCCLX_TIMEOUT_MS": "3000"})
    results = run_ranks(build("grow_retry.c"), 3, env=env, timeout=120)
    check_ranks_passed(results)


@pytest.mark.parametrize("nranks", [1, 3])
def test_a_group_with_a_failed_call_runs_none_of_its_calls(nranks):
    results = run_ranks(build("group_failed_call.c"), nranks)
    check_ranks_passed(results)


@pytest.mark.parametrize("nranks", [1, 2])
def test_destroy_in_a_group_holding_its_calls_is_refused(nranks):
    results = run_ranks(build("group_destroy.c"), nranks)
    check_ranks_passed(results)
