"""GPU allreduce under CUDA graph capture (part of allreduce_check.py): one graph holding every
algorithm, replayed on fresh inputs with each replay checked; with graph registration
(RCCLX_GPU_GRAPH_REGISTER, on by default) and without it. Outputs are ordinary tensors, a
symmetric buffer, a tensor one element in on odd ranks (the outputs then differ modulo 16
bytes, so the call must stay staged) and a tensor in one of torch's expandable segments (no IPC
handle: staged). The calls that went zero-copy are counted at capture, and the mappings must be
gone once the graph is.
"""

from __future__ import annotations

import os
import time

from gpu_cases import compare, digest, expandable_tensor, make_input, poison, reference

# (algorithm, dtype, count, output): "plain" a tensor of its own, "symmetric" a slice of a
# symmetric buffer, "skewed" a plain tensor one element in on odd ranks, "expandable" a tensor
# in an expandable segment.
PLAN = [
    ("dda_flat", "bfloat16", 1001, "plain"),
    ("dda_tree", "float32", 65537, "plain"),
    ("dda_large", "bfloat16", 3_000_001, "plain"),  # registered when captured
    ("auto", "float32", 4097, "plain"),
    ("dda_flat", "float32", 300_000, "plain"),  # 128-byte lines
    ("dda_tree", "bfloat16", 2_000_001, "plain"),  # lines: not registered
    ("dda_tree", "bfloat16", 4_194_307, "plain"),  # 8 MiB + 6 bytes: registered when captured
    ("dda_large", "float32", 2_000_003, "skewed"),
    ("dda_tree", "float16", 4_194_304, "expandable"),
    ("dda_tree", "bfloat16", 4_194_305, "symmetric"),
    ("dda_large", "float32", 3_000_001, "symmetric"),
]


def _zero_copy(algo, dtype_bytes, count, output, register):
    """Whether the captured call should store straight into the peers' outputs."""
    pays = algo == "dda_large" or (algo == "dda_tree" and count * dtype_bytes >= 6 << 20)
    if output == "symmetric":
        return pays
    return pays and register and output == "plain"


def graph_rank(info, replays, register):
    """One graph holding every algorithm, replayed on fresh inputs; each replay checked."""
    os.environ["RCCLX_GPU_GRAPH_REGISTER"] = "1" if register else "0"
    import torch

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    comm = info.communicator()
    n = info.nranks
    mode = "registered" if register else "staged"
    dtypes = [getattr(torch, t) for _, t, _, _ in PLAN]
    ins = [torch.empty(c, dtype=d, device=dev) for (_, _, c, _), d in zip(PLAN, dtypes)]
    symmetric = [x for x, (*_, o) in zip(ins, PLAN) if o == "symmetric"]
    sym = comm.alloc_symmetric(sum(x.nbytes + 256 for x in symmetric))
    outs, at = [], 0
    for x, d, (_, _, c, output) in zip(ins, dtypes, PLAN):
        if output == "symmetric":
            outs.append(sym.as_tensor(torch.uint8)[at : at + x.nbytes].view(d))
            at += (x.nbytes + 255) // 256 * 256
        elif output == "skewed":
            outs.append(torch.empty(c + 1, dtype=d, device=dev)[info.rank % 2 :][:c])
        elif output == "expandable":
            segment = expandable_tensor(torch, dev)
            assert segment is not None, "torch did not put a tensor in an expandable segment"
            outs.append(segment[: c * d.itemsize].view(d))
        else:
            outs.append(torch.empty_like(x))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # eager warm-up, off the capture
        for (algo, *_), x, o in zip(PLAN, ins, outs):
            x.normal_()
            comm.all_reduce(x, o, algo=algo, stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    results = []

    def record(label, problem, out=None):
        hashed = digest(out) if problem is None and out is not None else None
        results.append({"case": f"graph ({mode}) {label}", "error": problem, "digest": hashed})

    g = torch.cuda.CUDAGraph()
    before = comm.symmetric_calls
    with torch.cuda.graph(g):
        for (algo, *_), x, o in zip(PLAN, ins, outs):
            comm.all_reduce(x, o, algo=algo, stream=torch.cuda.current_stream().cuda_stream)
    counted = comm.symmetric_calls - before
    want = sum(_zero_copy(a, d.itemsize, c, o, register) for (a, _, c, o), d in zip(PLAN, dtypes))
    record(
        "zero-copy calls counted at capture",
        None if counted == want else f"{counted} counted, expected {want}",
    )
    held = comm.graph_registrations
    want_held = sum(
        _zero_copy(a, d.itemsize, c, o, register) and o != "symmetric"
        for (a, _, c, o), d in zip(PLAN, dtypes)
    )
    record(
        "outputs mapped for the live graph",
        None if held == want_held else f"{held} held, expected {want_held}",
    )
    for rep in range(replays):
        for i, ((_, _, c, _), x, o) in enumerate(zip(PLAN, ins, outs)):
            x.copy_(make_input(torch, dtypes[i], c, "SUM", 5000 + rep * 20 + i, info.rank, dev))
            poison(torch, o)
        g.replay()
        torch.cuda.synchronize()
        for i, ((algo, t, c, output), o) in enumerate(zip(PLAN, outs)):
            ref = reference(torch, dtypes[i], c, "SUM", 5000 + rep * 20 + i, n, dev)
            record(
                f"replay {rep} {algo} {t} n={c} {output}",
                compare(torch, t, dtypes[i], o, ref, n),
                o,
            )
    del g
    torch.cuda.synchronize()
    # The runtime reports a destroyed graph on a thread of its own, soon after.
    deadline = time.monotonic() + 10
    while comm.graph_registrations and time.monotonic() < deadline:
        time.sleep(0.05)
    left = comm.graph_registrations
    record(
        "mappings closed once the graph is destroyed",
        None if left == 0 else f"{left} still held 10 s after the graph was destroyed",
    )
    sym.free()
    comm.destroy()
    return results
