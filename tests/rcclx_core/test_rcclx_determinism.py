"""Deterministic reductions on host buffers (RCCLX_DETERMINISTIC, on by default): every element
of all_reduce, reduce_scatter and reduce has the bits of the one fold order
(docs/determinism.rst), whatever the algorithm, the message size, the element's offset in the
message, the collective, the communicator (a split folds in its own rank order) and, across
pretend hosts, the layout (each host's ranks, rounded, then the hosts in order).

Every rank computes the canonical fold of every rank's input in numpy and compares bits. The
inputs span eight decades with random signs, so any other order or association shows in many
elements; with RCCLX_DETERMINISTIC=0 the ring passes partial sums around and the same check
finds them (the test can fail)."""

import numpy as np
import pytest
import rcclx_helpers as H
from fold_reference import canonical, inputs_of, mismatch

from launcher import launch, pretend_hosts

N = 30011  # elements: many 4 KiB chunks (H.CHUNK_ENV), an odd tail
LAYOUTS = {
    "3": ["a"] * 3,
    "4": ["a"] * 4,
    "5": ["a"] * 5,
    "2x2": ["a", "a", "b", "b"],
    "2+3": ["a", "b", "a", "b", "b"],  # uneven hosts, ranks interleaved
}
SPECS = ("float32", "float64", "bfloat16", "float16")
# (offset, count) windows of the vector reduced alone; the last ones are drawn per layout.
WINDOWS = [(0, N), (0, 1000), (N - 97, 97), (1, 1)]
PREMUL = 0.375


def _comm(ctx, name, hints):
    import rcclx_core as rc

    return rc.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix=name, hints=hints)


def _rank(ctx, layout):
    import rcclx_core as rc

    hosts = LAYOUTS[layout]
    n, me = ctx.nranks, ctx.rank
    multi = len(set(hosts)) > 1
    rng = np.random.default_rng(7)
    windows = WINDOWS + [(int(o), int(c)) for o, c in
                         zip(rng.integers(0, N - 4099, 3), (97, 4099, 1 << 12))]  # fmt: skip
    one_host = ["dda_flat", "dda_tree", "dda_large"]
    ar_algos = ["ring", "flat"] + (["hierarchical"] if multi else one_host)
    coll_algos = ["ring", "flat"] + (["hierarchical"] if multi else [])
    comms = {a: _comm(ctx, f"det-{a}", {"RCCLX_REDUCESCATTER_ALGO": a, "RCCLX_REDUCE_ALGO": a})
             for a in coll_algos}  # fmt: skip
    bad = {}

    def check(key, got, want):
        wrong = mismatch(got, want)
        if wrong:
            bad[key] = f"{wrong} of {len(want)} elements differ from the fold order"

    for name in SPECS:
        spec = H.SPEC[name]
        inputs = [inputs_of(name, r, N) for r in range(n)]
        want = canonical(name, inputs, hosts)
        comm = comms["ring"]
        for algo in ar_algos:
            for off, count in windows:
                x = inputs[me][off : off + count].copy()
                comm.all_reduce(x, algo=algo, **spec.kw())
                check(f"all_reduce {name} {algo} [{off}:+{count}]", x, want[off : off + count])
        block = N // n
        for algo, c in comms.items():
            got = np.empty(block, dtype=spec.storage)
            c.reduce_scatter(inputs[me][: block * n], got, **spec.kw())
            check(f"reduce_scatter {name} {algo}", got, want[me * block : (me + 1) * block])
            root = 1 % n
            y = inputs[me].copy()
            c.reduce(y, root=root, **spec.kw())
            if me == root:
                check(f"reduce {name} {algo} root {root}", y, want)

    # The other floating-point reductions, float32, every algorithm, the whole vector.
    spec = H.SPEC["float32"]
    inputs = [inputs_of("float32", r, N) for r in range(n)]
    near_one = [(1 + x / 1e5).astype(np.float32) for x in inputs]
    total = canonical("float32", inputs, hosts)
    premul = [(x.astype(np.float64) * PREMUL).astype(np.float32) for x in inputs]
    refs = {
        rc.RedOp.AVG: (inputs, (total / np.float32(n)).astype(np.float32)),
        rc.RedOp.PREMUL_SUM: (inputs, canonical("float32", premul, hosts)),
        rc.RedOp.PROD: (near_one, canonical("float32", near_one, hosts, "prod")),
    }
    for op, (xs, ref) in refs.items():
        scalar = PREMUL if op == rc.RedOp.PREMUL_SUM else None
        for algo in ar_algos:
            x = xs[me].copy()
            comms["ring"].all_reduce(x, op=op, algo=algo, scalar=scalar)
            check(f"all_reduce float32 {op.name} {algo}", x, ref)

    # A split folds in its own rank order: the odd ranks, in reverse.
    odd = [r for r in range(n) if r % 2 == 1]
    sub = comms["ring"].split(1 if me in odd else -1, key=-me)
    if sub is not None:
        members = sorted(odd, reverse=True)
        x = inputs[me].copy()
        sub.all_reduce(x, algo="ring")
        sub_hosts = [hosts[r] for r in members]
        check("split all_reduce", x, canonical("float32", [inputs[r] for r in members], sub_hosts))
        sub.destroy()

    # Partial sums passed around the ring (RCCLX_DETERMINISTIC=0) differ: the check sees them.
    loose = _comm(ctx, "det-off", {"RCCLX_DETERMINISTIC": "0"})
    x = inputs[me].copy()
    loose.all_reduce(x, algo="ring")
    drift = mismatch(x, total)
    loose.destroy()
    for c in comms.values():
        c.destroy()
    ctx.barrier("done")
    return bad, drift


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_reduction_folds_in_the_one_order(layout):
    hosts = LAYOUTS[layout]
    results = launch(
        _rank,
        len(hosts),
        layout,
        env=dict(H.CHUNK_ENV),
        rank_env=pretend_hosts(hosts),
        timeout=240,
    )
    problems = {f"rank {res.rank}: {k}": v for res in results for k, v in res.value[0].items()}
    assert not problems, "\n".join(f"{k}: {v}" for k, v in sorted(problems.items())[:40])
    if len(hosts) >= 3:
        # Three ranks or more: a ring's segment starts at rank j, so some elements fold in
        # another order (two ranks fold alike, as a + b == b + a).
        assert any(res.value[1] > 0 for res in results), "the unordered ring matched the order"
