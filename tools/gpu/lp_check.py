"""Low-precision collectives on GPU buffers, checked bit for bit on N GPUs (one process each).

    python3 tools/gpu/lp_check.py [--nranks 2] [--out lp_check.json]

For all_reduce, reduce_scatter, all_gather and all_to_all, float32 and bfloat16, SUM and AVG,
in place and out of place, odd counts, misaligned buffers, several quantizer block sizes and
multi-round sizes: every rank rebuilds every rank's input (seeded), runs the model of the
algorithm (tests/rcclx_core/lp_model.py chained with the library's CPU codec, which the CPU
tests hold equal to an independent numpy model) and requires the GPU output to have the same
bits (NaN: NaN at the same places). Also: one call captured in a CUDA graph and replayed on
changing inputs; the knob path (RCCL_LOW_PRECISION_ENABLE=1, no per-call hint) quantizes; a
call below RCCLX_LP_MIN_BYTES stays full precision; the first hinted call inside a capture,
with no staging allocated, is a clear error. Prints one line per failure and a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "rcclx_core"))
from gpu_common import run_ranks  # noqa: E402

COLLS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
# (count per rank's block, block elems, inputs): small odd, partial blocks, many rounds.
SHAPES = ((1, 256), (1000, 256), (4099, 64), (40_001, 1024), (1_500_007, 256))
DISTS = ("normal", "wide", "special")


def make_input(np, dist, rank, count, seed):
    rng = np.random.default_rng(seed * 7919 + rank)
    x = rng.standard_normal(count).astype(np.float32)
    if dist == "wide":  # magnitudes 1e-6 .. 1e6 and exact zeros
        x *= (10.0 ** rng.uniform(-6, 6, count)).astype(np.float32)
        x[rng.random(count) < 0.05] = 0.0
    elif dist == "special" and count >= 8:  # NaN / inf in some blocks, a huge and a tiny value
        x[rng.integers(0, count, max(1, count // 5000))] = np.inf
        x[rng.integers(0, count, max(1, count // 7000))] = -np.inf
        x[rng.integers(0, count, max(1, count // 9000))] = np.nan
        x[0] = 3.0e38
        x[-1] = 1.0e-40
    return x


def storage(np, x, bf16):
    if not bf16:
        return x
    import lp_model

    return lp_model.from_f32(x, True)


def same_bits(np, got, want):
    """None when equal (NaN where NaN), else a short description of the first difference."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    gf = got.view(np.uint16 if got.dtype == np.uint16 else np.uint32)
    wf = want.view(gf.dtype)
    if got.dtype == np.uint16:
        gnan = (gf & 0x7FFF) > 0x7F80
        wnan = (wf & 0x7FFF) > 0x7F80
    else:
        gnan, wnan = np.isnan(got), np.isnan(want)
    bad = (gf != wf) & ~(gnan & wnan)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return f"{int(bad.sum())} differ, first at {i}: got {gf[i]:#x} want {wf[i]:#x}"


def to_torch(torch, np, a, bf16, device, offset=0):
    """A CUDA tensor holding storage `a`, starting `offset` elements into its allocation."""
    src = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if bf16 else torch.from_numpy(a)
    base = torch.empty(a.size + offset, dtype=src.dtype, device=device)
    t = base[offset:]
    t.copy_(src)
    return t


def from_torch(torch, np, t, bf16):
    c = t.detach().cpu()
    return c.view(torch.int16).numpy().view(np.uint16) if bf16 else c.numpy()


def model(np, rc, coll, inputs, me, bf16, average, block):
    import lp_model

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


def run_call(torch, comm, coll, x, out, inplace, me, n, stream, **kw):
    """Runs `coll`; x is this rank's input tensor; returns the output tensor."""
    kw["stream"] = stream
    if coll == "all_reduce":
        if inplace:
            comm.all_reduce(x, **kw)
            return x
        comm.all_reduce(x, out, **kw)
        return out
    if coll == "reduce_scatter":
        m = x.numel() // n
        if inplace:
            comm.reduce_scatter(x, x[me * m : (me + 1) * m], **kw)
            return x[me * m : (me + 1) * m]
        comm.reduce_scatter(x, out, **kw)
        return out
    if coll == "all_gather":
        m = x.numel()
        if inplace:
            out[me * m : (me + 1) * m].copy_(x)
            comm.all_gather(out[me * m : (me + 1) * m], out, **kw)
        else:
            comm.all_gather(x, out, **kw)
        return out
    if inplace:
        comm.all_to_all(x, x, **kw)
        return x
    comm.all_to_all(x, out, **kw)
    return out


def input_count(coll, n, count):
    return count if coll == "all_gather" else count * n


def check_rank(info, shapes, quick):
    import numpy as np
    import torch

    import rcclx_core as rc

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    n, me = info.nranks, info.rank
    comm = info.communicator()
    stream = torch.cuda.current_stream().cuda_stream
    results = []
    case = 0
    for count, block in shapes:
        os.environ["RCCLX_LP_BLOCK_ELEMS"] = str(block)
        for coll in COLLS:
            for bf16 in (False, True):
                for inplace in (False, True):
                    for average in (
                        (False, True) if coll in ("all_reduce", "reduce_scatter") else (False,)
                    ):
                        if quick and (average or inplace) and count > 5000:
                            continue
                        case += 1
                        dist = DISTS[case % len(DISTS)]
                        offset = case % 3 if not bf16 else case % 2  # misaligned sometimes
                        total = input_count(coll, n, count)
                        inputs = [
                            storage(np, make_input(np, dist, r, total, case), bf16)
                            for r in range(n)
                        ]
                        want = model(np, rc, coll, inputs, me, bf16, average, block)
                        x = to_torch(torch, np, inputs[me], bf16, dev, offset)
                        out = torch.full(
                            (want.size,),
                            float("nan"),
                            device=dev,
                            dtype=torch.bfloat16 if bf16 else torch.float32,
                        )
                        op = {"op": rc.RedOp.AVG} if average else {}
                        name = (
                            f"{coll} {'bf16' if bf16 else 'fp32'} n={count} block={block} "
                            f"{'in-place' if inplace else 'out-of-place'}"
                            f"{' avg' if average else ''} {dist} offset={offset}"
                        )
                        try:
                            got_t = run_call(
                                torch,
                                comm,
                                coll,
                                x,
                                out,
                                inplace,
                                me,
                                n,
                                stream,
                                low_precision=True,
                                **op,
                            )
                            torch.cuda.synchronize()
                            err = same_bits(np, from_torch(torch, np, got_t, bf16), want)
                        except Exception as e:  # noqa: BLE001 - recorded
                            err = f"{type(e).__name__}: {e}"
                        results.append((name, err))
    os.environ["RCCLX_LP_BLOCK_ELEMS"] = "256"
    results += v_variants(np, rc, torch, comm, dev, me, n, stream)
    results += graph_replays(np, rc, torch, comm, dev, me, n)
    results += policy_checks(np, rc, torch, info, dev, me, n)
    comm.destroy()
    return results


def v_variants(np, rc, torch, comm, dev, me, n, stream):
    """all_gather_v and reduce_scatter_v with a different count per rank (0 included)."""
    import lp_model

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
    results = []
    for counts in ([1000 + 777 * r for r in range(n)], [0] + [513] * (n - 1)):
        for bf16 in (False, True):
            for name, (method, in_count, out_count, dist, want_of) in calls.items():
                inputs = [
                    storage(np, make_input(np, dist, r, in_count(counts, r), 5), bf16)
                    for r in range(n)
                ]
                dt = torch.bfloat16 if bf16 else torch.float32
                out = torch.full((out_count(counts),), float("nan"), device=dev, dtype=dt)
                try:
                    x = to_torch(torch, np, inputs[me], bf16, dev)
                    method(x, out, counts, stream=stream, low_precision=True)
                    torch.cuda.synchronize()
                    want = want_of(counts, inputs, bf16)
                    err = same_bits(np, from_torch(torch, np, out, bf16), want)
                except Exception as e:  # noqa: BLE001 - recorded
                    err = f"{type(e).__name__}: {e}"
                results.append((f"{name} counts={counts} {'bf16' if bf16 else 'fp32'}", err))
    return results


def graph_replays(np, rc, torch, comm, dev, me, n, replays=10):
    """One LP all_reduce and one LP all_gather captured, replayed on changing inputs."""
    results = []
    count = 300_001
    x = torch.empty(count, device=dev)
    y = torch.empty(count, device=dev)
    g_in = torch.empty(count, device=dev)
    g_out = torch.empty(count * n, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        s = side.cuda_stream
        comm.all_reduce(x, y, stream=s, low_precision=True)
        comm.all_gather(g_in, g_out, stream=s, low_precision=True)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        s = torch.cuda.current_stream().cuda_stream
        comm.all_reduce(x, y, stream=s, low_precision=True)
        comm.all_gather(g_in, g_out, stream=s, low_precision=True)
    for k in range(replays):
        inputs = [make_input(np, "normal", r, count, 1000 + k) for r in range(n)]
        x.copy_(torch.from_numpy(inputs[me]))
        g_in.copy_(torch.from_numpy(inputs[me]) * 2)
        g.replay()
        torch.cuda.synchronize()
        err = same_bits(
            np, y.cpu().numpy(), model(np, rc, "all_reduce", inputs, me, False, False, 256)
        )
        err2 = same_bits(
            np,
            g_out.cpu().numpy(),
            model(np, rc, "all_gather", [v * 2 for v in inputs], me, False, False, 256),
        )
        results.append((f"graph replay {k} all_reduce", err))
        results.append((f"graph replay {k} all_gather", err2))
    return results


def policy_checks(np, rc, torch, info, dev, me, n):
    """Knob-enabled LP, the size threshold, and the capture error without staging."""
    results = []
    count = 70_000
    inputs = [make_input(np, "normal", r, count, 77) for r in range(n)]
    lp_want = model(np, rc, "all_reduce", inputs, me, False, False, 256)
    # Enabled by the knobs when the communicator is created: staging allocated there.
    os.environ.update({"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_LP_MIN_BYTES": "200000"})
    comm = rc.Communicator.from_unique_id(info.extra_ids[0], me, n, device=info.device)
    s = torch.cuda.current_stream().cuda_stream
    x = torch.from_numpy(inputs[me]).to(dev)
    y = torch.empty_like(x)
    comm.all_reduce(x, y, stream=s)  # 280 KB >= 200000: low precision by the knob
    torch.cuda.synchronize()
    results.append(
        ("knob-enabled all_reduce is low precision", same_bits(np, y.cpu().numpy(), lp_want))
    )
    small = torch.from_numpy(inputs[me][:1000]).to(dev)
    comm.all_reduce(small, stream=s)  # 4 KB < 200000: full precision
    torch.cuda.synchronize()
    ref = inputs[0][:1000].copy()
    for v in inputs[1:]:
        ref = (ref + v[:1000]).astype(np.float32)
    results.append(
        ("below RCCLX_LP_MIN_BYTES stays full precision", same_bits(np, small.cpu().numpy(), ref))
    )
    # Knob-enabled staging exists from creation: capturing the first call works.
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            comm.all_reduce(x, y, stream=torch.cuda.current_stream().cuda_stream)
        y.zero_()
        g.replay()
        torch.cuda.synchronize()
        results.append(
            ("capture with staging from creation", same_bits(np, y.cpu().numpy(), lp_want))
        )
    except Exception as e:  # noqa: BLE001 - recorded
        results.append(("capture with staging from creation", f"{type(e).__name__}: {e}"))
    os.environ.pop("RCCL_LOW_PRECISION_ENABLE", None)
    os.environ.pop("RCCLX_LP_MIN_BYTES", None)
    comm.destroy()
    # No knob: the first hinted call during capture has no staging and must say so.
    comm = rc.Communicator.from_unique_id(info.extra_ids[1], me, n, device=info.device)
    g = torch.cuda.CUDAGraph()
    msg = None
    try:
        with torch.cuda.graph(g):
            comm.all_reduce(
                x, y, stream=torch.cuda.current_stream().cuda_stream, low_precision=True
            )
    except Exception as e:  # noqa: BLE001 - the expected error
        msg = str(e)
    torch.cuda.synchronize()
    ok = msg is not None and "graph capture" in msg
    results.append(
        ("first hinted call in a capture is a clear error", None if ok else f"got {msg!r}")
    )
    comm.destroy()
    return results


def fold(per_rank, failures):
    total = ok = 0
    for rank, results in enumerate(per_rank):
        for name, err in results:
            total += 1
            if err is None:
                ok += 1
            else:
                failures.append(f"rank {rank}: {name}: {err}")
    return total, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    t0 = time.monotonic()
    per_rank = run_ranks(check_rank, args.nranks, SHAPES, args.quick, extra_ids=2, timeout=500)
    failures: list[str] = []
    total, ok = fold(per_rank, failures)
    for f in failures[:40]:
        print(f)
    print(f"low precision on GPU: {ok}/{total} checks passed ({time.monotonic() - t0:.0f} s)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"total": total, "ok": ok, "failures": failures}, fh, indent=1)
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
