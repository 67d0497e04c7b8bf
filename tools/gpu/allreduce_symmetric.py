"""GPU allreduce into symmetric buffers (part of allreduce_check.py): outputs in a buffer
from comm.alloc_symmetric or a registered torch tensor (comm.register_symmetric), in place, out
of place and misaligned, with the zero-copy calls counted; every refused registration; the
memory returned by free_symmetric.
"""

from __future__ import annotations

from gpu_cases import (
    digest,
    expandable_tensor,
    invalid_argument_problem,
    make_input,
    raises,
    reduce_and_compare,
    reference,
)
from gpu_common import gpu_count

# Symmetric outputs (comm.alloc_symmetric): (algorithm, tuning, dtype, op, count, mode,
# zero-copy expected). The tuning tree_symmetric_min_bytes=1 puts small counts through
# dda_tree's zero-copy two-shot.
ZERO_COPY_TREE = "tree_symmetric_min_bytes=1"
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


# Registered outputs (comm.register_symmetric over ordinary torch tensors from the caching
# allocator: interior pointers of its segments): (algorithm, tuning, dtype, op, count, mode).
# Every one goes zero-copy.
REGISTERED_CASES = [
    ("dda_tree", ZERO_COPY_TREE, "bfloat16", "SUM", 1, "out"),
    ("dda_tree", ZERO_COPY_TREE, "float32", "AVG", 1001, "misaligned"),
    ("dda_tree", ZERO_COPY_TREE, "int32", "MAX", 65537, "inplace"),
    ("dda_tree", "", "bfloat16", "SUM", 4_194_304, "inplace"),  # 8 MiB
    ("dda_tree", "", "float16", "SUM", 8_388_608, "out"),  # 16 MiB
    ("dda_large", "", "float32", "SUM", 9_000_001, "inplace"),  # several rounds
]


# Registered outputs at a different place modulo 16 bytes on odd ranks than on even ones: a
# rank storing 16-byte units into a peer's output would fault, so every rank stays staged
# (zero-copy calls expected: none).
SKEWED_CASES = [
    ("dda_tree", ZERO_COPY_TREE, "bfloat16", "SUM", 65537, "out"),
    ("dda_tree", "", "bfloat16", "SUM", 4_194_304, "out"),  # 8 MiB
    ("dda_large", "", "float32", "MAX", 9_000_001, "inplace"),
]


def symmetric_rank(info):
    """all_reduce into outputs in a symmetric buffer (the all-gather stores into the peers'
    outputs, nothing copied out of staging): in place, out of place and 16-byte-misaligned, at
    the same nonzero offset on every rank, checked as the correctness sweep checks; the calls
    that went zero-copy counted; registered torch tensors the same way; errors for a foreign
    pointer, mismatched sizes and each kind of memory registration refuses; the memory
    returned by free_symmetric."""
    import torch

    import rcclx_core as rc

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    comm = info.communicator()
    n = info.nranks
    cases = []
    offset = 4096  # bytes into the buffer, the same on every rank
    buf = comm.alloc_symmetric(offset + 82 * (1 << 20))

    def record(label, problem, out=None):
        hashed = digest(out) if problem is None and out is not None else None
        cases.append({"case": label, "error": problem, "digest": hashed})

    def check(label, case, seed, whole_of, want):
        """One all_reduce into an output taken from whole_of(dtype, elements), checked as the
        correctness sweep checks, with `want` (0 or 1) zero-copy calls counted."""
        algo, tuning, name, op, count, mode = case
        comm.set_gpu_tuning(tuning)
        dtype = getattr(torch, name)
        extra = 1 if mode == "misaligned" else 0
        x = make_input(torch, dtype, count + extra, op, seed, info.rank, dev)
        ref = reference(torch, dtype, count + extra, op, seed, n, dev)
        whole = whole_of(dtype, count + extra)
        if mode == "misaligned":
            x, ref, out = x[1:], ref[1:], whole[1:]
        else:
            out = whole
        before = comm.symmetric_calls
        problem = reduce_and_compare(torch, rc, comm, algo, name, op, x, out, ref, mode, info.rank)
        counted = comm.symmetric_calls - before
        if problem is None and counted != want:
            problem = f"{counted} zero-copy calls counted, expected {want}"
        record(f"{label} {algo} {name} {op} n={count} {mode}", problem, out)

    def in_buffer(dtype, elements):
        return buf.as_tensor(dtype)[offset // dtype.itemsize :][:elements]

    for i, (*case, zero_copy) in enumerate(SYMMETRIC_CASES):
        check("symmetric", case, 90_000 + i, in_buffer, int(zero_copy))
    for i, case in enumerate(REGISTERED_CASES):
        registered = []

        def registered_tensor(dtype, elements, registered=registered):
            # An ordinary tensor from the caching allocator, registered whole.
            t = torch.empty(elements, dtype=dtype, device=dev)
            registered.append(comm.register_symmetric(t))
            return t

        check("registered", case, 95_000 + i, registered_tensor, 1)
        torch.cuda.synchronize()
        registered[0].deregister()
    for i, case in enumerate(SKEWED_CASES):
        skewed = []

        def skewed_tensor(dtype, elements, skewed=skewed):
            # Odd ranks register a view one element in, so the outputs differ modulo 16 bytes.
            t = torch.empty(elements + 1, dtype=dtype, device=dev)[info.rank % 2 :][:elements]
            skewed.append(comm.register_symmetric(t))
            return t

        check("registered, skewed by rank", case, 97_000 + i, skewed_tensor, 0)
        torch.cuda.synchronize()
        skewed[0].deregister()
    comm.set_gpu_tuning("")

    def expect(label, fn, *needles):
        record(label, invalid_argument_problem(torch, rc, fn, needles))

    plain = torch.zeros(4096, device=dev)
    held = comm.register_symmetric(plain)
    expect(
        "registered: the same memory twice",
        lambda: comm.register_symmetric(plain[1024:]),
        "overlap the symmetric buffer",
    )
    held.deregister()
    expect(
        "registered: sizes that differ by rank",
        lambda: comm.register_symmetric(plain[: 1024 * (info.rank + 1)]),
        "every rank must pass the same size",
    )
    expect(
        "registered: host memory",
        lambda: comm.register_symmetric(torch.zeros(4096).pin_memory()),
        "is not device memory",
    )
    expect(
        "registered: zero bytes",
        lambda: comm.register_symmetric(plain[:0]),
        "nbytes 0 must be positive",
    )
    if gpu_count() > 1:
        other = torch.device("cuda", (info.device + 1) % gpu_count())
        expect(
            "registered: memory of another GPU",
            lambda: comm.register_symmetric(torch.zeros(4096, device=other)),
            "is memory of GPU",
            "not of GPU",
        )
    record(
        "registered: expandable-segment memory (no IPC handle)",
        _expandable_problem(torch, rc, comm, dev),
    )
    record(
        "registered: deregister of an allocated buffer is refused",
        None if raises(lambda: buf.deregister(), rc.InvalidUsageError) else "no error",
    )

    foreign = torch.empty(16, device=dev)
    expect(
        "symmetric: free_symmetric of a foreign pointer",
        lambda: comm._free_symmetric(foreign.data_ptr()),
        "is not a symmetric buffer of this communicator",
    )
    expect(
        "symmetric: alloc_symmetric with sizes that differ by rank",
        lambda: comm.alloc_symmetric(4096 * (info.rank + 1)),
        "every rank must pass the same size",
    )
    # Allocated and freed again: the memory comes back. A peer closes its mapping of my buffer
    # in its own free; mine returns before that, and the GPU holds the memory until every
    # mapping is closed: every reading comes after a barrier.
    torch.cuda.synchronize()
    buf.free()
    comm.barrier()
    before = torch.cuda.mem_get_info()[0]
    for _ in range(3):
        extra_buf = comm.alloc_symmetric(64 << 20)
        extra_buf.free()
    comm.barrier()
    lost = before - torch.cuda.mem_get_info()[0]
    record(
        "symmetric: device memory back after 3 alloc / free rounds",
        None if abs(lost) < (4 << 20) or n > gpu_count() else f"{lost} bytes not returned",
    )
    comm.destroy()
    return cases


def _expandable_problem(torch, rc, comm, dev):
    """None when registering memory of one of torch's expandable segments (cuMemCreate memory,
    which has no legacy IPC handle) raises InvalidArgumentError saying so, else what happened."""
    t = expandable_tensor(torch, dev)
    if t is None:
        return "torch did not put the tensor in an expandable segment: the case did not run"
    return invalid_argument_problem(
        torch, rc, lambda: comm.register_symmetric(t), ("no IPC handle", "expandable segments")
    )
