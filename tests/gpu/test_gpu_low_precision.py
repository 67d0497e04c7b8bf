"""Low-precision (FP8 wire format) collectives on GPU buffers, 2 ranks, checked bit for bit:
all_reduce, reduce_scatter, all_gather and all_to_all, float32 and bfloat16, SUM and AVG, in
place and out of place, odd counts, misaligned buffers, block sizes 64..1024, multi-round
sizes, NaN / inf / wide-range inputs, and the _v variants, must equal the model of each
algorithm (lp_model chained with the library's CPU codec, which the host tests hold equal to an
independent numpy model; NaN where the model has NaN); CUDA graph replays on changing inputs;
the knob path (RCCL_LOW_PRECISION_ENABLE=1, no per-call hint) quantizes above its size
threshold and not below; the first hinted call inside a capture, with no staging allocated, is
a clear error.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
import lp_model  # noqa: E402
import numpy as np  # noqa: E402
from gpu_cases import Cases, current_stream, rank_device  # noqa: E402

import rcclx_core as rc  # noqa: E402
from launcher import launch  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
COLLS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
SHARED_OUTPUT = ("all_reduce", "all_gather")  # the same output on every rank
DISTS = ("normal", "wide", "special")
# (count per rank's block, block elems): small odd, partial blocks, many rounds.
SHAPES = ((1, 256), (1000, 256), (4099, 64), (40_001, 1024), (1_500_007, 256))
BIG = 5000  # above this count, in-place and AVG cases run in the slow sweep only


def make_input(dist, rank, count, seed):
    """float32 values of one rank's input: normal, "wide" (magnitudes 1e-6 .. 1e6 and exact
    zeros) or "special" (NaN / inf in some blocks, a huge and a tiny value)."""
    rng = np.random.default_rng(seed * 7919 + rank)
    x = rng.standard_normal(count).astype(np.float32)
    if dist == "wide":
        x *= (10.0 ** rng.uniform(-6, 6, count)).astype(np.float32)
        x[rng.random(count) < 0.05] = 0.0
    elif dist == "special" and count >= 8:
        x[rng.integers(0, count, max(1, count // 5000))] = np.inf
        x[rng.integers(0, count, max(1, count // 7000))] = -np.inf
        x[rng.integers(0, count, max(1, count // 9000))] = np.nan
        x[0] = 3.0e38
        x[-1] = 1.0e-40
    return x


def to_device(a, bf16, device, offset=0):
    """A CUDA tensor holding storage `a` (bfloat16 as uint16), `offset` elements into its
    allocation."""
    src = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if bf16 else torch.from_numpy(a)
    t = torch.empty(a.size + offset, dtype=src.dtype, device=device)[offset:]
    t.copy_(src)
    return t


def to_storage(t, bf16):
    c = t.detach().cpu()
    return c.view(torch.int16).numpy().view(np.uint16) if bf16 else c.numpy()


def model_problem(got, want, bf16) -> str | None:
    """None when the output (a tensor) has the model's bits, NaN wherever the model has NaN
    (bfloat16 compared through its exact float32 widening)."""
    got = lp_model.to_f32(to_storage(got, bf16), bf16)
    return checks.same_bits(got, lp_model.to_f32(want, bf16), nan_equal=True)


def model(coll, inputs, me, bf16, average, block):
    codec = lp_model.Codec(block, rc=rc)
    n = len(inputs)
    if coll == "all_reduce":
        return lp_model.all_reduce(codec, inputs, bf16, average)
    if coll == "reduce_scatter":
        m = inputs[0].size // n
        return lp_model.reduce_scatter(codec, inputs, [m] * n, me, bf16, average)
    if coll == "all_gather":
        return lp_model.all_gather(codec, inputs, bf16)
    return lp_model.all_to_all(codec, inputs, me, bf16)


def run_call(comm, coll, x, out, inplace, me, n, **kw):
    """Runs `coll` on this rank's input x (in place: x is the output, or holds it); returns
    the output tensor."""
    kw["stream"] = current_stream()
    if coll == "all_gather":
        m = x.numel()
        if inplace:
            out[me * m : (me + 1) * m].copy_(x)
            x = out[me * m : (me + 1) * m]
        comm.all_gather(x, out, **kw)
        return out
    if coll == "reduce_scatter":
        m = x.numel() // n
        out = x[me * m : (me + 1) * m] if inplace else out
        comm.reduce_scatter(x, out, **kw)
        return out
    out = x if inplace else out
    if coll == "all_reduce" and inplace:
        comm.all_reduce(x, **kw)
    else:
        getattr(comm, coll)(x, out, **kw)
    return out


def _shape_cases():
    """Every case of one shape: (case number, coll, bf16, inplace, average)."""
    case = 0
    for coll in COLLS:
        for bf16 in (False, True):
            for inplace in (False, True):
                for average in (
                    (False, True) if coll in ("all_reduce", "reduce_scatter") else (False,)
                ):
                    case += 1
                    yield case, coll, bf16, inplace, average


def _selected(inplace, average, part):
    """part "all"; or, for big counts, "plain" (out of place SUM) and "rest"."""
    if part == "all":
        return True
    return (part == "rest") == (inplace or average)


def _shape_rank(ctx, count, block, part):
    dev = rank_device(ctx)
    n, me = ctx.nranks, ctx.rank
    comm = ctx.communicator()
    c = Cases()
    for case, coll, bf16, inplace, average in _shape_cases():
        if not _selected(inplace, average, part):
            continue
        dist = DISTS[case % len(DISTS)]
        offset = case % 2 if bf16 else case % 3  # misaligned sometimes
        total = count if coll == "all_gather" else count * n
        inputs = [lp_model.from_f32(make_input(dist, r, total, case), bf16) for r in range(n)]
        want = model(coll, inputs, me, bf16, average, block)
        dtype = torch.bfloat16 if bf16 else torch.float32
        out = checks.poison(torch.empty(want.size, device=dev, dtype=dtype))
        op = {"op": rc.RedOp.AVG} if average else {}
        label = (
            f"{coll} {'bf16' if bf16 else 'fp32'} n={count} block={block} "
            f"{'in-place' if inplace else 'out-of-place'}{' avg' if average else ''} {dist} "
            f"offset={offset}"
        )
        got = None
        try:
            x = to_device(inputs[me], bf16, dev, offset)
            got = run_call(comm, coll, x, out, inplace, me, n, low_precision=True, **op)
            torch.cuda.synchronize()
            problem = model_problem(got, want, bf16)
        except Exception as e:  # noqa: BLE001 - reported per case
            problem = f"{type(e).__name__}: {e}"
        c.record(label, problem, got if coll in SHARED_OUTPUT and problem is None else None)
    comm.destroy()
    return c.results


def _shape_params():
    params = []
    for count, block in SHAPES:
        name = f"n={count}-block={block}"
        if count <= BIG:
            params.append(pytest.param(count, block, "all", id=name))
        else:
            params.append(pytest.param(count, block, "plain", id=f"{name}-plain"))
            params.append(
                pytest.param(count, block, "rest", id=f"{name}-rest", marks=pytest.mark.slow)
            )
    return params


@pytest.mark.parametrize("count, block, part", _shape_params())
def test_low_precision_bit_exact_against_the_model(count, block, part):
    env = {"RCCLX_LP_BLOCK_ELEMS": block}
    results = launch(_shape_rank, NRANKS, count, block, part, env=env, timeout=240)
    want = sum(_selected(inplace, average, part) for _, _, _, inplace, average in _shape_cases())
    checks.assert_cases(results, expect_cases=want)


def _v_rank(ctx):
    """all_gather_v and reduce_scatter_v with a different count per rank (0 included)."""
    dev = rank_device(ctx)
    n, me = ctx.nranks, ctx.rank
    comm = ctx.communicator()
    codec = lp_model.Codec(256, rc=rc)
    calls = {
        # name: (method, input count of rank r, output count, input values, model)
        "all_gather_v": (
            comm.all_gather_v,
            lambda counts, r: counts[r],
            sum,
            "wide",
            lambda counts, inputs, bf16: lp_model.all_gather(codec, inputs, bf16),
        ),
        "reduce_scatter_v": (
            comm.reduce_scatter_v,
            lambda counts, r: sum(counts),
            lambda counts: counts[me],
            "normal",
            lambda counts, inputs, bf16: lp_model.reduce_scatter(codec, inputs, counts, me, bf16),
        ),
    }
    c = Cases()
    for counts in ([1000 + 777 * r for r in range(n)], [0] + [513] * (n - 1)):
        for bf16 in (False, True):
            for name, (method, in_count, out_count, dist, want_of) in calls.items():
                inputs = [
                    lp_model.from_f32(make_input(dist, r, in_count(counts, r), 5), bf16)
                    for r in range(n)
                ]
                dt = torch.bfloat16 if bf16 else torch.float32
                out = checks.poison(torch.empty(out_count(counts), device=dev, dtype=dt))
                try:
                    x = to_device(inputs[me], bf16, dev)
                    method(x, out, counts, stream=current_stream(), low_precision=True)
                    torch.cuda.synchronize()
                    problem = model_problem(out, want_of(counts, inputs, bf16), bf16)
                except Exception as e:  # noqa: BLE001 - reported per case
                    problem = f"{type(e).__name__}: {e}"
                c.record(f"{name} counts={counts} {'bf16' if bf16 else 'fp32'}", problem)
    comm.destroy()
    return c.results


def test_low_precision_v_variants_with_unequal_counts():
    checks.assert_cases(launch(_v_rank, NRANKS, timeout=120), expect_cases=8)


def _graph_rank(ctx, replays):
    """One LP all_reduce and one LP all_gather captured, replayed on changing inputs."""
    dev = rank_device(ctx)
    n, me = ctx.nranks, ctx.rank
    comm = ctx.communicator()
    count = 300_001
    x, y = torch.empty(count, device=dev), torch.empty(count, device=dev)
    g_in, g_out = torch.empty(count, device=dev), torch.empty(count * n, device=dev)

    def enqueue():
        s = current_stream()
        comm.all_reduce(x, y, stream=s, low_precision=True)
        comm.all_gather(g_in, g_out, stream=s, low_precision=True)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # eager warm-up (allocates the staging), off the capture
        enqueue()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        enqueue()
    c = Cases()
    for k in range(replays):
        inputs = [make_input("normal", r, count, 1000 + k) for r in range(n)]
        x.copy_(torch.from_numpy(inputs[me]))
        g_in.copy_(torch.from_numpy(inputs[me]) * 2)
        checks.poison(y)
        checks.poison(g_out)
        g.replay()
        torch.cuda.synchronize()
        want = model("all_reduce", inputs, me, False, False, 256)
        c.record(f"graph replay {k} all_reduce", model_problem(y, want, False), y)
        want = model("all_gather", [v * 2 for v in inputs], me, False, False, 256)
        c.record(f"graph replay {k} all_gather", model_problem(g_out, want, False), g_out)
    del g
    comm.destroy()
    return c.results


def test_low_precision_graph_replays_on_changing_inputs():
    replays = 10
    results = launch(_graph_rank, NRANKS, replays, timeout=180)
    checks.assert_cases(results, expect_cases=2 * replays)


KNOBS = {"RCCL_LOW_PRECISION_ENABLE": 1, "RCCLX_LP_MIN_BYTES": 200_000}


def _knob_rank(ctx):
    """Low precision enabled by the knobs (staging allocated at creation): a call above
    RCCLX_LP_MIN_BYTES quantizes with no hint, one below stays full precision, and the first
    call can be captured."""
    dev = rank_device(ctx)
    n, me = ctx.nranks, ctx.rank
    comm = ctx.communicator()
    c = Cases()
    inputs = [make_input("normal", r, 70_000, 77) for r in range(n)]
    lp_want = model("all_reduce", inputs, me, False, False, 256)
    ref = inputs[0][:1000].copy()  # the full-precision sum of the first 1000, in rank order
    for v in inputs[1:]:
        ref = (ref + v[:1000]).astype(np.float32)
    x = torch.tensor(inputs[me], device=dev)
    y = checks.poison(torch.empty_like(x))
    comm.all_reduce(x, y, stream=current_stream())  # 280 KB >= 200000: low precision
    torch.cuda.synchronize()
    c.record("above RCCLX_LP_MIN_BYTES: low precision", model_problem(y, lp_want, False), y)
    small = torch.tensor(inputs[me][:1000], device=dev)
    comm.all_reduce(small, stream=current_stream())  # 4 KB < 200000: full precision
    torch.cuda.synchronize()
    c.record("below RCCLX_LP_MIN_BYTES: full precision", checks.same_bits(small.cpu().numpy(), ref))
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            comm.all_reduce(x, y, stream=current_stream())
        checks.poison(y)
        g.replay()
        torch.cuda.synchronize()
        problem = model_problem(y, lp_want, False)
    except Exception as e:  # noqa: BLE001 - reported per case
        problem = f"{type(e).__name__}: {e}"
    c.record("first call captured, staging from creation", problem)
    del g
    comm.destroy()
    return c.results


def test_low_precision_by_knob_above_the_size_threshold():
    checks.assert_cases(launch(_knob_rank, NRANKS, env=KNOBS, timeout=120), expect_cases=3)


def _hint_in_capture_rank(ctx):
    """No knob: the first hinted call comes during a capture, with no staging allocated."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    x = torch.ones(70_000, device=dev)
    y = torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    message = None
    try:
        with torch.cuda.graph(g):
            comm.all_reduce(x, y, stream=current_stream(), low_precision=True)
    except Exception as e:  # noqa: BLE001 - the expected error
        message = f"{type(e).__name__}: {e}"
    torch.cuda.synchronize()
    comm.destroy()
    return message


def test_first_hinted_call_inside_a_capture_is_a_clear_error():
    for r, message in enumerate(v.value for v in launch(_hint_in_capture_rank, NRANKS)):
        assert message is not None, f"rank {r}: the capture succeeded without staging"
        assert "graph capture" in message, f"rank {r}: {message}"
