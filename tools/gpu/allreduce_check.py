"""GPU allreduce correctness on N GPUs (one process each): every algorithm, several dtypes and
operators (PREMUL_SUM with a different scalar per rank, the bitwise operators on integers of
every width), odd counts, in place and out of place, misaligned buffers, multi-round messages,
one rank alone, outputs in symmetric buffers (zero-copy), graph capture with replays on changing
inputs, bitwise identity across ranks, no device memory left after destroy, clear errors for
what GPU buffers do not support, and a peer that never joins turning into an error, not a hang.

    python3 tools/gpu/allreduce_check.py [--nranks 2] [--out check.json]

With more ranks than GPUs, ranks share GPUs (gpu_common.py): every kernel's n-rank paths are
checked, slowly, and the leak check is left out. The symmetric-buffer cases live in
allreduce_symmetric.py, the graph-capture cases in allreduce_graph.py, the inputs, references
and comparison in gpu_cases.py.

Inputs are random (seeded by case and rank, so every rank can rebuild every rank's input); the
reference is computed in float64 (integers: exactly, wrapping in their own width; bitwise
operators on random bit patterns). With two ranks floats must equal it rounded to their type
(bit for bit); with more, its relative error is bounded. Each output is poisoned first, so an
unwritten element fails.
Prints one line per failure and a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allreduce_graph import graph_rank  # noqa: E402
from allreduce_symmetric import ZERO_COPY_TREE, symmetric_rank  # noqa: E402
from gpu_cases import (  # noqa: E402
    BITWISE,
    digest,
    invalid_argument_problem,
    make_input,
    poison,
    premul_input,
    premul_scalar,
    reduce_and_compare,
    reference,
)
from gpu_common import gpu_count, run_ranks  # noqa: E402

ALGOS = ("dda_flat", "dda_tree", "dda_large", "auto")
STAGGERED_TWO_SHOT = "tree_lines_max_bytes=0,tree_min_block_units=16,tree_stagger_bytes=1"
# What the correctness sweep runs: (label, algorithm, tuning). dda_flat runs LL lines below
# flat_lines_min_bytes and 128-byte lines above; the two extra flat variants put every count
# through one of them. With 256 lines per warp, a line kernel runs few warps, each through many
# batches.
VARIANTS = (
    ("dda_flat", "dda_flat", ""),
    ("dda_flat LL", "dda_flat", "flat_lines_min_bytes=1073741824"),
    ("dda_flat lines", "dda_flat", "flat_lines_min_bytes=1"),
    ("dda_flat lines few warps", "dda_flat", "flat_lines_min_bytes=1,lines_min_warp_lines=256"),
    ("dda_tree", "dda_tree", ""),
    ("dda_tree few warps", "dda_tree", "lines_min_warp_lines=256"),
    # The two-shot kernel at every count, over many blocks, each block after the first starting
    # once block 0 has issued its reduce-scatter (the staggered start at its narrowest).
    ("dda_tree two-shot staggered", "dda_tree", STAGGERED_TWO_SHOT),
    ("dda_large", "dda_large", ""),
    ("auto", "auto", ""),
)
# (dtype name, ops); ops by name.
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
# (torch has too few operators on uint32 / uint64 tensors to check them this way.)
COUNTS = (1, 3, 1001, 65537, (1 << 20) + 7)


def correctness_rank(info, counts):
    import torch

    import rcclx_core as rc

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    comm = info.communicator()
    n = info.nranks
    cases = []
    seed = 0

    def run_case(label, algo, name, op, count, mode):
        nonlocal seed
        seed += 1
        dtype = getattr(torch, name)
        x = make_input(
            torch, dtype, count + (1 if mode == "misaligned" else 0), op, seed, info.rank, dev
        )
        ref = reference(torch, dtype, count + (1 if mode == "misaligned" else 0), op, seed, n, dev)
        if mode == "misaligned":
            x, ref = x[1:], ref[1:]  # a 16-byte-misaligned view: the element-wise path
            out = torch.empty(count + 1, dtype=dtype, device=dev)[1:]
        else:
            out = torch.empty_like(x)
        problem = reduce_and_compare(torch, rc, comm, algo, name, op, x, out, ref, mode, info.rank)
        cases.append(
            {"case": label, "error": problem, "digest": digest(out) if problem is None else None}
        )

    for variant, algo, tuning in VARIANTS:
        comm.set_gpu_tuning(tuning)
        for name, ops in TYPE_OPS:
            for op in ops:
                for count in counts:
                    run_case(f"{variant} {name} {op} n={count}", algo, name, op, count, "out")
        for name in ("bfloat16", "float32", "int8"):
            for count in (5, 4099):
                run_case(
                    f"{variant} {name} SUM n={count} misaligned",
                    algo,
                    name,
                    "SUM",
                    count,
                    "misaligned",
                )
        # Bitwise: int64 and uint8 views 8 and 1 bytes off 16-byte alignment; PREMUL_SUM
        # scales on the element-wise path too.
        for name, op in (
            ("int64", "BXOR"),
            ("uint8", "BAND"),
            ("int32", "BOR"),
            ("bfloat16", "PREMUL_SUM"),
            ("float32", "PREMUL_SUM"),
        ):
            for count in (5, 4099):
                run_case(
                    f"{variant} {name} {op} n={count} misaligned",
                    algo,
                    name,
                    op,
                    count,
                    "misaligned",
                )
        run_case(
            f"{variant} bfloat16 SUM n=70001 in-place", algo, "bfloat16", "SUM", 70001, "inplace"
        )
        run_case(
            f"{variant} float32 PREMUL_SUM n=70001 in-place",
            algo,
            "float32",
            "PREMUL_SUM",
            70001,
            "inplace",
        )
        run_case(f"{variant} int64 BAND n=70001 in-place", algo, "int64", "BAND", 70001, "inplace")
    comm.set_gpu_tuning("")
    # Several rounds through the staging (36 MB of fp32 > RCCLX_GPU_STAGING_BYTES / 2).
    for algo in ("dda_tree", "dda_large"):
        run_case(f"{algo} float32 SUM n=9000001 rounds", algo, "float32", "SUM", 9_000_001, "out")
        run_case(
            f"{algo} bfloat16 MAX n=20000003 rounds in-place",
            algo,
            "bfloat16",
            "MAX",
            20_000_003,
            "inplace",
        )
        run_case(
            f"{algo} bfloat16 PREMUL_SUM n=20000003 rounds",
            algo,
            "bfloat16",
            "PREMUL_SUM",
            20_000_003,
            "out",
        )
        run_case(f"{algo} int64 BXOR n=9000001 rounds", algo, "int64", "BXOR", 9_000_001, "out")
    # dda_tree's two-shot kernel on messages the line protocol would otherwise take.
    comm.set_gpu_tuning("tree_lines_max_bytes=0")
    for name, op, count, mode in (
        ("bfloat16", "SUM", 65537, "out"),
        ("float32", "AVG", 1001, "misaligned"),
        ("int64", "BXOR", 70001, "inplace"),
    ):
        run_case(
            f"dda_tree two-shot {name} {op} n={count} {mode}", "dda_tree", name, op, count, mode
        )
    comm.set_gpu_tuning("")
    cases.extend(unsupported_cases(torch, rc, comm, dev))
    comm.destroy()
    return cases


def unsupported_cases(torch, rc, comm, dev):
    """What GPU reductions still refuse fails on the caller's thread with a message naming it."""
    stream = torch.cuda.current_stream().cuda_stream
    cases = []

    def expect(label, fn, *needles):
        problem = invalid_argument_problem(torch, rc, fn, needles)
        cases.append({"case": label, "error": problem, "digest": None})

    fp8 = torch.zeros(64, dtype=torch.uint8, device=dev)
    expect(
        "error: all_reduce float8_e4m3 on GPU",
        lambda: comm.all_reduce(fp8, dtype=rc.DataType.FLOAT8_E4M3, stream=stream),
        "float8_e4m3 is not supported in reductions on GPU buffers",
    )
    ints = torch.ones(64, dtype=torch.int32, device=dev)
    expect(
        "error: all_reduce PREMUL_SUM int32 on GPU",
        lambda: comm.all_reduce(ints, op=rc.RedOp.PREMUL_SUM, scalar=2.0, stream=stream),
        "premul_sum on GPU buffers needs a floating datatype, not int32",
    )
    return cases


def one_rank(info):
    """A communicator of one rank: PREMUL_SUM still scales (by a kernel, not a copy) and the
    bitwise operators return the input, for every algorithm; compared exactly."""
    import torch

    import rcclx_core as rc

    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    comm = info.communicator()
    stream = torch.cuda.current_stream().cuda_stream
    cases = []
    for algo in ALGOS:
        for name, op, count in (
            ("float32", "PREMUL_SUM", 1001),
            ("bfloat16", "PREMUL_SUM", 300_001),
            ("float64", "PREMUL_SUM", 3),
            ("int64", "BXOR", 1001),
        ):
            dtype = getattr(torch, name)
            x = make_input(torch, dtype, count, op, 7, 0, dev)
            out = torch.empty_like(x)
            poison(torch, out)
            kw = {"scalar": premul_scalar(1)} if op == "PREMUL_SUM" else {}
            try:
                comm.all_reduce(x, out, op=getattr(rc.RedOp, op), algo=algo, stream=stream, **kw)
                torch.cuda.synchronize()
                want = x if op in BITWISE else premul_input(torch, x, 1)
                bad = (out.view(torch.uint8) != want.view(torch.uint8)).sum().item()
                problem = f"{bad} bytes differ from the exact result" if bad else None
            except Exception as e:  # noqa: BLE001 - reported per case
                problem = f"{type(e).__name__}: {e}"
            label = f"one rank {algo} {name} {op} n={count}"
            cases.append({"case": label, "error": problem, "digest": None})
    comm.destroy()
    return cases


def leak_rank(info, rounds):
    """Device memory is back after destroy: split off, use and destroy `rounds` communicators."""
    import torch

    torch.cuda.set_device(info.device)
    comm = info.communicator()

    def cycle():
        sub = comm.split(0)  # a new communicator on the same GPU: its own staging
        x = torch.ones(1000, device="cuda")
        sub.all_reduce(x, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        assert x[0].item() == info.nranks, x[0].item()
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


def stalled_peer_rank(info, timeout_ms, algo="dda_flat", tuning="", symmetric=False, capture=False):
    """Rank 0 calls all_reduce, rank 1 never does: rank 0 must fail within about timeout_ms.
    symmetric: in place on a symmetric buffer (both ranks allocate it first). capture: the call
    is captured into a CUDA graph, where mapping its output waits for the peer (8 MiB)."""
    os.environ["RCCLX_TIMEOUT_MS"] = str(timeout_ms)
    import torch

    torch.cuda.set_device(info.device)
    comm = info.communicator()
    comm.set_gpu_tuning(tuning)
    buf = comm.alloc_symmetric(4096 * 4) if symmetric else None
    if info.rank != 0:
        time.sleep(timeout_ms / 1000 + 6)
        return None
    x = buf.as_tensor(torch.float32) if symmetric else torch.ones(4096, device="cuda")
    if capture:
        x = torch.ones(2 << 20, device="cuda")
    t0 = time.monotonic()
    try:
        if capture:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                comm.all_reduce(x, algo=algo, stream=torch.cuda.current_stream().cuda_stream)
            g.replay()
        else:
            comm.all_reduce(x, algo=algo, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        return {"error": None, "seconds": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 - the expected outcome
        return {"error": f"{type(e).__name__}: {e}"[:200], "seconds": time.monotonic() - t0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--replays", type=int, default=8)
    ap.add_argument("--skip-stall", action="store_true", help="skip the stalled-peer check")
    args = ap.parse_args()
    t0 = time.monotonic()
    summary = {}
    failures = []

    def fold(name, per_rank):
        # every rank's cases, in the same order; digests must agree across ranks
        n_ok = 0
        for cases in zip(*per_rank):
            errs = [(r, c["error"]) for r, c in enumerate(cases) if c["error"]]
            digests = {c["digest"] for c in cases}
            if errs:
                failures.append(
                    f"{cases[0]['case']}: " + "; ".join(f"rank {r}: {e}" for r, e in errs)
                )
            elif len(digests) != 1:
                failures.append(f"{cases[0]['case']}: ranks' results differ bitwise")
            else:
                n_ok += 1
        summary[name] = {"cases": len(per_rank[0]), "passed": n_ok}
        print(
            f"{name}: {n_ok}/{len(per_rank[0])} cases passed ({time.monotonic() - t0:.0f} s)",
            flush=True,
        )

    fold("correctness", run_ranks(correctness_rank, args.nranks, COUNTS, timeout=400))
    fold("one rank", run_ranks(one_rank, 1, timeout=120))
    fold("symmetric", run_ranks(symmetric_rank, args.nranks, timeout=300))
    fold("graph", run_ranks(graph_rank, args.nranks, args.replays, True, timeout=200))
    fold("graph staged", run_ranks(graph_rank, args.nranks, args.replays, False, timeout=200))
    if args.nranks <= gpu_count():
        leaks = run_ranks(leak_rank, args.nranks, 3, timeout=120)
        leak_ok = all(abs(d) < (4 << 20) for d in leaks)
        summary["leak"] = {"bytes_lost_by_rank": leaks, "ok": leak_ok}
        verdict = "ok" if leak_ok else "LEAK"
        print(
            f"leak: device memory lost after 3 create/destroy rounds, by rank: {leaks} -> {verdict}"
        )
        if not leak_ok:
            failures.append(f"device memory not returned after destroy: {leaks}")
    else:  # the free-memory reading is per GPU, not per process
        print("leak: not checked (ranks share GPUs; the check needs one GPU per rank)")
    stalls = (
        ("dda_flat", "dda_flat", "", False, False),
        ("dda_flat lines", "dda_flat", "flat_lines_min_bytes=1", False, False),
        ("dda_tree", "dda_tree", "", False, False),
        ("dda_tree zero-copy", "dda_tree", ZERO_COPY_TREE, True, False),
        ("dda_tree two-shot staggered", "dda_tree", STAGGERED_TWO_SHOT, False, False),
        ("dda_tree captured", "dda_tree", "", False, True),
    )
    for label, algo, tuning, symmetric, capture in () if args.skip_stall else stalls:
        try:
            st = run_ranks(
                stalled_peer_rank, args.nranks, 2000, algo, tuning, symmetric, capture, timeout=60
            )[0]
        except Exception as e:  # noqa: BLE001
            st = {"error": None, "seconds": -1, "launcher": str(e)[-500:]}
        stall_ok = st["error"] is not None and 0 < st["seconds"] < 15
        summary[f"stalled_peer_{label.replace(' ', '_')}"] = {**st, "ok": stall_ok}
        print(f"stalled peer ({label}): {st} -> {'ok' if stall_ok else 'FAILED'}")
        if not stall_ok:
            failures.append(f"stalled peer ({label}) did not turn into an error in time: {st}")
    for f in failures:
        print("FAIL", f)
    summary["failures"] = failures
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(summary, fh, indent=1)
    verdict = "PASS" if not failures else f"{len(failures)} FAILURES"
    print(f"GPU correctness: {verdict} ({time.monotonic() - t0:.0f} s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
