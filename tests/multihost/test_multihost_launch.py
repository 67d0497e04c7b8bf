"""Jobs across test hosts started as launchers start them: torchrun's environment (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK) for rcclx_core.Communicator.from_env; Open MPI's and
MPICH's (OMPI_COMM_WORLD_*, PMI_*) for torchcomms_rcclx.new_comm; torchrun itself
(``--nnodes 2``, one agent per host) for a torch.distributed job on the "rcclx" backend; and
Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, ...) and MPI's for both. Rank 0 is on host 0
and listens on host 0's address, as on a cluster. And ids of ctran.create_unique_id and of
rcclx_core.create_unique_id whose creator leaves at once.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from hosts import HERE, rank_base_env

pytestmark = pytest.mark.multihost

PLACEMENT = [0, 0, 1, 1]


def _local(r: int) -> tuple[int, int]:
    """(local rank, ranks on its host) of rank r in PLACEMENT."""
    h = PLACEMENT[r]
    return PLACEMENT[:r].count(h), PLACEMENT.count(h)


def _torchrun_env(port: int):
    def env(r: int) -> dict:
        local, local_size = _local(r)
        return {
            "MASTER_ADDR": "10.77.0.1",
            "MASTER_PORT": port,
            "RANK": r,
            "WORLD_SIZE": len(PLACEMENT),
            "LOCAL_RANK": local,
            "LOCAL_WORLD_SIZE": local_size,
            "GROUP_RANK": PLACEMENT[r],
        }

    return env


def _slurm_env(port: int):
    def env(r: int) -> dict:
        local, local_size = _local(r)
        return {
            "MASTER_ADDR": "10.77.0.1",  # as a batch script sets it, from the first node
            "MASTER_PORT": port,
            "SLURM_PROCID": r,
            "SLURM_NTASKS": len(PLACEMENT),
            "SLURM_LOCALID": local,
            "SLURM_NODEID": PLACEMENT[r],
            "SLURM_NNODES": len(set(PLACEMENT)),
            "SLURM_NTASKS_PER_NODE": local_size,
            "SLURM_JOB_NODELIST": "rcclx-host[0-1]",
            "SLURM_JOB_ID": 77,
        }

    return env


def _mpi_env(port: int, flavour: str):
    def env(r: int) -> dict:
        local, local_size = _local(r)
        out = {"MASTER_ADDR": "10.77.0.1", "MASTER_PORT": port}
        if flavour == "ompi":
            out.update(
                OMPI_COMM_WORLD_RANK=r,
                OMPI_COMM_WORLD_SIZE=len(PLACEMENT),
                OMPI_COMM_WORLD_LOCAL_RANK=local,
                OMPI_COMM_WORLD_LOCAL_SIZE=local_size,
            )
        else:
            out.update(PMI_RANK=r, PMI_SIZE=len(PLACEMENT), MPI_LOCALRANKID=local)
        return out

    return env


def _from_env_rank(ctx):
    """rcclx_core.Communicator.from_env(), then an all_reduce and an all_gather."""
    import numpy as np

    import rcclx_core as rc

    comm = rc.Communicator.from_env()
    n = comm.size
    x = np.full(1001, comm.rank + 1, np.int64)
    comm.all_reduce(x)
    got = np.empty(n * 3, np.int64)
    comm.all_gather(np.full(3, comm.rank, np.int64), got)
    out = {
        "rank": comm.rank,
        "size": n,
        "hosts": comm.num_hosts,
        "local": (comm.local_rank, comm.local_size),
        "all_reduce ok": bool((x == n * (n + 1) // 2).all()),
        "all_gather ok": got.tolist() == [r for r in range(n) for _ in range(3)],
    }
    comm.destroy()
    return out


def _check_from_env(results):
    for r, res in enumerate(results):
        v = res.value
        assert (v["rank"], v["size"], v["hosts"], v["local"]) == (r, 4, 2, _local(r)), v
        assert v["all_reduce ok"] and v["all_gather ok"], v


def test_torchrun_environment_across_hosts(cluster, transport):
    results = cluster.launch(
        _from_env_rank, PLACEMENT, rank_env=_torchrun_env(29410), transport=transport
    )
    _check_from_env(results)


def test_slurm_environment_for_from_env(cluster, transport):
    results = cluster.launch(
        _from_env_rank, PLACEMENT, rank_env=_slurm_env(29420), transport=transport
    )
    _check_from_env(results)


def test_mpi_environment_for_from_env(cluster, transport):
    env = _mpi_env(29430, "ompi")
    results = cluster.launch(_from_env_rank, PLACEMENT, rank_env=env, transport=transport)
    _check_from_env(results)


def _new_comm_rank(ctx):
    """torchcomms_rcclx.new_comm("rcclx", "cpu"), then an all_reduce."""
    import torch

    import torchcomms_rcclx

    comm = torchcomms_rcclx.new_comm("rcclx", "cpu", name="multihost")
    n = comm.get_size()
    x = torch.full((1001,), comm.get_rank() + 1, dtype=torch.int64)
    comm.all_reduce(x, torchcomms_rcclx.ReduceOp.SUM, False)
    out = {
        "rank": comm.get_rank(),
        "size": n,
        "all_reduce ok": bool((x == n * (n + 1) // 2).all()),
    }
    comm.finalize()
    return out


@pytest.mark.parametrize("flavour", ["ompi", "pmi"])
def test_mpi_environment_for_new_comm(cluster, transport, flavour):
    port = {"ompi": 29440, "pmi": 29450}[flavour]
    results = cluster.launch(
        _new_comm_rank, PLACEMENT, rank_env=_mpi_env(port, flavour), transport=transport
    )
    for r, res in enumerate(results):
        assert res.value == {"rank": r, "size": 4, "all_reduce ok": True}, res.value


def test_slurm_environment_for_new_comm(cluster, transport):
    results = cluster.launch(
        _new_comm_rank, PLACEMENT, rank_env=_slurm_env(29460), transport=transport
    )
    for r, res in enumerate(results):
        assert res.value == {"rank": r, "size": 4, "all_reduce ok": True}, res.value


def test_torchrun_nnodes_2_runs_a_torch_distributed_job(cluster, transport, tmp_path):
    """One torchrun agent per host (static rendezvous at host 0's address), two workers
    each, every worker joining with init_process_group("rcclx")."""
    port, timeout = 29470, 120
    env = rank_base_env()
    if transport is not None:
        env["RCCLX_NET_TRANSPORT"] = transport
    agents = []
    for h in range(2):
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--node-rank",
            str(h),
            "--nproc-per-node",
            "2",
            "--master-addr",
            "10.77.0.1",
            "--master-port",
            str(port),
            str(HERE / "td_job.py"),
            str(tmp_path),
        ]
        agents.append(cluster.hosts[h].popen(argv, env, str(tmp_path / f"agent-{h}.log")))
    deadline = time.monotonic() + timeout
    try:
        for a in agents:
            a.wait(timeout=max(1.0, deadline - time.monotonic()))
    except Exception:
        for h in range(2):
            cluster.hosts[h].kill_all()
        raise
    finally:
        logs = {h: (tmp_path / f"agent-{h}.log").read_text(errors="replace") for h in range(2)}
    for h, a in enumerate(agents):
        assert a.returncode == 0, f"torchrun on host {h} exited {a.returncode}:\n{logs[h][-3000:]}"
    records = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(4)]
    for r, v in enumerate(records):
        local, _ = _local(r)
        assert v["rank"] == r and v["size"] == 4, v
        assert v["env"]["LOCAL_RANK"] == str(local) and v["env"]["GROUP_RANK"] == str(PLACEMENT[r])
        assert v["hostname"] == f"rcclx-host{PLACEMENT[r]}", v
        assert v["all_reduce"] == [10.0], v
        assert v["all_gather"] == [[q, _local(q)[0]] for q in range(4)], v
        assert v["broadcast"] == [i * 10.0 for i in range(5)], v


def _leaving_creator_rank(ctx):
    """Every rank joins a communicator through an id of ctran.create_unique_id (as the
    launcher's RankContext makes it) and destroys it; rank 0, which made the id and hosts its
    store, leaves at once, the others a moment later."""
    import ctran
    import rcclx_core as rc

    store = ctx.store()
    if ctx.rank == 0:
        uid = ctran.create_unique_id()
        store.set("ctran_uid", uid)
    else:
        os.nice(5)  # the creator first, as when it has less to do
        uid = store.get("ctran_uid")
    comm = rc.Communicator.from_unique_id(uid, ctx.rank, ctx.nranks)
    comm.destroy()


def test_the_creator_of_a_ctran_unique_id_may_leave_at_once(cluster, transport):
    for _ in range(16):
        cluster.launch(_leaving_creator_rank, PLACEMENT, transport=transport)


def test_the_creator_of_an_rcclx_unique_id_may_leave_at_once(cluster, transport):
    """The same as above with rcclx_core's ids (HostRankContext.unique_id), which work."""
    for _ in range(8):
        cluster.launch(_leaving_rcclx_creator_rank, PLACEMENT, transport=transport)


def _leaving_rcclx_creator_rank(ctx):
    import rcclx_core as rc

    if ctx.rank != 0:
        os.nice(5)
    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    comm.destroy()
