"""Without direct access the collectives still work: ranks on pretend hosts (RCCLX_HOST_ID per
rank: tcp or ucx between hosts, shared memory within), every rank over tcp or over ucx
(RCCLX_TRANSPORT=tcp|ucx), and DDA disabled. The selector falls back to ring (across hosts: the
cost model's choice, flat for small messages) and refuses forced DDA with a clear error. The ucx
setups skip, saying why, where libucp cannot be loaded."""

import checks
import numpy as np
import pytest
import rcclx_cases
import rcclx_helpers as H

from launcher import launch, pretend_hosts

OPS = {H.OP.SUM, H.OP.MAX, H.OP.AVG, H.OP.PREMUL_SUM, H.OP.BXOR}
CASES = [c for c in H.reduction_cases() if c[1] in OPS and c[2] == "int"]
SPECS = [H.SPEC[n] for n in ("uint8", "int64", "float16", "bfloat16", "float8_e5m2")]

SETUPS = {
    # 4 ranks, 2 per pretend host: tcp, then ucx between the hosts.
    "two_hosts": dict(
        nranks=4,
        env={"RCCLX_NET_TRANSPORT": "tcp"},
        rank_env=pretend_hosts(ranks_per_host=2),
    ),
    "two_hosts_ucx": dict(
        nranks=4,
        env={"RCCLX_NET_TRANSPORT": "ucx"},
        rank_env=pretend_hosts(ranks_per_host=2),
    ),
    "tcp": dict(nranks=3, env={"RCCLX_TRANSPORT": "tcp"}, rank_env=None),
    "ucx": dict(nranks=3, env={"RCCLX_TRANSPORT": "ucx"}, rank_env=None),
    "dda_disabled": dict(nranks=2, env={"RCCLX_DDA_ENABLE": "0"}, rank_env=None),
}


# The transports a rank's peers are reached by, in each setup (what the knobs select for every
# group of the rank, its communicators' included).
KINDS = {
    "two_hosts": ["shm", "tcp"],
    "two_hosts_ucx": ["shm", "ucx"],
    "tcp": ["tcp"],
    "ucx": ["ucx"],
    "dda_disabled": ["shm"],
}


def _transport_rank(ctx, setup):
    import ctran
    import rcclx_core as rc

    group = ctran.PeerGroup.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix="kinds/")
    kinds = sorted({group.transport_to(p) for p in range(ctx.nranks) if p != ctx.rank})
    group.destroy()
    comm = H.comm_of(ctx)
    info = {
        "kinds": kinds,
        "num_hosts": comm.num_hosts,
        "local_size": comm.local_size,
        "local_rank": comm.local_rank,
        "direct_access": comm.direct_access,
        "selected": rc._testing.selection(comm, 1024),
    }
    x = np.ones(8, dtype=np.float32)
    try:
        comm.all_reduce(x, algo="dda_flat")
        info["forced dda"] = ("returned", "")
    except rc.Error as e:
        info["forced dda"] = (type(e).__name__, str(e))
    out = {}
    out.update(rcclx_cases.all_reduce(comm, None, cases=CASES))
    out.update(rcclx_cases.reduce(comm, cases=CASES[::3]))
    out.update(rcclx_cases.reduce_scatter(comm, cases=CASES[::3], variable=True))
    out.update(rcclx_cases.broadcast_gather_scatter(comm, specs=SPECS))
    out.update(rcclx_cases.all_gather(comm, specs=SPECS))
    out.update(rcclx_cases.all_to_all(comm, specs=SPECS))
    if setup.startswith("two_hosts"):
        # Split by host: each half shares memory again, and DDA runs there.
        sub = comm.split(ctx.rank // 2)
        info["sub"] = (sub.num_hosts, sub.direct_access, sub.size)
        y = np.full(5000, ctx.rank + 1.0)
        sub.all_reduce(y, algo="dda_tree")
        half = [r for r in range(4) if r // 2 == ctx.rank // 2]
        out["sub-communicator dda_tree"] = (
            "",
            checks.same_bits(y, np.full(5000, float(sum(r + 1 for r in half)))),
        )
        sub.destroy()
    comm.destroy()
    # Rank 0 hosts the bootstrap store the other half still uses to build its sub-communicator.
    ctx.barrier("done")
    return info, out


@pytest.mark.parametrize("setup", list(SETUPS))
def test_collectives_without_direct_access(setup):
    if "ucx" in setup:
        import ctran

        loaded, missing = ctran.ucx_library()
        if not loaded:
            pytest.skip(f"no usable UCX: {missing}")
    s = SETUPS[setup]
    n = s["nranks"]
    results = launch(
        _transport_rank,
        n,
        setup,
        env={**H.CHUNK_ENV, **s["env"]},
        rank_env=s["rank_env"],
        timeout=120,
    )
    for res in results:
        info, _ = res.value
        assert info["kinds"] == KINDS[setup], info["kinds"]
        assert info["direct_access"] is False
        kind, msg = info["forced dda"]
        assert kind == "InvalidArgumentError" and "dda_flat" in msg, info
        algo, reason = info["selected"]
        assert algo == ("flat" if setup.startswith("two_hosts") else "ring"), info["selected"]
        if setup.startswith("two_hosts"):
            assert (info["num_hosts"], info["local_size"], info["local_rank"]) == (
                2,
                2,
                res.rank % 2,
            )
            assert reason.startswith("cost model, 2 hosts x 2 ranks, 1024 bytes: flat "), reason
            assert "spans 2 host(s)" in msg
            assert info["sub"] == (1, True, 2)
        else:
            assert (info["num_hosts"], info["local_size"]) == (1, n)
            assert "no direct access" in reason
            assert "without direct access" in msg
    checks.assert_cases([r.value[1] for r in results])
