"""Low-precision (FP8 e4m3, per-block float32 scale) collectives on host memory.

- The wire format: rcclx_core.lp_quantize equals an independent numpy model (lp_model) byte for
  byte, and follows the documented NaN / inf / zero / saturation rules.
- The policy: knobs, per-collective overrides, threshold, eligibility, per-call hint.
- Accuracy, as N real processes (2, 3, 4): all_reduce, reduce_scatter, all_gather, all_to_all on
  float32 and bfloat16, normal, heavy-tailed (Student t, 2 degrees of freedom) and
  wide-dynamic-range (1e-6..1e6 across blocks) inputs, in place and out of place, counts that
  are not multiples of the block. Each result must equal the model's bits (the library's codec
  chained with float32 sums in rank order), be bitwise identical on every rank where the
  collective's output is, and meet the documented bound on ||out - ref|| / ||ref|| against a
  float64 reference (BOUNDS; docs/low_precision.rst lists the measured values).
- Ineligible calls (int32, float64, MAX, PREMUL_SUM, below the threshold, switched off) stay
  full precision, bit for bit.

Run as a script to print the measured error table:
    PYTHONPATH=tests python tests/rcclx_core/test_rcclx_lp.py
"""

from __future__ import annotations

import checks
import lp_model as M
import numpy as np
import pytest
import rcclx_helpers as H

import rcclx_core as rc
from launcher import launch, pretend_hosts

DT = rc.DataType
OP = rc.RedOp
BLOCK = 256
# 4 KiB channel slots: a chunk is 3840 elements, so the counts below span several rounds.
LP_ENV = {
    "RCCL_LOW_PRECISION_ENABLE": "1",
    "RCCLX_LP_MIN_BYTES": "0",
    "RCCLX_P2P_CHUNK_BYTES": "4096",
    "RCCLX_DDA_CHUNK_BYTES": "4096",
}
# Documented bounds on ||out - ref|| / ||ref|| (whole output), and on the same ratio per
# 256-element block of the wide-dynamic-range inputs (every magnitude keeps its precision).
BOUNDS = {"all_reduce": 0.06, "reduce_scatter": 0.04, "all_gather": 0.04, "all_to_all": 0.04}
BLOCK_BOUNDS = {"all_reduce": 0.09, "reduce_scatter": 0.06, "all_gather": 0.06, "all_to_all": 0.06}
DISTS = ("normal", "student_t2", "wide")
COUNT = 3 * 4096 + 77  # per-rank elements: several chunks, and a short last block
EDGE_COUNTS = (0, 1, 255, 257, 3841)


# --- inputs --------------------------------------------------------------------------------


def make_input(dist: str, rank: int, count: int, seed: int = 0, seg: int = COUNT) -> np.ndarray:
    """float32 values of one rank's input. "wide": each 256-element block of each `seg`-element
    segment (the collective's per-rank blocks) has one magnitude, 10^U(-6, 6), on every rank."""
    rng = np.random.default_rng([seed, rank, count, DISTS.index(dist)])
    if dist == "normal":
        x = rng.standard_normal(count)
    elif dist == "student_t2":
        x = rng.standard_t(2, count)
    else:
        per_seg = -(-seg // BLOCK)
        mags = np.random.default_rng([seed, count]).uniform(-6, 6, per_seg * -(-count // seg))
        scale = np.concatenate([np.repeat(m, BLOCK)[:seg] for m in mags.reshape(-1, per_seg)])[
            :count
        ]
        x = rng.standard_normal(count) * 10.0**scale
    return x.astype(np.float32)


def storage(x: np.ndarray, bf16: bool) -> np.ndarray:
    return M.from_f32(x, bf16)


def values(a: np.ndarray, bf16: bool) -> np.ndarray:
    """float64 values of a float32 or bfloat16-storage array."""
    return M.to_f32(a, bf16).astype(np.float64)


def worst_block_error(got: np.ndarray, ref: np.ndarray, seg: int) -> float:
    """The largest rel_error over the 256-element blocks of each `seg`-element segment."""
    worst = 0.0
    for s in range(0, got.size, seg):
        for b in range(s, s + seg, BLOCK):
            e = min(b + BLOCK, s + seg)
            worst = max(worst, checks.relative_error(got[b:e], ref[b:e]))
    return worst


# --- one collective call, in place or not ---------------------------------------------------


def run_collective(comm, coll: str, x: np.ndarray, bf16: bool, inplace: bool, **kw) -> np.ndarray:
    """Runs `coll` on this rank's input x (storage); returns the output (storage)."""
    n, me = comm.size, comm.rank
    if bf16:
        kw["dtype"] = DT.BFLOAT16
    if coll == "all_reduce":
        if inplace:
            out = x.copy()
            comm.all_reduce(out, **kw)
            return out
        out = np.empty_like(x)
        comm.all_reduce(x, out, **kw)
        return out
    if coll == "reduce_scatter":
        m = x.size // n
        if inplace:
            buf = x.copy()
            comm.reduce_scatter(buf, buf[me * m : (me + 1) * m], **kw)
            return buf[me * m : (me + 1) * m].copy()
        out = np.empty(m, dtype=x.dtype)
        comm.reduce_scatter(x, out, **kw)
        return out
    if coll == "all_gather":
        m = x.size
        out = np.empty(n * m, dtype=x.dtype)
        if inplace:
            out[me * m : (me + 1) * m] = x
            comm.all_gather(out[me * m : (me + 1) * m], out, **kw)
        else:
            comm.all_gather(x, out, **kw)
        return out
    if inplace:
        out = x.copy()
        comm.all_to_all(out, out, **kw)
        return out
    out = np.empty_like(x)
    comm.all_to_all(x, out, **kw)
    return out


def model_and_reference(coll, codec, inputs, me, bf16, average=False):
    """(the model's output storage, the float64 reference values) of one call."""
    n = len(inputs)
    vals = [values(x, bf16) for x in inputs]
    if coll == "all_reduce":
        ref = np.sum(vals, axis=0) / (n if average else 1)
        return M.all_reduce(codec, inputs, bf16, average), ref
    if coll == "reduce_scatter":
        m = inputs[0].size // n
        ref = np.sum(vals, axis=0)[me * m : (me + 1) * m] / (n if average else 1)
        return M.reduce_scatter(codec, inputs, [m] * n, me, bf16, average), ref
    if coll == "all_gather":
        return M.all_gather(codec, inputs, bf16), np.concatenate(vals)
    m = inputs[0].size // n
    return M.all_to_all(codec, inputs, me, bf16), np.concatenate(
        [v[me * m : (me + 1) * m] for v in vals]
    )


def input_count(coll: str, n: int, count: int) -> int:
    """Per-rank input elements: reduce_scatter and all_to_all take n blocks of `count`."""
    return count * n if coll in ("reduce_scatter", "all_to_all") else count


COLLS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
SHARED_OUTPUT = ("all_reduce", "all_gather")  # the same output on every rank


# --- rank functions -------------------------------------------------------------------------


def _accuracy_rank(ctx):
    """{case: (digest, problem, error, worst block error)} for every accuracy case."""
    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    codec = M.Codec(BLOCK, rc)
    out = {}
    i = 0
    for bf16 in (False, True):
        for dist in DISTS:
            for coll in COLLS:
                inplace = i % 2 == 1
                i += 1
                cnt = input_count(coll, n, COUNT)
                inputs = [storage(make_input(dist, p, cnt), bf16) for p in range(n)]
                got = run_collective(comm, coll, inputs[me], bf16, inplace)
                model, ref = model_and_reference(coll, codec, inputs, me, bf16)
                g = values(got, bf16)
                dtype = "bfloat16" if bf16 else "float32"
                key = f"{coll} {dtype} {dist} {'in' if inplace else 'out of'} place"
                out[key] = (
                    checks.digest(got),
                    checks.same_bits(got, model),
                    checks.relative_error(g, ref),
                    worst_block_error(g, ref, COUNT) if dist == "wide" else None,
                )
    # Edge counts (zero, one element, block tails) and AVG: model bits only.
    for coll in COLLS:
        for j, count in enumerate(EDGE_COUNTS):
            cnt = input_count(coll, n, count)
            inputs = [make_input("normal", p, cnt, seed=1) for p in range(n)]
            avg = coll in ("all_reduce", "reduce_scatter") and j % 2 == 1
            kw = {"op": OP.AVG} if avg else {}
            got = run_collective(comm, coll, inputs[me], False, j % 2 == 0, **kw)
            model, _ = model_and_reference(coll, codec, inputs, me, False, average=avg)
            key = f"{coll} float32 count={count}{' avg' if avg else ''}"
            out[key] = (checks.digest(got), checks.same_bits(got, model), None, None)
    # NaN and infinities in an all_reduce: carried to the same positions (section "Rules").
    inputs = [make_input("normal", p, 1000, seed=2) for p in range(n)]
    inputs[0][10] = np.inf
    inputs[1][300] = np.nan
    inputs[0][600] = -np.inf
    inputs[1][601] = np.inf
    got = run_collective(comm, "all_reduce", inputs[me], False, False)
    model = M.all_reduce(codec, inputs, False)
    problems = [checks.same_bits(got, model)]
    if not (
        got[10] == np.inf and np.isnan(got[300]) and got[600] == -np.inf and got[601] == np.inf
    ):
        problems.append(f"specials not carried: {got[[10, 300, 600, 601]]}")
    finite = np.ones(1000, dtype=bool)
    finite[[10, 300, 600, 601]] = False
    ref = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    err = checks.relative_error(got[finite].astype(np.float64), ref[finite])
    if not np.isfinite(got[finite]).all() or err > BOUNDS["all_reduce"]:
        problems.append(f"finite elements disturbed (error {err:.3g})")
    out["all_reduce float32 nan/inf"] = (
        checks.digest(got),
        "; ".join(p for p in problems if p) or None,
        None,
        None,
    )
    comm.destroy()
    return out


def _check_accuracy(results):
    vals = [r.value for r in results]
    failures = []
    for key in vals[0]:
        coll = key.split()[0]
        for r, v in enumerate(vals):
            digest, problem, err, block_err = v[key]
            if problem:
                failures.append(f"rank {r}: {key}: {problem}")
            if err is not None and not err <= BOUNDS[coll]:
                failures.append(f"rank {r}: {key}: error {err:.4g} > bound {BOUNDS[coll]}")
            if block_err is not None and not block_err <= BLOCK_BOUNDS[coll]:
                failures.append(
                    f"rank {r}: {key}: worst block error {block_err:.4g} > {BLOCK_BOUNDS[coll]}"
                )
        if coll in SHARED_OUTPUT and len({v[key][0] for v in vals}) != 1:
            failures.append(f"{key}: ranks' outputs differ bitwise")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_lp_accuracy(nranks):
    results = launch(_accuracy_rank, nranks, env=LP_ENV, timeout=120)
    _check_accuracy(results)
    assert len(results[0].value) == 2 * len(DISTS) * len(COLLS) + len(COLLS) * len(EDGE_COUNTS) + 1


def _variants_rank(ctx):
    """{case: (digest, problem)}: the _v variants, async calls and a group, in low precision."""
    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    codec = M.Codec(BLOCK, rc)
    out = {}
    counts = [1000 + 300 * p + 7 for p in range(n)]
    xs = [make_input("wide", p, counts[p], seed=3) for p in range(n)]
    got = np.empty(sum(counts), dtype=np.float32)
    comm.all_gather_v(xs[me], got, counts)
    out["all_gather_v float32"] = (
        checks.digest(got),
        checks.same_bits(got, M.all_gather(codec, xs, False)),
    )
    xs = [storage(make_input("student_t2", p, sum(counts), seed=4), True) for p in range(n)]
    got = np.empty(counts[me], dtype=np.uint16)
    comm.reduce_scatter_v(xs[me], got, counts, dtype=DT.BFLOAT16)
    want = M.reduce_scatter(codec, xs, counts, me, True)
    out["reduce_scatter_v bfloat16"] = (checks.digest(got), checks.same_bits(got, want))
    # Asynchronous, then grouped: the same results as synchronous calls.
    xs = [make_input("normal", p, 5000, seed=5) for p in range(n)]
    got = np.empty(5000, dtype=np.float32)
    comm.all_reduce(xs[me], got, async_op=True).wait()
    out["all_reduce async"] = (
        checks.digest(got),
        checks.same_bits(got, M.all_reduce(codec, xs, False)),
    )
    a2a = [make_input("normal", p, 333 * n, seed=6) for p in range(n)]
    got_a2a = np.empty(333 * n, dtype=np.float32)
    got_ar = np.empty(5000, dtype=np.float32)
    with comm.group():
        comm.all_to_all(a2a[me], got_a2a)
        comm.all_reduce(xs[me], got_ar, op=OP.AVG)
    want = M.all_to_all(codec, a2a, me, False)
    out["all_to_all grouped"] = ("", checks.same_bits(got_a2a, want))
    want = M.all_reduce(codec, xs, False, average=True)
    out["all_reduce avg grouped"] = (checks.digest(got_ar), checks.same_bits(got_ar, want))
    comm.destroy()
    return out


TRANSPORTS = {
    "shm": dict(nranks=3, env={}, rank_env=None),
    "tcp": dict(nranks=3, env={"RCCLX_TRANSPORT": "tcp"}, rank_env=None),
    "two_hosts": dict(nranks=4, env={}, rank_env=pretend_hosts(ranks_per_host=2)),
}


@pytest.mark.parametrize("setup", list(TRANSPORTS))
def test_lp_variants_async_group_transports(setup):
    t = TRANSPORTS[setup]
    env = {**LP_ENV, **t["env"]}
    results = launch(_variants_rank, t["nranks"], env=env, rank_env=t["rank_env"], timeout=120)
    failures = [f"rank {r.rank}: {k}: {v[1]}" for r in results for k, v in r.value.items() if v[1]]
    assert not failures, "\n".join(failures)
    for key in ("all_gather_v float32", "all_reduce async", "all_reduce avg grouped"):
        assert len({r.value[key][0] for r in results}) == 1, f"{key}: ranks differ bitwise"


# --- ineligible calls stay full precision ---------------------------------------------------


def _fallback_rank(ctx):
    """{case: problem or None}. Below 2 MiB the host allreduce (dda_flat / dda_tree) sums in
    rank order, so the full-precision results are known to the bit."""
    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    codec = M.Codec(BLOCK, rc)
    out = {}
    big = 20000  # elements: 80 KB of float32, above RCCLX_LP_MIN_BYTES=64K
    small = 4000  # 16 KB, below it

    def inputs_of(dtype, count, seed):
        rs = [np.random.default_rng([seed, p]) for p in range(n)]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return [g.integers(info.min, info.max, count, dtype=dtype, endpoint=True) for g in rs]
        return [g.standard_normal(count).astype(dtype) for g in rs]

    def rank_order_sum(xs):
        acc = xs[0].copy()
        with np.errstate(over="ignore"):
            for x in xs[1:]:
                acc = (acc + x).astype(xs[0].dtype)
        return acc

    def check(key, got, want):
        out[key] = checks.same_bits(got, want)

    xs = inputs_of(np.int32, big, 1)
    check(
        "all_reduce int32 sum",
        run_collective(comm, "all_reduce", xs[me], False, False),
        rank_order_sum(xs),
    )
    xs = inputs_of(np.float64, big, 2)
    check(
        "all_reduce float64 sum",
        run_collective(comm, "all_reduce", xs[me], False, True),
        rank_order_sum(xs),
    )
    xs = inputs_of(np.float32, big, 3)
    got = run_collective(comm, "all_reduce", xs[me], False, False, op=OP.MAX)
    check("all_reduce float32 max", got, np.max(xs, axis=0))
    s = [0.5 + 0.25 * p for p in range(n)]
    got = run_collective(comm, "all_reduce", xs[me], False, False, op=OP.PREMUL_SUM, scalar=s[me])
    check(
        "all_reduce float32 premul_sum",
        got,
        rank_order_sum([(x * np.float32(c)).astype(np.float32) for x, c in zip(xs, s)]),
    )
    xs = inputs_of(np.float32, small, 4)
    check(
        "all_reduce float32 below threshold",
        run_collective(comm, "all_reduce", xs[me], False, True),
        rank_order_sum(xs),
    )
    xs = inputs_of(np.float32, big, 5)
    check(
        "all_gather float32 switched off",
        run_collective(comm, "all_gather", xs[me], False, False),
        np.concatenate(xs),
    )
    xs = inputs_of(np.float32, big * n, 6)
    got = run_collective(comm, "reduce_scatter", xs[me], False, False, op=OP.MAX)
    check("reduce_scatter float32 max", got, np.max(xs, axis=0)[me * big : (me + 1) * big])
    for dtype in (np.int32, np.float64):
        xs = inputs_of(dtype, big * n, 7)
        want = np.concatenate([x[me * big : (me + 1) * big] for x in xs])
        check(
            f"all_to_all {np.dtype(dtype).name}",
            run_collective(comm, "all_to_all", xs[me], False, False),
            want,
        )
    # The per-call hint: False keeps an eligible call in full precision; True runs a call in
    # low precision that the knobs switch off (all_gather) or find too small.
    xs = inputs_of(np.float32, big, 9)
    got = run_collective(comm, "all_reduce", xs[me], False, False, low_precision=False)
    check("all_reduce float32 low_precision=False", got, rank_order_sum(xs))
    got = run_collective(comm, "all_gather", xs[me], False, True, low_precision=True)
    check("all_gather float32 low_precision=True", got, M.all_gather(codec, xs, False))
    xs = inputs_of(np.float32, small * n, 10)
    got = run_collective(comm, "reduce_scatter", xs[me], False, False, low_precision=True)
    want = M.reduce_scatter(codec, xs, [small] * n, me, False)
    check("reduce_scatter float32 small, low_precision=True", got, want)
    xs = inputs_of(np.int32, big * n, 11)
    got = run_collective(comm, "all_to_all", xs[me], False, False, low_precision=True)
    want = np.concatenate([x[me * big : (me + 1) * big] for x in xs])
    check("all_to_all int32 low_precision=True (ineligible)", got, want)
    # And the eligible calls of this configuration do run in low precision.
    xs = inputs_of(np.float32, big, 8)
    got = run_collective(comm, "all_reduce", xs[me], False, False)
    check("all_reduce float32 eligible (low precision)", got, M.all_reduce(codec, xs, False))
    got = run_collective(comm, "all_reduce", xs[me], False, False, op=OP.AVG)
    check(
        "all_reduce float32 avg eligible (low precision)",
        got,
        M.all_reduce(codec, xs, False, average=True),
    )
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_lp_ineligible_stays_full_precision(nranks):
    env = {
        "RCCL_LOW_PRECISION_ENABLE": "1",
        "RCCL_LOW_PRECISION_ENABLE_ALLGATHER": "0",
        "RCCLX_LP_MIN_BYTES": "64K",
    }
    results = launch(_fallback_rank, nranks, env=env, timeout=120)
    failures = [f"rank {r.rank}: {k}: {p}" for r in results for k, p in r.value.items() if p]
    assert not failures, "\n".join(failures)
    assert len(results[0].value) == 15


def _logging_rank(ctx, path):
    """Runs an eligible and two ineligible calls with RCCLX_DEBUG=INFO, stderr to `path`."""
    import os

    fd = os.open(f"{path}.{ctx.rank}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 2)
    rc.refresh_logging()
    comm = H.comm_of(ctx)
    x = np.ones(1000, dtype=np.float32)
    comm.all_reduce(x.copy())
    comm.all_reduce(x.astype(np.int32))
    comm.all_reduce(x.copy(), op=OP.MAX)
    comm.all_reduce(x.copy(), low_precision=False)
    comm.destroy()
    with open(f"{path}.{ctx.rank}") as f:
        return [line for line in f if "precision" in line]


def test_lp_logs_decisions(tmp_path):
    env = {**LP_ENV, "RCCLX_DEBUG": "INFO"}
    results = launch(_logging_rank, 2, str(tmp_path / "log"), env=env)
    for r in results:
        lines = "".join(r.value)
        assert "all_reduce #1: low precision (fp8 e4m3, 256-element blocks" in lines, lines
        assert "all_reduce #2: full precision: datatype int32 is not eligible" in lines, lines
        assert "all_reduce #3: full precision: op max is not eligible" in lines, lines
        assert "all_reduce #4" not in lines, lines  # turned off by the call: nothing to explain


# --- the wire format, in this process ------------------------------------------------------


def _quantize(x, block=BLOCK, bf16=False):
    wire = np.empty(rc._testing.lp_wire_bytes(x.size, block), dtype=np.uint8)
    rc._testing.lp_quantize(x, wire, block_elems=block, **({"dtype": DT.BFLOAT16} if bf16 else {}))
    return wire


def _dequantize(wire, count, block=BLOCK):
    out = np.empty(count, dtype=np.float32)
    rc._testing.lp_dequantize(wire, out, block_elems=block)
    return out


@pytest.mark.parametrize("block", [32, 256, 4096])
def test_lp_wire_format_matches_model(block):
    rng = np.random.default_rng(block)
    for count in (0, 1, 31, 33, 255, 257, 5000):
        cases = {
            "normal": rng.standard_normal(count),
            "student_t2": rng.standard_t(2, count),
            "extreme": rng.standard_normal(count) * 10.0 ** rng.uniform(-44, 38, count),
        }
        for name, x in cases.items():
            x = x.astype(np.float32)
            wire = _quantize(x, block)
            assert np.array_equal(wire, M.quantize(x, block)), f"{name} count={count}"
            assert checks.digest(_dequantize(wire, count, block)) == checks.digest(
                M.dequantize(wire, count, block)
            ), f"{name} count={count}"
            # bfloat16 inputs encode as their float32 values do.
            b = M.from_f32(x, True)
            assert np.array_equal(
                _quantize(b, block, bf16=True), _quantize(M.to_f32(b, True), block)
            )


def test_lp_wire_format_rules():
    # Layout: 4 scales (16 bytes), then 1000 codes padded to 1008.
    assert rc._testing.lp_wire_bytes(1000) == 16 + 1008
    assert rc._testing.lp_wire_bytes(0) == 0
    assert rc._testing.lp_wire_bytes(257) == 16 + 272
    x = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    x[0:256] = 0.0  # a block of zeros: scale 1, codes 0
    x[1] = -0.0
    x[300] = np.inf  # block 1: an infinity and no NaN -> negated scale, decodes to +-inf
    x[301] = -np.inf
    x[600] = np.nan  # block 2: NaN and an infinity -> both decode to NaN
    x[601] = np.inf
    x[800] = 1e30  # block 3: one huge value sets the scale; no saturation
    wire = _quantize(x)
    scales = wire[:16].view(np.float32)
    assert scales[0] == 1.0 and scales[1] < 0 and scales[2] > 0
    k = np.log2(np.abs(scales))
    assert np.array_equal(k, np.round(k)), "scales are powers of two"
    y = _dequantize(wire, 1024)
    assert np.array_equal(y[:256], x[:256]) and np.signbit(y[1])
    assert y[300] == np.inf and y[301] == -np.inf
    assert np.isnan(y[600]) and np.isnan(y[601])
    assert abs(y[800] - 1e30) <= 2.0**-4 * 1e30
    fin = np.isfinite(x)
    assert np.all(
        np.abs(y[fin] - x[fin])
        <= 2.0**-4 * np.abs(x[fin]) + np.repeat(np.abs(scales), 256)[fin] * 2.0**-10
    )
    # Round trips are exact and idempotent: D(Q(D(Q(x)))) == D(Q(x)).
    assert np.array_equal(
        _dequantize(_quantize(y), 1024).view(np.uint32)[fin], y.view(np.uint32)[fin]
    )
    # Every block's magnitude survives, from 1e-30 to 1e30 (an unscaled e4m3 cast keeps none).
    z = np.repeat(10.0 ** np.arange(-30, 31, 6), 256) * np.random.default_rng(1).standard_normal(
        11 * 256
    )
    z = z.astype(np.float32)
    zr = _dequantize(_quantize(z), z.size)
    for b in range(11):
        sl = slice(b * 256, (b + 1) * 256)
        assert checks.relative_error(zr[sl].astype(np.float64), z[sl].astype(np.float64)) < 0.04
    with pytest.raises(rc.InvalidArgumentError, match="multiple of 32"):
        rc._testing.lp_wire_bytes(10, 100)
    with pytest.raises(rc.InvalidArgumentError, match="float32 and bfloat16"):
        _quantize(np.zeros(4, dtype=np.float64))


# --- the policy ------------------------------------------------------------------------------


LP_KNOBS = [
    "RCCL_LOW_PRECISION_ENABLE",
    "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE",
    "RCCL_LOW_PRECISION_ENABLE_ALLGATHER",
    "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER",
    "RCCL_LOW_PRECISION_ENABLE_ALLTOALL",
    "RCCLX_LP_MIN_BYTES",
    "RCCLX_LP_BLOCK_ELEMS",
]


def test_lp_policy(monkeypatch):
    for k in LP_KNOBS:
        monkeypatch.delenv(k, raising=False)
    d = rc._testing.low_precision_decision
    big = 16 << 20
    assert d("all_reduce", big) == (False, "not enabled (RCCL_LOW_PRECISION_ENABLE=0)")
    assert d("all_reduce", 64, hint=True)[0]  # the hint ignores knobs and threshold
    monkeypatch.setenv("RCCL_LOW_PRECISION_ENABLE", "1")
    for coll in COLLS:
        assert d(coll, big)[0], coll
        assert not d(coll, big - 1)[0], coll
        assert "RCCLX_LP_MIN_BYTES" in d(coll, big - 1)[1]
        assert not d(coll, big, hint=False)[0]
    assert d("all_reduce", big, dtype=int(DT.BFLOAT16))[0]
    assert d("all_reduce", big, op=int(OP.AVG))[0]
    for dtype in (DT.FLOAT16, DT.FLOAT64, DT.INT32, DT.FLOAT8_E4M3):
        used, why = d("all_reduce", big, dtype=int(dtype))
        assert not used and "not eligible" in why, why
    for op in (OP.MAX, OP.MIN, OP.PROD, OP.PREMUL_SUM):
        used, why = d("reduce_scatter", big, op=int(op))
        assert not used and "sum and avg only" in why, why
        assert d("all_gather", big, op=int(op))[0]  # no reduction: the op is irrelevant
    assert not d("all_reduce", big, dtype=int(DT.INT32), hint=True)[0]
    assert not d("all_reduce", big, nranks=1)[0]
    assert d("all_reduce", big, gpu=True)[0]  # GPU buffers follow the same rules
    # Per-collective switches override the global one either way; unset, they follow it.
    monkeypatch.setenv("RCCL_LOW_PRECISION_ENABLE_ALLGATHER", "0")
    assert not d("all_gather", big)[0] and d("all_reduce", big)[0]
    monkeypatch.setenv("RCCL_LOW_PRECISION_ENABLE", "0")
    monkeypatch.setenv("RCCL_LOW_PRECISION_ENABLE_ALLTOALL", "1")
    assert d("all_to_all", big) == (
        True,
        f"RCCL_LOW_PRECISION_ENABLE_ALLTOALL=1, {big} bytes >= RCCLX_LP_MIN_BYTES={big}",
    )
    assert not d("reduce_scatter", big)[0]
    monkeypatch.setenv("RCCLX_LP_MIN_BYTES", "1K")
    assert d("all_to_all", 1024)[0] and not d("all_to_all", 1023)[0]
    monkeypatch.setenv("RCCLX_LP_BLOCK_ELEMS", "100")
    with pytest.raises(rc.InvalidArgumentError, match="RCCLX_LP_BLOCK_ELEMS=100"):
        d("all_to_all", 1024)
    monkeypatch.setenv("RCCLX_LP_BLOCK_ELEMS", "256")
    monkeypatch.setenv("RCCL_LOW_PRECISION_ENABLE_ALLREDUCE", "maybe")
    with pytest.raises(rc.InvalidArgumentError, match="RCCL_LOW_PRECISION_ENABLE_ALLREDUCE"):
        d("all_reduce", big)
    with pytest.raises(rc.InvalidArgumentError, match="no low-precision variant"):
        d("broadcast", big)


if __name__ == "__main__":
    # The error table of docs/low_precision.rst: worst normalized error over ranks and sizes.
    table: dict = {}
    for nranks in (2, 3, 4):
        for r in launch(_accuracy_rank, nranks, env=LP_ENV, timeout=120):
            for key, (_, _problem, err, block_err) in r.value.items():
                if err is None:
                    continue
                coll, dtype, dist = key.split()[:3]
                row = table.setdefault((coll, dtype, dist), [0.0, None])
                row[0] = max(row[0], err)
                if block_err is not None:
                    row[1] = max(row[1] or 0.0, block_err)
    print(f"{'collective':16}{'dtype':10}{'input':12}{'error':>8}{'bound':>8}{'worst block':>13}")
    for (coll, dtype, dist), (err, berr) in sorted(table.items()):
        b = f"{berr:.4f}" if berr is not None else "-"
        print(f"{coll:16}{dtype:10}{dist:12}{err:8.4f}{BOUNDS[coll]:8.2f}{b:>13}")


def test_lp_gpu_launch_shape():
    """The GPU kernels' launch shape (a pure function): chunks always fit the staging, cover the
    segment, spread over the grid before growing, shrink for more ranks; too little staging is
    a clear error."""
    shape = rc._testing.lp_gpu_launch_shape
    for seg in (1, 7, 255, 256, 257, 4096, 32768, 65536, 1 << 20):
        for nranks in (2, 3, 8):
            for one_slot in (False, True):
                s = shape(seg, 256, nranks, 40 << 20, 256, 128, one_slot)
                assert s["staging_bytes"] <= 40 << 20
                assert 1 <= s["blocks"] <= 256 and 1 <= s["chunk_blocks"] <= 128
                chunks = -(-seg // s["chunk_blocks"])
                assert s["blocks"] <= chunks
                rounds = -(-chunks // s["blocks"])
                assert s["slots"] == (1 if one_slot or rounds == 1 else 2)
                assert (
                    s["chunk_bytes"]
                    == -(-s["chunk_blocks"] * 4 // 16) * 16 + s["chunk_blocks"] * 256
                )
    # Small segments use the whole grid; large ones grow the chunk to the maximum.
    assert shape(1024, one_slot=True)["blocks"] == 256
    assert shape(1024, one_slot=True)["chunk_blocks"] == 4
    assert shape(32768, one_slot=True)["chunk_blocks"] == 128
    # More ranks need more staging per chunk: the chunk shrinks to fit.
    assert shape(32768, nranks=8, one_slot=True)["chunk_blocks"] < 128
    # A staging that cannot hold one chunk says which knob to raise.
    with pytest.raises(rc.InvalidArgumentError, match="RCCLX_LP_GPU_STAGING_BYTES"):
        shape(100, 4096, 8, 1000)
