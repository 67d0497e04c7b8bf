"""Topology and transport choice: pretend hosts (RCCLX_HOST_ID) mix shm within and tcp or ucx
across."""

import os

import ctran_helpers
import pytest

import ctran
from launcher import launch, values


def _topology_rank(ctx):
    import os

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    topo = group.topology
    out = {
        "host_identity": ctran.host_identity(),
        "host_id": topo.host_id,
        "rank": topo.rank,
        "nranks": topo.nranks,
        "num_hosts": topo.num_hosts,
        "host_of": list(topo.host_of),
        "local_ranks": list(topo.local_ranks),
        "local_rank": topo.local_rank,
        "local_size": topo.local_size,
        "my_pid_listed": topo.pids[ctx.rank] == os.getpid(),
        "kinds": [group.transport_to(p) for p in range(ctx.nranks)],
    }
    out["problems"] = ctran_helpers.exercise_window(group, rounds=20, seq_signals=50)
    group.destroy()
    return out


@pytest.mark.parametrize("net", ["tcp", "auto"])
@pytest.mark.parametrize(
    "hosts",
    [("a", "b"), ("a", "a", "b"), ("a", "a", "b", "b"), ("y", "x", "y", "x")],
    ids=lambda hosts: "".join(hosts),
)
def test_pretend_hosts(hosts, net):
    import ctran

    nranks = len(hosts)
    # auto: ucx between hosts where libucp loads and the host has an RDMA device (every rank of
    # this machine sees the same).
    rdma = os.path.isdir("/sys/class/infiniband") and bool(os.listdir("/sys/class/infiniband"))
    across = "tcp" if net == "tcp" or not ctran.ucx_library()[0] or not rdma else "ucx"
    results = values(
        launch(
            _topology_rank,
            nranks,
            env={"RCCLX_NET_TRANSPORT": net},
            rank_env=lambda r: {"RCCLX_HOST_ID": hosts[r]},
        )
    )
    names = list(dict.fromkeys(hosts))  # hosts numbered in order of their lowest rank
    host_of = [names.index(h) for h in hosts]
    for rank, res in enumerate(results):
        local = [r for r in range(nranks) if hosts[r] == hosts[rank]]
        assert res["problems"] == [], f"rank {rank}: {res['problems']}"
        assert res["host_identity"] == res["host_id"] == hosts[rank]
        assert (res["rank"], res["nranks"]) == (rank, nranks)
        assert res["num_hosts"] == len(names)
        assert res["host_of"] == host_of
        assert res["local_ranks"] == local
        assert res["local_rank"] == local.index(rank)
        assert res["local_size"] == len(local)
        assert res["my_pid_listed"]
        want = [
            "self" if p == rank else "shm" if hosts[p] == hosts[rank] else across
            for p in range(nranks)
        ]
        assert res["kinds"] == want


def _forced_tcp_across_one_pretend_host_rank(ctx):
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    return group.topology.num_hosts, [group.transport_to(p) for p in range(ctx.nranks)]


def test_forced_tcp_overrides_shm_within_a_host():
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_HOST_ID": "same"}
    results = values(launch(_forced_tcp_across_one_pretend_host_rank, 3, env=env))
    for rank, (num_hosts, kinds) in enumerate(results):
        assert num_hosts == 1
        assert kinds == ["self" if p == rank else "tcp" for p in range(3)]


def test_host_identity_defaults_to_this_machine(monkeypatch):
    monkeypatch.delenv("RCCLX_HOST_ID", raising=False)
    default = ctran.host_identity()
    assert default and default == ctran.host_identity()
    monkeypatch.setenv("RCCLX_HOST_ID", "pretend-host")
    assert ctran.host_identity() == "pretend-host"
