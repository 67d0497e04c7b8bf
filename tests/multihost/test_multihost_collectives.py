"""Every collective of rcclx_core on ranks spread over test hosts (hosts.py): 2 hosts x 2 ranks,
and 3 hosts x 1-2 ranks with rank 3 back on host 0 (a host's ranks need not be consecutive).
The ranks run the case loops of tests/rcclx_core unchanged, one launch per layout: all_reduce,
reduce, reduce_scatter(_v), broadcast, all_gather(_v) by every algorithm the host back-end may
run across hosts (the cost model's choice, and flat, ring and hierarchical forced; on 3 hosts
the choice and hierarchical), gather, scatter, all_to_all(_v), send/recv and groups,
alltoallv_dynamic, and the LP collectives, each checked exactly (bitwise, or against the exact
or float64 reference of rcclx_helpers; LP against its numpy model's bits and the documented
error bound). Fewer dtype x op cases than on
one host, fewer still for a forced algorithm: what differs here is the path between hosts.

Also: what a rank sees of its host (hostname, host identity, namespaces, /dev/shm) and what the
communicator makes of it (hosts, local ranks, the selector's choice and refusals).
"""

from __future__ import annotations

import functools
import os

import checks
import pytest
import rcclx_cases
import rcclx_helpers as H
import test_rcclx_alltoallv_dynamic as a2a_dynamic
import test_rcclx_lp as lp
import test_rcclx_p2p as p2p

pytestmark = pytest.mark.multihost

LAYOUTS = {"2x2": [0, 0, 1, 1], "3x1-2": [0, 1, 2, 0]}
# Every algorithm on 2 x 2; on 3 hosts of uneven sizes the cost model's choice and the
# hierarchical form (leader-based there), the one that depends most on the layout.
LAYOUT_ALGOS = {"2x2": ("auto", "flat", "ring", "hierarchical"), "3x1-2": ("auto", "hierarchical")}
NAMESPACES = ("net", "mnt", "pid", "uts", "ipc")
TYPES = ("int8", "uint64", "float16", "float32", "bfloat16", "float8_e4m3")
OPS = (H.OP.SUM, H.OP.PROD, H.OP.MAX, H.OP.AVG, H.OP.PREMUL_SUM, H.OP.BXOR)
CASES = [c for c in H.reduction_cases() if c[0].name in TYPES and c[1] in OPS]
SPECS = [H.SPEC[n] for n in TYPES]
# A forced algorithm runs fewer cases: two types, four operators.
FEW_OPS = (H.OP.SUM, H.OP.MAX, H.OP.AVG, H.OP.PREMUL_SUM)
FEW_CASES = [c for c in CASES if c[0].name in ("int8", "float32") and c[1] in FEW_OPS]
FEW_SPECS = [H.SPEC[n] for n in ("int8", "float32")]
# What the host back-end may run across hosts: the selector's choice ("auto"), and each form
# forced (LAYOUT_ALGOS). all_reduce's per-call hint takes the same names (None: auto).
ALGO_KNOBS = (
    "RCCLX_ALLGATHER_ALGO",
    "RCCLX_REDUCESCATTER_ALGO",
    "RCCLX_BROADCAST_ALGO",
    "RCCLX_REDUCE_ALGO",
)


def _families(comm, algo):
    """{family: its cases} for a communicator whose collectives run `algo`."""
    few = algo != "auto"
    cases, specs = (FEW_CASES, FEW_SPECS) if few else (CASES, SPECS)
    hint = None if algo == "auto" else algo
    out = {
        "all_reduce": functools.partial(rcclx_cases.all_reduce, comm, hint, cases),
        "reduce": functools.partial(rcclx_cases.reduce, comm, cases),
        "reduce_scatter": functools.partial(rcclx_cases.reduce_scatter, comm, cases),
        "reduce_scatter_v": functools.partial(
            rcclx_cases.reduce_scatter, comm, cases, variable=True
        ),
        "broadcast_gather_scatter": functools.partial(
            rcclx_cases.broadcast_gather_scatter, comm, specs
        ),
        "all_gather": functools.partial(rcclx_cases.all_gather, comm, specs),
    }
    if not few:  # no algorithm of its own
        out["all_to_all"] = functools.partial(rcclx_cases.all_to_all, comm, SPECS)
    return out


def _every_collective_rank(ctx, algos):
    """{"cases": {case: (digest, problem)}, "lp": the LP accuracy cases, "hosts": (hosts,
    local rank, local size)}; one communicator per algorithm and per rank function, the LP
    one last (its knobs are read when a communicator is made)."""
    import rcclx_core as rc

    cases = {}
    for algo in algos:
        hints = None if algo == "auto" else {k: algo for k in ALGO_KNOBS}
        comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks, hints=hints)
        where = (comm.num_hosts, comm.local_rank, comm.local_size)
        for name, run in _families(comm, algo).items():
            cases.update({f"{name} algo={algo}: {k}": v for k, v in run().items()})
        comm.destroy()
    cases.update({f"p2p: {k}": v for k, v in p2p._p2p_rank(ctx).items()})
    dynamic = a2a_dynamic._cases_rank(ctx)  # a list of failures
    cases["alltoallv_dynamic"] = ("", "; ".join(dynamic) or None)
    os.environ.update(lp.LP_ENV)
    low_precision = lp._accuracy_rank(ctx)
    return {"cases": cases, "lp": low_precision, "hosts": where}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_collective_across_hosts(cluster, transport, layout):
    placement = LAYOUTS[layout]
    results = cluster.launch(
        _every_collective_rank,
        placement,
        LAYOUT_ALGOS[layout],
        env=H.CHUNK_ENV,
        transport=transport,
        timeout=240,
    )
    for r, res in enumerate(results):
        h = placement[r]
        want = (len(set(placement)), placement[:r].count(h), placement.count(h))
        assert res.value["hosts"] == want, f"rank {r}: (hosts, local rank, local size)"
    checks.assert_cases([res.value["cases"] for res in results])
    lp._check_accuracy([_Value(res.value["lp"]) for res in results])
    assert (
        len(results[0].value["lp"])
        == 2 * len(lp.DISTS) * len(lp.COLLS) + len(lp.COLLS) * len(lp.EDGE_COUNTS) + 1
    )


class _Value:
    """What lp._check_accuracy reads of a launch result."""

    def __init__(self, value):
        self.value = value


def _where_rank(ctx):
    import socket

    import numpy as np

    import ctran
    import rcclx_core as rc

    marker = f"/dev/shm/rcclx-test-host-{ctx.rank}"
    with open(marker, "w"):
        pass
    ctx.barrier("markers")
    seen = sorted(n for n in os.listdir("/dev/shm") if n.startswith("rcclx-test-host-"))
    ctx.barrier("listed")
    os.unlink(marker)
    comm = H.comm_of(ctx)
    refused = {}
    for algo in ("dda_flat", "dda_tree"):
        try:
            comm.all_reduce(np.ones(8, np.float32), algo=algo)
            refused[algo] = None
        except rc.InvalidArgumentError as e:
            refused[algo] = str(e)
    out = {
        "hostname": socket.gethostname(),
        "identity": ctran.host_identity(),
        "namespaces": {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES},
        "shm": seen,
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "host_id_env": os.environ.get("RCCLX_HOST_ID"),
        "hosts": comm.num_hosts,
        "local": (comm.local_rank, comm.local_size),
        "selected": rc._testing.selection(comm, 1 << 20),
        "selected_all_gather": rc._testing.collective_selection(comm, "all_gather", 1 << 20),
        "refused": refused,
    }
    comm.destroy()
    return out


def test_ranks_see_their_own_host(cluster, transport):
    placement = [0, 0, 1, 1]
    got = [r.value for r in cluster.launch(_where_rank, placement, transport=transport)]
    for r, v in enumerate(got):
        host = placement[r]
        same = [got[q] for q in range(4) if placement[q] == host]
        other = [got[q] for q in range(4) if placement[q] != host]
        assert v["hostname"] == f"rcclx-host{host}", v
        assert v["host_id_env"] is None, "the separation must not be faked by RCCLX_HOST_ID"
        assert v["interfaces"] == ["eth0", "lo"], f"rank {r} sees the sysfs of another network"
        # Only this host's ranks' files are in this host's /dev/shm.
        assert v["shm"] == [f"rcclx-test-host-{q}" for q in range(4) if placement[q] == host]
        assert all(s["identity"] == v["identity"] for s in same)
        assert all(o["identity"] != v["identity"] for o in other)
        for ns in NAMESPACES:
            assert all(s["namespaces"][ns] == v["namespaces"][ns] for s in same), ns
            assert all(o["namespaces"][ns] != v["namespaces"][ns] for o in other), ns
        assert v["hosts"] == 2 and v["local"] == (placement[:r].count(host), 2), v
        # The cost model chooses among the forms that span hosts.
        assert v["selected"][0] in ("flat", "ring", "hierarchical"), v["selected"]
        assert v["selected_all_gather"][0] in ("flat", "ring", "hierarchical"), v
        assert "one host" not in v["selected"][1] + v["selected_all_gather"][1], v
        for algo, message in v["refused"].items():
            assert message is not None, f"rank {r}: {algo} ran across hosts"
            assert "spans 2 host(s)" in message, message
    # The namespaces are not the test process's own.
    mine = {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES}
    assert all(v["namespaces"][n] != mine[n] for v in got for n in mine)
