"""The NCCL ABI on GPUs (``nox -s gpu``; skipped without a GPU): the C programs of
test_c_programs.py on device (managed) memory, the one-sided calls on device-memory windows
(eager, in CUDA graphs, a wait that times out), CUDA graph capture of every collective,
ncclCommInitAll and a grouped initialisation over the visible GPUs, and PyTorch's own
``init_process_group("nccl")`` running on our library through ``rcclx-run``. Ranks share the
GPUs when there are more ranks than GPUs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nccl_programs import build, check_ranks, cuda_toolkit, free_port, rank_env, run_ranks

import launcher
import rcclx_nccl

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent


def _gpu_build(source: str) -> Path:
    root = cuda_toolkit()
    lib = root / "lib64"
    # -isystem: the toolkit's own headers' warnings are not the programs' (-Werror).
    return build(source, flags=("-DNCCL_TEST_GPU", "-isystem", f"{root}/include"), tag="-gpu",
                 libs=(f"-L{lib}", f"-Wl,-rpath,{lib}", "-lcudart"))  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    env = rank_env(dict(launcher.MULTICAST_OFF, RCCLX_NCCL_HOST_ONLY="0", **extra))
    env.setdefault("RCCLX_TIMEOUT_MS", "60000")
    return env


@pytest.mark.parametrize("nranks", [2, 3])
def test_collectives_on_device_memory(nranks):
    results = run_ranks(_gpu_build("collectives.c"), nranks, env=_env(), timeout=600)
    check_ranks(results)


def test_one_sided_calls_on_host_windows_of_a_gpu_communicator():
    # Host-memory windows keep their calls on the calling thread (NULL stream) on a GPU
    # communicator; a put from device memory into one, and a call on a stream before any
    # device-memory window, are refused by name.
    check_ranks(run_ranks(_gpu_build("one_sided.c"), 2, env=_env(), timeout=300))


@pytest.mark.parametrize("nranks", [2, 3])
def test_one_sided_calls_on_device_windows(nranks):
    # ncclPutSignal / ncclSignal / ncclWaitSignal on a stream over windows of ncclMemAlloc's and
    # cudaMalloc's memory: the ring eager, all pairs, signals alone, the ring in a CUDA graph
    # replayed 3 times with new data, each value checked exactly; the refusals.
    results = run_ranks(_gpu_build("one_sided_gpu.c"), nranks, ("ring",), env=_env(), timeout=300)
    check_ranks(results)
    for r in results:
        assert f"rank {r.rank} one_sided_gpu ring: passed (0 failures)" in r.stdout


def test_one_sided_wait_without_a_signal_times_out_into_an_error():
    # A communicator split off with RCCLX_TIMEOUT_MS=2000 waits for a signal nobody sends: its
    # kernel ends without trapping, the next calls return ncclRemoteError naming the ranks and
    # the signals, its collectives still run, and the first communicator's ring works after it.
    results = run_ranks(_gpu_build("one_sided_gpu.c"), 2, ("timeout",), env=_env(), timeout=300)
    check_ranks(results)
    for r in results:
        assert f"rank {r.rank} one_sided_gpu timeout: passed (0 failures)" in r.stdout
        peer = (r.rank + 1) % 2
        assert (
            f"rank {r.rank} timeout: ncclSignal: one-sided GPU channel signal: rank {r.rank}'s "
            f"wait_signal timed out after 2000 ms waiting for a signal from rank {peer} "
            "(expected signal 1, saw 0"
        ) in r.stdout, r.stdout


def test_graph_capture_of_every_collective():
    check_ranks(run_ranks(_gpu_build("graph_capture.c"), 2, env=_env(), timeout=600))


def test_init_all_over_a_gpu_this_process_lacks_fails_at_once():
    results = run_ranks(_gpu_build("init_modes.c"), 1, ("initall_missing_gpu",), env=_env())
    check_ranks(results)


@pytest.mark.parametrize("mode", ["initall", "group"])
def test_one_process_on_every_visible_gpu(mode):
    ngpu = max(1, launcher.gpu_count())
    results = run_ranks(_gpu_build("init_modes.c"), ngpu, (mode,), env=_env(), launched=1)
    check_ranks(results)


def test_two_ranks_per_process_on_gpu():
    # nccl-tests -g 2: each process drives two ranks, rank r on GPU r % (number of GPUs). Ranks
    # of one process need GPUs of their own (NCCL refuses a duplicate GPU too).
    if launcher.gpu_count() < 2:
        pytest.skip("two ranks per process need two GPUs (this machine has fewer)")
    check_ranks(run_ranks(_gpu_build("init_modes.c"), 4, ("two_per_process",), env=_env(),
                          launched=2))  # fmt: skip


def test_nonblocking_init_and_abort_on_gpu():
    exe = _gpu_build("init_modes.c")
    check_ranks(run_ranks(exe, 2, ("nonblocking",), env=_env()))
    check_ranks(run_ranks(exe, 2, ("abort",), env=_env()))


def test_torch_nccl_process_group_runs_on_our_library():
    pytest.importorskip("torch")
    script = Path(sys.executable).parent / "rcclx-run"
    runner = [str(script)] if script.is_file() else [sys.executable, "-m", "rcclx_nccl._run"]
    world = 2
    env = dict(os.environ, **launcher.MULTICAST_OFF)
    env.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        WORLD_SIZE=str(world),
        NCCL_DEBUG="INFO",
        RCCLX_TIMEOUT_MS="60000",
    )
    env.pop("RCCLX_DEBUG", None)
    procs = []
    for rank in range(world):
        procs.append(
            subprocess.Popen(
                [*runner, "--", sys.executable, str(HERE / "torch_nccl_job.py")],
                env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [p.communicate(timeout=600) for p in procs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, f"rank {rank}:\n{out}\n{err[-8000:]}"
        assert f"rank {rank}: OK" in out
        # The line our library logs when a communicator is ready: NVIDIA's NCCL never prints it.
        assert "nccl_compat: RCCLX's libnccl (NCCL 2.31.2 ABI) communicator" in err, err[-4000:]
        assert f"libnccl version {rcclx_nccl.get_version()}" in out, out
