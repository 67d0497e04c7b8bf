"""Eight ranks on one host (four times the cores of the CI machine): every collective family on
a representative subset of types, operators and counts, each CPU allreduce algorithm, and the
low-precision all_reduce / reduce_scatter against the model's bits. The two- to four-rank suites
cover every type and operator; this one checks that nothing assumes a small world (ring rounds,
direct-arena slots, chunk indices, rank-order sums)."""

import checks
import lp_model as M
import numpy as np
import rcclx_cases
import rcclx_helpers as H

from launcher import launch

N = 8
SPECS = [H.SPEC[name] for name in ("uint8", "int32", "float32", "bfloat16")]
OPS = (H.OP.SUM, H.OP.MAX, H.OP.AVG, H.OP.PREMUL_SUM, H.OP.BXOR)
COUNTS = (0, 1, 1001, 5003)
RS_COUNTS = (0, 1, 1001)
ALGOS = ("ring", "dda_flat", "dda_tree")


def _cases():
    return [c for c in H.reduction_cases(SPECS) if c[1] in OPS]


def _collectives_rank(ctx):
    comm = H.comm_of(ctx)
    out = {}
    for algo in ALGOS:
        for key, value in rcclx_cases.all_reduce(comm, algo, _cases(), COUNTS).items():
            out[f"{algo}: {key}"] = value
    out.update(rcclx_cases.reduce(comm, _cases(), COUNTS))
    out.update(rcclx_cases.reduce_scatter(comm, _cases(), RS_COUNTS))
    out.update(rcclx_cases.reduce_scatter(comm, _cases(), RS_COUNTS, variable=True))
    out.update(rcclx_cases.all_gather(comm, SPECS, COUNTS))
    out.update(rcclx_cases.all_to_all(comm, SPECS, COUNTS))
    out.update(rcclx_cases.broadcast_gather_scatter(comm, SPECS, COUNTS))
    comm.destroy()
    return out


def test_every_collective_on_eight_ranks():
    results = launch(_collectives_rank, N, env=H.CHUNK_ENV, timeout=280)
    per_algo = len(_cases()) * len(COUNTS)
    expected = (
        len(ALGOS) * per_algo  # all_reduce
        + per_algo  # reduce
        + 2 * len(_cases()) * len(RS_COUNTS)  # reduce_scatter, reduce_scatter_v
        + (2 + 3 + 3) * len(SPECS) * len(COUNTS)  # all_gather, all_to_all, bcast/gather/scatter
    )
    checks.assert_cases(results, expect_cases=expected)


def _lp_rank(ctx):
    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    codec = M.Codec(256, H.rc)
    out = {}
    for count in (1, 2049, 40_003):
        rng = [np.random.default_rng(1000 * count + p) for p in range(n)]
        inputs = [r.standard_normal(count * n).astype(np.float32) for r in rng]
        got = np.empty_like(inputs[me])
        comm.all_reduce(inputs[me], got, low_precision=True)
        want = M.all_reduce(codec, inputs, False)
        out[f"lp all_reduce count={count * n}"] = (checks.digest(got), checks.same_bits(got, want))
        part = np.empty(count, dtype=np.float32)
        comm.reduce_scatter(inputs[me], part, low_precision=True)
        want = M.reduce_scatter(codec, inputs, [count] * n, me, False)
        # Each rank holds its own block: compare with the model here, not across ranks.
        out[f"lp reduce_scatter count={count} rank={me}"] = (
            None,
            checks.same_bits(part, want),
        )
    comm.destroy()
    return out


def test_low_precision_on_eight_ranks():
    results = launch(_lp_rank, N, timeout=200)
    values = [r.value for r in results]
    failures = [
        f"rank {r}: {k}: {v[1]}" for r, vals in enumerate(values) for k, v in vals.items() if v[1]
    ]
    assert not failures, "\n".join(failures[:20])
    for key in (k for k in values[0] if k.startswith("lp all_reduce")):
        assert len({v[key][0] for v in values}) == 1, f"{key}: ranks' outputs differ"
    assert sum(len(v) for v in values) == N * 6
