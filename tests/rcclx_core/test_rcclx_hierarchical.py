"""Collectives across pretend hosts (RCCLX_HOST_ID per rank: tcp between hosts, shared memory
within): the hierarchical and flat forms of all_reduce, all_gather(_v), reduce_scatter(_v),
broadcast and reduce, forced and chosen by the cost model, on 2 hosts x 2 ranks, 2 x 3, three
uneven hosts (2 + 1 + 2, their ranks interleaved) and 4 x 1; every result against numpy (exact
for integers, the helpers' error bound for floats), in and out of place, tails and empty calls.
The cost-model knobs, set as hints, steer each communicator to the form the test expects, and
the selection's reason says why; a forced hierarchical algorithm on one host is refused."""

import checks
import pytest
import rcclx_cases
import rcclx_helpers as H

from launcher import launch, pretend_hosts, values

# Host of each rank, by layout. "2+1+2" interleaves its hosts, so a host's ranks are not
# neighbours in rank order.
LAYOUTS = {
    "2x2": ["a", "a", "b", "b"],
    "2x3": ["a", "a", "a", "b", "b", "b"],
    "2+1+2": ["a", "b", "c", "a", "c"],
    "4x1": ["a", "b", "c", "d"],
}
OTHERS = ("RCCLX_ALLGATHER_ALGO", "RCCLX_REDUCESCATTER_ALGO", "RCCLX_BROADCAST_ALGO",
          "RCCLX_REDUCE_ALGO")  # fmt: skip
COLLECTIVES = ("all_gather", "reduce_scatter", "broadcast", "reduce")

FORCED_HIER = {"RCCLX_ALLREDUCE_ALGO": "hierarchical", **{k: "hierarchical" for k in OTHERS}}
# A synchronised step worth a second: the one-step form wins every time.
COST_FLAT = {"RCCLX_STEP_OVERHEAD_US": "1000000"}
# Free steps, fast shared memory and reductions: the bytes between hosts decide, and the
# hierarchical all_reduce, all_gather and reduce_scatter move the fewest (on one rank per host
# the hierarchical all_reduce and reduce_scatter are the ring, which wins the tie).
COST_HIER = {
    "RCCLX_NET_LATENCY_US": "0.001",
    "RCCLX_SHM_LATENCY_US": "0.001",
    "RCCLX_STEP_OVERHEAD_US": "0.001",
    "RCCLX_SHM_GBPS": "1000",
    "RCCLX_REDUCE_GBPS": "1000",
}
# Shared memory no faster than the network: the ring's steps overlap both kinds of link, the
# hierarchical phases follow one another, so large messages go ring (docs/algorithms.rst).
COST_RING = {"RCCLX_SHM_GBPS": "5", "RCCLX_NET_GBPS": "5"}

SUBSET_OPS = {H.OP.SUM, H.OP.MAX, H.OP.AVG, H.OP.PREMUL_SUM, H.OP.BXOR}
SUBSET = [c for c in H.reduction_cases() if c[1] in SUBSET_OPS and c[2] == "int"]
FLOAT_RAND = [c for c in H.reduction_cases() if c[2] == "rand" and c[1] == H.OP.SUM]
SPECS = [H.SPEC[n] for n in ("uint8", "int64", "float16", "bfloat16", "float8_e5m2")]
COUNTS = (0, 1, 1001, 4099)  # 4099 elements span several 4 KiB chunks of any type
SIZES = (1024, 1 << 20, 64 << 20)  # bytes the selections are asked about


def _communicator(ctx, name, hints):
    import rcclx_core as rc

    return rc.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix=name, hints=hints)


def _selections(comm):
    import rcclx_core as rc

    got = {("all_reduce", b): rc._testing.selection(comm, b) for b in SIZES}
    for c in COLLECTIVES:
        got.update({(c, b): rc._testing.collective_selection(comm, c, b, root=1) for b in SIZES})
    return got


def _exact(cases, nranks):
    """The helpers compare 8-bit float sums of small integers exactly, which holds up to 4
    ranks (sums within +-8); beyond, the order of rounding shows, so those cases stay out."""
    if nranks <= 4:
        return cases
    return [c for c in cases if not (c[0].kind in ("e4m3", "e5m2") and c[1] == H.OP.SUM)]


def _all_cases(comm, algo, reductions, tag):
    subset = _exact(SUBSET, comm.size)
    out = {}
    out.update(rcclx_cases.all_reduce(comm, algo, cases=reductions, counts=COUNTS))
    out.update(rcclx_cases.reduce(comm, cases=subset[::2], counts=COUNTS))
    out.update(rcclx_cases.reduce_scatter(comm, cases=subset[::2]))
    out.update(rcclx_cases.reduce_scatter(comm, cases=subset[1::2], variable=True))
    out.update(rcclx_cases.broadcast_gather_scatter(comm, specs=SPECS, counts=COUNTS))
    out.update(rcclx_cases.all_gather(comm, specs=SPECS, counts=COUNTS))
    return {f"{tag}: {k}": v for k, v in out.items()}


def _layout_rank(ctx, layout):
    info, out = {}, {}
    # Every type and operator through the forced hierarchical all_reduce (split rail on even
    # hosts, leader-based on uneven ones); the other collectives on a subset.
    forced = _communicator(ctx, "forced", FORCED_HIER)
    info["forced"] = _selections(forced)
    full = layout in ("2x2", "2+1+2")
    reductions = _exact(H.reduction_cases() if full else SUBSET + FLOAT_RAND, ctx.nranks)
    out.update(_all_cases(forced, None, reductions, "forced hierarchical"))
    forced.destroy()
    steered = {"flat": COST_FLAT, "hier": COST_HIER}
    if layout == "2x2":
        steered["ring"] = COST_RING
    for name, hints in steered.items():
        comm = _communicator(ctx, name, hints)
        info[name] = _selections(comm)
        if name != "ring":  # the auto choice runs: flat forms, or hierarchical ones
            out.update(_all_cases(comm, None, _exact(SUBSET, ctx.nranks), f"cost model {name}"))
        comm.destroy()
    ctx.barrier("done")  # rank 0's process hosts the store every rank rendezvous in
    return info, out


def _check_forced(sel):
    knobs = dict(zip(("all_reduce",) + COLLECTIVES, ("RCCLX_ALLREDUCE_ALGO",) + OTHERS))
    for (coll, nbytes), (algo, reason) in sel.items():
        assert algo == "hierarchical", (coll, nbytes, algo, reason)
        assert reason == f"forced by {knobs[coll]}=hierarchical", reason


def _check_cost(sel, want, layout):
    nhosts = len(set(LAYOUTS[layout]))
    for (coll, nbytes), (algo, reason) in sel.items():
        assert reason.startswith(f"cost model, {nhosts} hosts x "), (coll, reason)
        assert f" {nbytes} bytes: {algo} " in reason, (coll, nbytes, reason)
        expected = want(coll, nbytes)
        if expected is not None:
            assert algo == expected, (coll, nbytes, algo, reason)
    if layout == "2+1+2":
        assert all("x 1-2 ranks" in r for _, r in sel.values())


def _want_hier(layout):
    def want(coll, nbytes):
        if coll in ("broadcast", "reduce"):
            return None  # the chain along the ring is bandwidth-optimal too: steps decide
        if layout == "4x1":
            # hierarchical is the ring there (a tie the ring wins); all_gather's split rail is
            # the flat exchange (a tie flat wins), one step cheaper than the ring; with free
            # reductions reduce_scatter's one flat step beats the ring at some sizes.
            return {"all_gather": "flat", "all_reduce": "ring"}.get(coll)
        if layout == "2+1+2" and coll == "all_gather":
            return None  # the leaders carry as many bytes as the ring
        return "hierarchical"

    return want


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_hierarchical_across_hosts(layout):
    hosts = LAYOUTS[layout]
    results = launch(
        _layout_rank,
        len(hosts),
        layout,
        env=dict(H.CHUNK_ENV),
        rank_env=pretend_hosts(hosts),
        timeout=150,
    )
    for res in results:
        info, _ = res.value
        _check_forced(info["forced"])
        _check_cost(info["flat"], lambda c, b: "flat", layout)
        _check_cost(info["hier"], _want_hier(layout), layout)
        if "ring" in info:
            _check_cost(info["ring"], lambda c, b: "ring" if b == 64 << 20 else None, layout)
            # All-reduce: small messages flat (one step), large ones ring.
            assert info["ring"][("all_reduce", 1024)][0] == "flat"
        if layout == "2+1+2":
            assert "hierarchical (leader)" in info["hier"][("all_reduce", 1 << 20)][1]
    checks.assert_cases([r.value[1] for r in results])


def _one_host_rank(ctx):
    import numpy as np

    import rcclx_core as rc

    errors = {}
    comm = _communicator(ctx, "one-host", {k: "hierarchical" for k in OTHERS})
    x = np.ones(16, dtype=np.int32)
    calls = {
        "all_reduce": lambda: comm.all_reduce(x, algo="hierarchical"),
        "all_gather": lambda: comm.all_gather(x, np.empty(16 * ctx.nranks, np.int32)),
        "reduce_scatter": lambda: comm.reduce_scatter(np.ones(16 * ctx.nranks, np.int32), x),
        "broadcast": lambda: comm.broadcast(x, root=0),
        "reduce": lambda: comm.reduce(x, root=0),
    }
    for name, call in calls.items():
        try:
            call()
            errors[name] = None
        except rc.InvalidArgumentError as e:
            errors[name] = str(e)
    # flat runs on one host too, and is right.
    y = np.full(1001, ctx.rank + 1, dtype=np.int64)
    comm.all_reduce(y, algo="flat")
    flat_ok = bool((y == sum(range(1, ctx.nranks + 1))).all())
    selected = rc._testing.selection(comm, 1024)
    comm.destroy()
    ctx.barrier("done")
    return errors, flat_ok, selected


def test_forced_hierarchical_on_one_host_is_refused():
    for errors, flat_ok, selected in values(launch(_one_host_rank, 2, timeout=60)):
        for name, msg in errors.items():
            assert msg is not None, f"{name}: forced hierarchical ran on one host"
            want = f"{name}: algorithm hierarchical needs ranks on more than one host"
            assert msg.startswith(want), msg
            assert "2 ranks are all on one host" in msg
        assert "(algo='hierarchical')" in errors["all_reduce"]
        assert "RCCLX_REDUCE_ALGO=hierarchical" in errors["reduce"]
        assert flat_ok
        # One host: the selection is the one of before (DDA flat below its threshold).
        assert selected == ("dda_flat", "1024 bytes <= flat max 32768")
