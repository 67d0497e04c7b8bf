"""Several ranks in one process, one thread each, on host buffers: what a process driving
several GPUs does, without the GPUs. Communicators are created concurrently (creation is
collective) from one unique id or one store, then every collective runs from each rank's
thread against the references of the process tests; two processes of two ranks each mix peers
of the same process with peers of another. (Topology and peer liveness of ranks sharing a
process: tests/ctran/test_ctran_one_process.py; on GPUs: tests/gpu/test_gpu_one_process.py.)
"""

from __future__ import annotations

import checks
import numpy as np
import pytest
import rcclx_cases
import rcclx_helpers as H

import ctran
import rcclx_core as rc
from launcher import launch, run_threads, values


def _p2p_async_split(comm) -> dict:
    """Send / recv around the ring (grouped and, for even sizes, blocking in pairs), an async
    all_reduce, a barrier and a split, from this rank's thread."""
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    out = {}
    for count in H.COUNTS:
        x = np.arange(count, dtype=np.float64) + 1000.0 * me
        got = np.full(count, -1.0)
        with comm.group():
            comm.send(x, right)
            comm.recv(got, left)
        want = np.arange(count, dtype=np.float64) + 1000.0 * left
        out[f"send/recv ring count={count}"] = ("", checks.same_bits(got, want))
    if n % 2 == 0:
        peer = me ^ 1
        x = np.full(H.LARGE, me, dtype=np.int32)
        got = np.full(H.LARGE, -1, dtype=np.int32)
        if me % 2 == 0:
            comm.send(x, peer)
            comm.recv(got, peer)
        else:
            comm.recv(got, peer)
            comm.send(x, peer)
        out["blocking send/recv in pairs"] = ("", checks.same_bits(got, np.full_like(x, peer)))
    x = np.full(1001, me + 1, dtype=np.int64)
    comm.all_reduce(x, async_op=True).wait(timeout=60)
    total = n * (n + 1) // 2
    out["async all_reduce"] = (checks.digest(x), None if np.all(x == total) else f"got {x[:4]}")
    comm.barrier()
    sub = comm.split(me % 2)
    y = np.full(7, me, dtype=np.int64)
    sub.all_reduce(y)
    want = sum(r for r in range(n) if r % 2 == me % 2)
    out["split by parity"] = ("", None if np.all(y == want) else f"got {y}, want {want}")
    sub.destroy()
    return out


def _every_collective(comm, cases) -> dict:
    out = {}
    for algo in ("ring", "dda_flat", "dda_tree"):
        for k, v in rcclx_cases.all_reduce(comm, algo, cases=cases).items():
            out[f"{algo}: {k}"] = v
    out.update(rcclx_cases.reduce(comm, cases=cases))
    out.update(rcclx_cases.reduce_scatter(comm, cases=cases))
    out.update(rcclx_cases.reduce_scatter(comm, cases=cases, variable=True))
    out.update(rcclx_cases.broadcast_gather_scatter(comm))
    out.update(rcclx_cases.all_gather(comm))
    out.update(rcclx_cases.all_to_all(comm))
    out.update(_p2p_async_split(comm))
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_threads_of_one_process_run_every_collective(nranks, monkeypatch):
    for k, v in H.CHUNK_ENV.items():
        monkeypatch.setenv(k, v)
    uid = rc.create_unique_id()
    cases = H.reduction_cases()[::5]

    def rank_main(r):
        comm = rc.Communicator.from_unique_id(uid, r, nranks)
        shape = (comm.rank, comm.size, comm.local_rank, comm.local_size, comm.num_hosts)
        assert shape == (r, nranks, r, nranks, 1), shape
        assert comm.direct_access, "ranks of one process share memory: DDA must be available"
        out = _every_collective(comm, cases)
        comm.destroy()
        return out

    checks.assert_cases(run_threads(rank_main, nranks))


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_threads_from_one_store(transport, monkeypatch):
    """One Python store object shared by three ranks' threads; forced tcp connects the ranks
    of this process to each other over sockets (ring algorithms only)."""
    if transport == "tcp":
        monkeypatch.setenv("RCCLX_TRANSPORT", "tcp")
    store = ctran.MemoryStore()
    nranks = 3
    cases = H.reduction_cases()[::9]

    def rank_main(r):
        comm = rc.Communicator.from_store(store, r, nranks, prefix=f"one-process-{transport}")
        assert comm.direct_access == (transport == "shm")
        out = {}
        for algo in ("ring", "dda_flat", "dda_tree") if transport == "shm" else ("ring",):
            for k, v in rcclx_cases.all_reduce(comm, algo, cases=cases).items():
                out[f"{algo}: {k}"] = v
        out.update(rcclx_cases.all_gather(comm, specs=H.SPECS[::3]))
        out.update(rcclx_cases.all_to_all(comm, specs=H.SPECS[::3]))
        out.update(_p2p_async_split(comm))
        comm.destroy()
        return out

    checks.assert_cases(run_threads(rank_main, nranks))


def _two_ranks_per_process(ctx, per_process):
    """Ranks per_process * ctx.rank + t, one thread each, in a group spanning the processes."""
    import rcclx_core as rc

    uid = ctx.unique_id()
    nranks = per_process * ctx.nranks
    cases = H.reduction_cases()[::11]

    def rank_main(t):
        r = per_process * ctx.rank + t
        comm = rc.Communicator.from_unique_id(uid, r, nranks)
        assert (comm.rank, comm.size, comm.local_size) == (r, nranks, nranks)
        out = {}
        for algo in ("ring", "dda_flat", "dda_tree"):
            for k, v in rcclx_cases.all_reduce(comm, algo, cases=cases, counts=(1, 1001)).items():
                out[f"{algo}: {k}"] = v
        out.update(rcclx_cases.all_to_all(comm, specs=H.SPECS[::4]))
        out.update(_p2p_async_split(comm))
        comm.destroy()
        return out

    return run_threads(rank_main, per_process)


def test_processes_of_several_ranks_each():
    per_rank = [
        v for proc in values(launch(_two_ranks_per_process, 2, 2, timeout=180)) for v in proc
    ]
    assert len(per_rank) == 4
    checks.assert_cases(per_rank)
