"""all_reduce on GPU buffers, 2 ranks (sharing a GPU where the machine has one): every algorithm
and kernel variant over dtypes, operators (PREMUL_SUM with a scalar per rank, BAND / BOR / BXOR
on integers of every width) and odd counts, misaligned and in place, against a float64
reference (two ranks: exact), with bitwise-identical outputs on every rank; the main algorithms
on three ranks too (the n-rank paths, floats within their rounding bound); messages of several
rounds through the staging; the two-shot kernel on line-sized messages; clear errors for what
GPU reductions refuse; a one-rank communicator (PREMUL_SUM still scales); no device memory left
after destroy; a peer that never joins becomes an error within the timeout.

Outputs are poisoned first, so an unwritten element fails.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
from gpu_cases import (  # noqa: E402
    BITWISE,
    STALL_TIMEOUT_MS,
    Cases,
    all_reduce_problem,
    all_reduce_reference,
    assert_stalled_error,
    current_stream,
    invalid_argument_problem,
    make_input,
    premul_input,
    premul_scalar,
    rank_device,
    require_gpus_per_rank,
    stalled_call,
)

import rcclx_core as rc  # noqa: E402
from launcher import launch, values  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
ALGOS = ("dda_flat", "dda_tree", "dda_large", "auto")
STAGGERED_TWO_SHOT = "tree_lines_max_bytes=0,tree_min_block_units=16,tree_stagger_bytes=1"
ZERO_COPY_TREE = "tree_symmetric_min_bytes=1"
# label: (algorithm, tuning). dda_flat runs LL lines below flat_lines_min_bytes and 128-byte
# lines above; the tuned flat variants put every count through one of them. With 256 lines per
# warp, a line kernel runs few warps, each through many batches. The staggered two-shot runs
# the two-shot kernel at every count over many blocks, each block after the first starting once
# block 0 has issued its reduce-scatter (the staggered start at its narrowest).
MAIN_VARIANTS = {algo: (algo, "") for algo in ALGOS}
TUNED_VARIANTS = {
    "dda_flat_LL": ("dda_flat", "flat_lines_min_bytes=1073741824"),
    "dda_flat_lines": ("dda_flat", "flat_lines_min_bytes=1"),
    "dda_flat_lines_few_warps": ("dda_flat", "flat_lines_min_bytes=1,lines_min_warp_lines=256"),
    "dda_tree_few_warps": ("dda_tree", "lines_min_warp_lines=256"),
    "dda_tree_two_shot_staggered": ("dda_tree", STAGGERED_TWO_SHOT),
}
VARIANTS = {**MAIN_VARIANTS, **TUNED_VARIANTS}
# (dtype name, ops); ops by name. (torch has too few operators on uint32 / uint64 tensors to
# check them this way.)
TYPE_OPS = [
    ("bfloat16", ("SUM", "MAX", "AVG", "PREMUL_SUM")),
    ("float16", ("SUM", "MIN")),
    ("float32", ("SUM", "PROD", "AVG", "PREMUL_SUM")),
    ("float64", ("SUM",)),
    ("int32", ("SUM", "MAX", "AVG", "BXOR")),
    ("int8", ("SUM", "BOR")),
    ("uint8", ("MAX",) + BITWISE),
    ("int64", ("SUM", "MIN") + BITWISE),
]
COUNTS = (1, 3, 1001, 65537, (1 << 20) + 7)
# The tuned variants run these counts by default, the rest of COUNTS in the slow sweep.
TUNED_COUNTS = (1, 1001, (1 << 20) + 7)
REST_COUNTS = tuple(c for c in COUNTS if c not in TUNED_COUNTS)
# Views 16-byte misaligned (the element-wise path): SUM of three widths, then the bitwise
# operators on int64 / uint8 / int32 views 8, 1 and 4 bytes off, and PREMUL_SUM, which scales
# on the element-wise path too.
MISALIGNED = [("bfloat16", "SUM"), ("float32", "SUM"), ("int8", "SUM")] + [
    ("int64", "BXOR"),
    ("uint8", "BAND"),
    ("int32", "BOR"),
    ("bfloat16", "PREMUL_SUM"),
    ("float32", "PREMUL_SUM"),
]
MISALIGNED_COUNTS = (5, 4099)
IN_PLACE = [("bfloat16", "SUM"), ("float32", "PREMUL_SUM"), ("int64", "BAND")]
IN_PLACE_COUNT = 70001


class AllReduceCases(Cases):
    """A rank's all_reduce cases, each on fresh seeded inputs (the same seeds on every rank)."""

    def __init__(self, ctx, comm, dev):
        super().__init__()
        self.ctx, self.comm, self.dev = ctx, comm, dev
        self.seed = 0

    def check(self, label, algo, name, op, count, mode="out"):
        """mode: "out" (out of place), "inplace", or "misaligned" (views one element into
        their allocations)."""
        self.seed += 1
        dtype = getattr(torch, name)
        extra = 1 if mode == "misaligned" else 0
        ctx, n = self.ctx, self.ctx.nranks
        x = make_input(dtype, count + extra, op, self.seed, ctx.rank, self.dev)
        ref = all_reduce_reference(dtype, count + extra, op, self.seed, n, self.dev)
        if mode == "misaligned":
            x, ref = x[1:], ref[1:]
            out = torch.empty(count + 1, dtype=dtype, device=self.dev)[1:]
        else:
            out = torch.empty_like(x)
        problem = all_reduce_problem(self.comm, algo, op, x, out, ref, mode, ctx.rank)
        self.record(label, problem, out)


def _sweep_rank(ctx, variant, counts, with_views):
    """Every dtype x op of TYPE_OPS at `counts` through one variant; with_views: also the
    misaligned and in-place cases."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    algo, tuning = VARIANTS[variant]
    rc._testing.set_gpu_tuning(comm, tuning)
    c = AllReduceCases(ctx, comm, dev)
    for name, ops in TYPE_OPS:
        for op in ops:
            for count in counts:
                c.check(f"{variant} {name} {op} n={count}", algo, name, op, count)
    if with_views:
        for name, op in MISALIGNED:
            for count in MISALIGNED_COUNTS:
                label = f"{variant} {name} {op} n={count} misaligned"
                c.check(label, algo, name, op, count, "misaligned")
        for name, op in IN_PLACE:
            label = f"{variant} {name} {op} n={IN_PLACE_COUNT} in-place"
            c.check(label, algo, name, op, IN_PLACE_COUNT, "inplace")
    comm.destroy()
    return c.results


def _sweep_params():
    params = [pytest.param(v, COUNTS, True, id=v) for v in MAIN_VARIANTS]
    params += [pytest.param(v, TUNED_COUNTS, True, id=v) for v in TUNED_VARIANTS]
    params += [
        pytest.param(v, REST_COUNTS, False, id=f"{v}-more_counts", marks=pytest.mark.slow)
        for v in TUNED_VARIANTS
    ]
    return params


@pytest.mark.parametrize("variant, counts, with_views", _sweep_params())
def test_all_reduce_sweep(variant, counts, with_views):
    results = launch(_sweep_rank, NRANKS, variant, counts, with_views, timeout=240)
    ops = sum(len(ops) for _, ops in TYPE_OPS)
    views = len(MISALIGNED) * len(MISALIGNED_COUNTS) + len(IN_PLACE) if with_views else 0
    checks.assert_cases(results, expect_cases=ops * len(counts) + views)


# Three ranks: every kernel's n-rank paths (ranks beyond a pair, floats within the bound of
# several roundings instead of bit-exact), on however many GPUs the machine has.
THREE_RANK_COUNTS = (1, 1001, 65537)


@pytest.mark.parametrize("variant", list(MAIN_VARIANTS))
def test_all_reduce_sweep_on_three_ranks(variant):
    results = launch(_sweep_rank, 3, variant, THREE_RANK_COUNTS, False, timeout=240)
    ops = sum(len(ops) for _, ops in TYPE_OPS)
    checks.assert_cases(results, expect_cases=ops * len(THREE_RANK_COUNTS))


# Several rounds through the staging (36 MB of fp32 > RCCLX_GPU_STAGING_BYTES / 2).
ROUNDS = [
    ("float32", "SUM", 9_000_001, "out"),
    ("bfloat16", "MAX", 20_000_003, "inplace"),
    ("bfloat16", "PREMUL_SUM", 20_000_003, "out"),
    ("int64", "BXOR", 9_000_001, "out"),
]
# dda_tree's two-shot kernel on messages the line protocol would otherwise take.
TWO_SHOT = [
    ("bfloat16", "SUM", 65537, "out"),
    ("float32", "AVG", 1001, "misaligned"),
    ("int64", "BXOR", 70001, "inplace"),
]


def _listed_rank(ctx, algo, tuning, listed):
    """The cases of `listed` [(dtype, op, count, mode)] through one algorithm and tuning."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    rc._testing.set_gpu_tuning(comm, tuning)
    c = AllReduceCases(ctx, comm, dev)
    for name, op, count, mode in listed:
        c.check(
            f"{algo} {tuning or 'default'} {name} {op} n={count} {mode}",
            algo,
            name,
            op,
            count,
            mode,
        )
    comm.destroy()
    return c.results


@pytest.mark.parametrize("algo", ["dda_tree", "dda_large"])
def test_all_reduce_several_rounds_through_staging(algo):
    results = launch(_listed_rank, NRANKS, algo, "", ROUNDS, timeout=240)
    checks.assert_cases(results, expect_cases=len(ROUNDS))


def test_two_shot_kernel_on_line_sized_messages():
    results = launch(_listed_rank, NRANKS, "dda_tree", "tree_lines_max_bytes=0", TWO_SHOT)
    checks.assert_cases(results, expect_cases=len(TWO_SHOT))


def _unsupported_rank(ctx):
    """What GPU reductions refuse fails on the caller's thread with a message naming it."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    c = Cases()
    fp8 = torch.zeros(64, dtype=torch.uint8, device=dev)
    c.record(
        "all_reduce float8_e4m3",
        invalid_argument_problem(
            lambda: comm.all_reduce(fp8, dtype=rc.DataType.FLOAT8_E4M3, stream=current_stream()),
            "float8_e4m3 is not supported in reductions on GPU buffers",
        ),
    )
    ints = torch.ones(64, dtype=torch.int32, device=dev)
    c.record(
        "all_reduce PREMUL_SUM int32",
        invalid_argument_problem(
            lambda: comm.all_reduce(
                ints, op=rc.RedOp.PREMUL_SUM, scalar=2.0, stream=current_stream()
            ),
            "premul_sum on GPU buffers needs a floating datatype, not int32",
        ),
    )
    comm.destroy()
    return c.results


def test_unsupported_gpu_reductions_are_clear_errors():
    checks.assert_cases(launch(_unsupported_rank, NRANKS), expect_cases=2)


ONE_RANK_CASES = [
    ("float32", "PREMUL_SUM", 1001),
    ("bfloat16", "PREMUL_SUM", 300_001),
    ("float64", "PREMUL_SUM", 3),
    ("int64", "BXOR", 1001),
]


def _one_rank(ctx):
    """A communicator of one rank: PREMUL_SUM still scales (by a kernel, not a copy) and the
    bitwise operators return the input, for every algorithm; compared bit for bit."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    c = Cases()
    for algo in ALGOS:
        for name, op, count in ONE_RANK_CASES:
            x = make_input(getattr(torch, name), count, op, 7, 0, dev)
            out = checks.poison(torch.empty_like(x))
            kw = {"scalar": premul_scalar(1)} if op == "PREMUL_SUM" else {}
            try:
                rop = getattr(rc.RedOp, op)
                comm.all_reduce(x, out, op=rop, algo=algo, stream=current_stream(), **kw)
                torch.cuda.synchronize()
                want = x if op in BITWISE else premul_input(x, 1)
                problem = checks.same_bits(out, want)
            except Exception as e:  # noqa: BLE001 - reported per case
                problem = f"{type(e).__name__}: {e}"
            c.record(f"one rank {algo} {name} {op} n={count}", problem)
    comm.destroy()
    return c.results


def test_one_rank_premul_sum_scales_and_bitwise_ops_copy():
    checks.assert_cases(launch(_one_rank, 1), expect_cases=len(ALGOS) * len(ONE_RANK_CASES))


def _leak_rank(ctx, rounds):
    """Device bytes lost over `rounds` split / use / destroy cycles of a communicator."""
    rank_device(ctx)
    comm = ctx.communicator()

    def cycle():
        sub = comm.split(0)  # a new communicator on the same GPU: its own staging
        x = torch.ones(1000, device="cuda")
        sub.all_reduce(x, stream=current_stream())
        torch.cuda.synchronize()
        assert x[0].item() == ctx.nranks, x[0].item()
        sub.destroy()

    # One round first: the first launches load the kernels and reserve their local memory
    # (the driver keeps both); only what later rounds lose is a leak.
    cycle()
    torch.cuda.synchronize()
    before = torch.cuda.mem_get_info()[0]
    for _ in range(rounds):
        cycle()
    torch.cuda.synchronize()
    after = torch.cuda.mem_get_info()[0]
    comm.destroy()
    return before - after


def test_no_device_memory_left_after_destroy():
    require_gpus_per_rank(NRANKS)  # free memory is read per GPU, not per process
    lost = values(launch(_leak_rank, NRANKS, 3, timeout=120))
    assert all(abs(d) < (4 << 20) for d in lost), f"device bytes not returned, by rank: {lost}"


def _stalled_peer_rank(ctx, algo, tuning, symmetric, capture):
    """Rank 0 calls all_reduce, rank 1 never does. symmetric: in place on a symmetric buffer
    (both ranks allocate it first). capture: the call is captured into a CUDA graph, where
    mapping its output (8 MiB) waits for the peer."""
    dev = rank_device(ctx)
    torch.empty(1, device=dev)  # the CUDA context exists before the communicator's clock runs
    ctx.barrier("contexts")
    comm = ctx.communicator()
    rc._testing.set_gpu_tuning(comm, tuning)
    buf = comm.alloc_symmetric(4096 * 4) if symmetric else None
    if capture:
        x = torch.ones(2 << 20, device=dev)
    else:
        x = buf.as_tensor(torch.float32) if symmetric else torch.ones(4096, device=dev)

    def call():
        if capture:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                comm.all_reduce(x, algo=algo, stream=current_stream())
            g.replay()
        else:
            comm.all_reduce(x, algo=algo, stream=current_stream())

    return stalled_call(ctx, comm, call)


@pytest.mark.parametrize(
    "algo, tuning, symmetric, capture",
    [
        pytest.param("dda_flat", "", False, False, id="dda_flat"),
        pytest.param("dda_flat", "flat_lines_min_bytes=1", False, False, id="dda_flat_lines"),
        pytest.param("dda_tree", "", False, False, id="dda_tree"),
        pytest.param("dda_tree", ZERO_COPY_TREE, True, False, id="dda_tree_zero_copy"),
        pytest.param("dda_tree", STAGGERED_TWO_SHOT, False, False, id="dda_tree_two_shot"),
        pytest.param("dda_tree", "", False, True, id="dda_tree_captured"),
    ],
)
def test_stalled_peer_is_an_error_not_a_hang(algo, tuning, symmetric, capture):
    env = {"RCCLX_TIMEOUT_MS": STALL_TIMEOUT_MS}
    outcome = launch(_stalled_peer_rank, NRANKS, algo, tuning, symmetric, capture, env=env)[0]
    assert_stalled_error(outcome.value, f"all_reduce {algo} ({tuning or 'default tuning'})")
