"""all_reduce into symmetric buffers on GPU, 2 ranks: outputs in a buffer from
comm.alloc_symmetric, in registered torch tensors (comm.register_symmetric) and in registered
tensors at a different place modulo 16 bytes on each rank, in place, out of place and
misaligned, checked as the all_reduce sweep checks them, with the calls that went zero-copy
(the all-gather storing into the peers' outputs) counted; every registration the library
refuses, with its message; the memory free_symmetric returns.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
from gpu_cases import (  # noqa: E402
    Cases,
    all_reduce_problem,
    all_reduce_reference,
    error_problem,
    expandable_tensor,
    invalid_argument_problem,
    make_input,
    rank_device,
    require_gpus_per_rank,
)

import rcclx_core as rc  # noqa: E402
from launcher import gpu_count, launch, values  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
ZERO_COPY_TREE = "tree_symmetric_min_bytes=1"  # small counts through the zero-copy two-shot
OFFSET = 4096  # bytes into the symmetric buffer, the same on every rank
# Outputs in a symmetric buffer: (algorithm, tuning, dtype, op, count, mode, zero-copy).
SYMMETRIC_CASES = [
    (algo, tuning, name, op, count, mode, True)
    for algo, tuning in (("dda_tree", ZERO_COPY_TREE), ("dda_large", ""))
    for name, op in (
        ("bfloat16", "SUM"),
        ("bfloat16", "PREMUL_SUM"),
        ("float16", "MIN"),
        ("float32", "AVG"),
        ("float64", "SUM"),
        ("int32", "SUM"),
        ("int64", "BXOR"),
        ("uint8", "BAND"),
    )
    for count, mode in ((1, "out"), (1001, "misaligned"), (65537, "inplace"), (300_001, "out"))
] + [
    ("dda_tree", "", "bfloat16", "SUM", 4_194_304, "inplace", True),  # 8 MiB: zero-copy
    ("dda_tree", "", "bfloat16", "SUM", 1_048_576, "out", False),  # 2 MiB: staged lines
    ("dda_tree", "", "float16", "MAX", 8_388_607, "misaligned", True),  # 16 MiB
    ("auto", "", "bfloat16", "SUM", 8_388_608, "out", True),
    ("dda_large", "", "float32", "SUM", 9_000_001, "out", True),  # several rounds
    ("dda_large", "", "bfloat16", "MAX", 20_000_003, "inplace", True),
]
SYMMETRIC_BYTES = OFFSET + 82 * (1 << 20)  # the largest case, misaligned, fits
# Registered outputs (ordinary tensors of the caching allocator, interior pointers of its
# segments): every one goes zero-copy.
REGISTERED_CASES = [
    ("dda_tree", ZERO_COPY_TREE, "bfloat16", "SUM", 1, "out", True),
    ("dda_tree", ZERO_COPY_TREE, "float32", "AVG", 1001, "misaligned", True),
    ("dda_tree", ZERO_COPY_TREE, "int32", "MAX", 65537, "inplace", True),
    ("dda_tree", "", "bfloat16", "SUM", 4_194_304, "inplace", True),  # 8 MiB
    ("dda_tree", "", "float16", "SUM", 8_388_608, "out", True),  # 16 MiB
    ("dda_large", "", "float32", "SUM", 9_000_001, "inplace", True),  # several rounds
]
# Registered outputs one element in on odd ranks, so they differ modulo 16 bytes: a rank
# storing 16-byte units into a peer's output would fault, so every rank stays staged.
SKEWED_CASES = [
    ("dda_tree", ZERO_COPY_TREE, "bfloat16", "SUM", 65537, "out", False),
    ("dda_tree", "", "bfloat16", "SUM", 4_194_304, "out", False),  # 8 MiB
    ("dda_large", "", "float32", "MAX", 9_000_001, "inplace", False),
]
GROUPS = {"symmetric": SYMMETRIC_CASES, "registered": REGISTERED_CASES, "skewed": SKEWED_CASES}


def _output_of(group, comm, buf, rank, dev):
    """What the outputs of `group` are taken from: whole(dtype, elements) -> tensor, and a
    release() for after the case."""
    held = []

    def whole(dtype, elements):
        if group == "symmetric":
            return buf.as_tensor(dtype)[OFFSET // dtype.itemsize :][:elements]
        if group == "registered":  # an ordinary tensor, registered whole
            t = torch.empty(elements, dtype=dtype, device=dev)
        else:  # odd ranks register a view one element in
            t = torch.empty(elements + 1, dtype=dtype, device=dev)[rank % 2 :][:elements]
        held.append(comm.register_symmetric(t))
        return t

    def release():
        torch.cuda.synchronize()
        while held:
            held.pop().deregister()

    return whole, release


def _symmetric_outputs_rank(ctx, group):
    """The cases of `group`, each checked against the float64 reference and its zero-copy
    calls counted."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    buf = comm.alloc_symmetric(SYMMETRIC_BYTES) if group == "symmetric" else None
    whole, release = _output_of(group, comm, buf, ctx.rank, dev)
    c = Cases()
    for i, (algo, tuning, name, op, count, mode, zero_copy) in enumerate(GROUPS[group]):
        rc._testing.set_gpu_tuning(comm, tuning)
        dtype, seed = getattr(torch, name), 90_000 + i
        extra = 1 if mode == "misaligned" else 0
        x = make_input(dtype, count + extra, op, seed, ctx.rank, dev)
        ref = all_reduce_reference(dtype, count + extra, op, seed, ctx.nranks, dev)
        out = whole(dtype, count + extra)
        if mode == "misaligned":
            x, ref, out = x[1:], ref[1:], out[1:]
        before = rc._testing.symmetric_calls(comm)
        problem = all_reduce_problem(comm, algo, op, x, out, ref, mode, ctx.rank)
        counted = rc._testing.symmetric_calls(comm) - before
        if problem is None and counted != int(zero_copy):
            problem = f"{counted} zero-copy calls counted, expected {int(zero_copy)}"
        c.record(f"{group} {algo} {tuning or '-'} {name} {op} n={count} {mode}", problem, out)
        release()
    rc._testing.set_gpu_tuning(comm, "")
    if buf is not None:
        buf.free()
    comm.destroy()
    return c.results


@pytest.mark.parametrize("group", list(GROUPS))
def test_all_reduce_into_symmetric_outputs(group):
    results = launch(_symmetric_outputs_rank, NRANKS, group, timeout=240)
    checks.assert_cases(results, expect_cases=len(GROUPS[group]))


def _refusals_rank(ctx):
    """Every registration and symmetric call the library refuses fails with a message naming
    why."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    buf = comm.alloc_symmetric(1 << 20)
    c = Cases()
    plain = torch.zeros(4096, device=dev)
    held = comm.register_symmetric(plain)
    c.record(
        "the same memory twice",
        invalid_argument_problem(
            lambda: comm.register_symmetric(plain[1024:]), "overlap the symmetric buffer"
        ),
    )
    held.deregister()
    c.record(
        "sizes that differ by rank",
        invalid_argument_problem(
            lambda: comm.register_symmetric(plain[: 1024 * (ctx.rank + 1)]),
            "every rank must pass the same size",
        ),
    )
    c.record(
        "host memory",
        invalid_argument_problem(
            lambda: comm.register_symmetric(torch.zeros(4096).pin_memory()), "is not device memory"
        ),
    )
    c.record(
        "zero bytes",
        invalid_argument_problem(
            lambda: comm.register_symmetric(plain[:0]), "nbytes 0 must be positive"
        ),
    )
    t = expandable_tensor(dev)
    c.record(
        "expandable-segment memory (no IPC handle)",
        "torch did not put the tensor in an expandable segment: the case did not run"
        if t is None
        else invalid_argument_problem(
            lambda: comm.register_symmetric(t), "no IPC handle", "expandable segments"
        ),
    )
    c.record(
        "deregister of an allocated buffer",
        error_problem(lambda: buf.deregister(), rc.InvalidUsageError, ()),
    )
    foreign = torch.empty(16, device=dev)
    c.record(
        "free_symmetric of a foreign pointer",
        invalid_argument_problem(
            lambda: comm._free_symmetric(foreign.data_ptr()),
            "is not a symmetric buffer of this communicator",
        ),
    )
    c.record(
        "alloc_symmetric with sizes that differ by rank",
        invalid_argument_problem(
            lambda: comm.alloc_symmetric(4096 * (ctx.rank + 1)),
            "every rank must pass the same size",
        ),
    )
    buf.free()
    comm.destroy()
    return c.results


def test_symmetric_refusals_name_the_reason():
    checks.assert_cases(launch(_refusals_rank, NRANKS, timeout=120), expect_cases=8)


def _other_gpu_rank(ctx):
    dev = rank_device(ctx)
    comm = ctx.communicator()
    other = torch.device("cuda", (dev.index + 1) % gpu_count())
    problem = invalid_argument_problem(
        lambda: comm.register_symmetric(torch.zeros(4096, device=other)),
        "is memory of GPU",
        "not of GPU",
    )
    comm.destroy()
    return {"memory of another GPU": ("", problem)}


def test_registering_memory_of_another_gpu_is_refused():
    if gpu_count() < 2:
        pytest.skip("needs a second GPU on the machine to hold the foreign memory")
    checks.assert_cases(launch(_other_gpu_rank, NRANKS, timeout=120), expect_cases=1)


def _free_returns_memory_rank(ctx, rounds):
    """Device bytes lost over `rounds` alloc / free rounds of a 64 MiB symmetric buffer."""
    rank_device(ctx)
    comm = ctx.communicator()
    # A first round maps what later rounds reuse. A peer closes its mapping of my buffer in its
    # own free; mine returns before that, and the GPU holds the memory until every mapping is
    # closed: every reading comes after a barrier.
    comm.alloc_symmetric(64 << 20).free()
    comm.barrier()
    torch.cuda.synchronize()
    before = torch.cuda.mem_get_info()[0]
    for _ in range(rounds):
        comm.alloc_symmetric(64 << 20).free()
    comm.barrier()
    lost = before - torch.cuda.mem_get_info()[0]
    comm.destroy()
    return lost


def test_free_symmetric_returns_the_memory():
    require_gpus_per_rank(NRANKS)  # free memory is read per GPU, not per process
    lost = values(launch(_free_returns_memory_rank, NRANKS, 3, timeout=120))
    assert all(abs(d) < (4 << 20) for d in lost), f"device bytes not returned, by rank: {lost}"
