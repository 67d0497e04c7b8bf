"""rcclx-e2e: a tensor-parallel transformer block (decode and prefill) and a MoE block timed on
N ranks over several torch.distributed backends in one run, against the same block with its
communication removed (the compute floor).

    rcclx-e2e --ranks 2 --device cpu --preset tiny            # rcclx, rcclx-lp, gloo
    rcclx-e2e --ranks 2 --device cuda --preset 70b --graph    # rcclx, rcclx-lp, nccl

Starts the ranks itself (env:// rendezvous on a free local port; under torchrun, with RANK set,
it runs as that rank). Every backend gets its own group and its own copy of the blocks, built
from the same seeds, so they compute the same numbers; the steps are timed in alternating
blocks (a load on the machine falls on all alike). Rank 0 prints, per backend and phase, the
median time per step, the floor, what the exchanges add (step - floor) and their share, the
peer's time over this one (gloo on CPU, nccl on GPU) and the largest difference of the step's
output from the peer's.

Backends: ``rcclx`` (dist.all_reduce on an rcclx group), ``rcclx-lp`` (the same all_reduces as
low-precision calls on the group's communicator), ``gloo``, ``nccl``. The MoE phase runs the
dynamic, sync-free exchange (moe.dispatch / combine) on the rcclx groups and the host-sync
all_to_all_single version on the others. With ``--graph`` (cuda): each decode step and the MoE
step of the rcclx groups are one CUDA graph replay, prefill is timed eager and captured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from rcclx_benchmarks.local_ranks import run_local_ranks

LOW_PRECISION = {"low_precision": "1"}  # per call, whatever the size thresholds say
PEERS = {"cpu": "gloo", "cuda": "nccl"}
DEFAULTS = {  # preset, moe preset, kv, tokens
    "cpu": ("tiny", "tiny", 128, 64),
    "cuda": ("8b", "mixtral", 4096, 2048),
}


def _parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="rcclx-e2e", description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--preset", choices=["tiny", "8b", "70b"])
    p.add_argument("--moe-preset", choices=["tiny", "mixtral", "deepseek"])
    p.add_argument("--batch", type=int, default=1, help="decode batch")
    p.add_argument("--kv", type=int, help="KV cache length of a decode step")
    p.add_argument("--tokens", type=int, help="prefill tokens")
    p.add_argument("--moe-tokens", type=int, default=64, help="MoE tokens per rank")
    p.add_argument("--steps", type=int, default=40, help="timed steps per backend and phase")
    p.add_argument("--backends", help="comma-separated; default rcclx,rcclx-lp,<peer>")
    p.add_argument("--phases", default="decode,prefill,moe")
    p.add_argument("--graph", action="store_true", help="cuda: capture steps in CUDA graphs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="rank 0 writes the rows to this file")
    args = p.parse_args(argv)
    preset, moe_preset, kv, tokens = DEFAULTS[args.device]
    args.preset = args.preset or preset
    args.moe_preset = args.moe_preset or moe_preset
    args.kv = args.kv if args.kv is not None else kv
    args.tokens = args.tokens if args.tokens is not None else tokens
    args.backends = args.backends or f"rcclx,rcclx-lp,{PEERS[args.device]}"
    if args.graph and args.device != "cuda":
        p.error("--graph needs --device cuda")
    return args


def command(args) -> str:
    """The command that reproduces this run, every setting spelled out."""
    parts = ["rcclx-e2e", f"--ranks {args.ranks}", f"--device {args.device}"]
    parts += [f"--preset {args.preset}", f"--moe-preset {args.moe_preset}"]
    parts += [f"--batch {args.batch}", f"--kv {args.kv}", f"--tokens {args.tokens}"]
    parts += [f"--moe-tokens {args.moe_tokens}", f"--steps {args.steps}"]
    parts += [f"--backends {args.backends}", f"--phases {args.phases}", f"--seed {args.seed}"]
    return " ".join(parts + (["--graph"] if args.graph else []))


def _medians_ms(calls: dict, steps: int, sync, block: int = 5) -> dict:
    """The median time of one call of each of `calls`, in ms, timed in alternating blocks of
    `block` calls, each call after `sync` (which lines the ranks up and is not timed)."""
    times = {name: [] for name in calls}
    for call in calls.values():  # warm-up: first-call allocations, communicator setup
        for _ in range(2):
            call()
    for start in range(0, steps, block):
        for name, call in calls.items():
            for _ in range(min(block, steps - start)):
                sync()
                t0 = time.perf_counter()
                call()
                sync_device()
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def sync_device() -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _captured(fn):
    """fn captured in a CUDA graph: returns (replay, static output). Warmed up on a side stream
    first, as capture requires."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


class _Step:
    """A timed step: `run()` executes it, `output()` its last result."""

    def __init__(self, fn, graph: bool):
        if graph:
            self.run, self._out = _captured(fn)
            self.output = lambda: self._out
        else:
            self._fn, self._last = fn, None
            self.run = self._eager
            self.output = lambda: self._last

    def _eager(self):
        self._last = self._fn()


def _build_steps(args, groups, reducers, device, dtype):
    """{(row name, phase): _Step} for every backend, plus ("floor", phase) per phase and
    ("floor-host", "moe") for the host-sync MoE path."""
    import torch

    from rcclx_benchmarks.e2e.moe_block import MOE_PRESETS, MoeBlock
    from rcclx_benchmarks.e2e.transformer_block import PRESETS, TransformerBlock

    shape, moe_shape = PRESETS[args.preset], MOE_PRESETS[args.moe_preset]

    def rand(seed, *size):
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(size, generator=gen).to(device=device, dtype=dtype)

    phases = args.phases.split(",")
    seed = args.seed * 1000
    # Tensor parallelism replicates the block's input on every rank; expert parallelism gives
    # every rank its own tokens.
    inputs = {
        "decode": rand(seed + 17, args.batch, 1, shape.hidden),
        "prefill": rand(seed + 18, 1, args.tokens, shape.hidden),
        "moe": rand(seed + 19 + int(os.environ["RANK"]), args.moe_tokens, moe_shape.hidden),
    }
    graph = args.graph
    steps = {}
    for name, group in groups.items():
        kw = {"seed": args.seed, "device": device, "dtype": dtype}
        block = TransformerBlock(shape, group, **kw)
        block.allocate_cache(args.batch, args.kv)
        reduce = reducers[name]
        rcclx = name.startswith("rcclx")
        fns = {
            "decode": lambda b=block, r=reduce: b.decode(inputs["decode"], r),
            "prefill": lambda b=block, r=reduce: b.prefill(inputs["prefill"], r),
        }
        if "moe" in phases:
            moe_block = MoeBlock(moe_shape, group, **kw)
            fns["moe"] = (
                (lambda m=moe_block, c=group.comm: m.forward_dynamic(inputs["moe"], c))
                if rcclx
                else (lambda m=moe_block: m.forward_host_sync(inputs["moe"]))
            )
        for phase in phases:
            # A host-synchronizing exchange cannot be captured: the peer's MoE runs eager.
            capture = graph and (phase != "moe" or rcclx)
            if phase == "prefill" and graph:
                steps[(name, "prefill")] = _Step(fns[phase], False)
                phase = "prefill-graph"
            steps[(name, phase)] = _Step(fns[phase.split("-")[0]], capture)
        if name == next(iter(groups)):  # the floor: the first backend's blocks, no exchange
            floor = {
                "decode": lambda b=block: b.decode(inputs["decode"], None),
                "prefill": lambda b=block: b.prefill(inputs["prefill"], None),
            }
            if "moe" in phases:
                floor["moe"] = lambda m=moe_block: m.forward_local(inputs["moe"])
                # Eager, as the host-sync path it is the floor of.
                host_floor = _Step(lambda m=moe_block: m.forward_local(inputs["moe"], False), False)
                steps[("floor-host", "moe")] = host_floor
            for phase in phases:
                steps[("floor", phase)] = _Step(floor[phase], graph)
                if phase == "prefill" and graph:
                    steps[("floor", "prefill-graph")] = steps[("floor", phase)]
                    steps[("floor", phase)] = _Step(floor[phase], False)
    return steps


def _rank_main(args) -> None:
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    rank = int(os.environ["RANK"])
    torch.set_grad_enabled(False)  # forward steps only; the exchanges refuse grad tensors
    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local % torch.cuda.device_count())
        device, dtype = torch.device("cuda", torch.cuda.current_device()), torch.bfloat16
    else:
        torch.set_num_threads(1)  # ranks share the host's cores
        device, dtype = torch.device("cpu"), torch.float32
    dist.init_process_group("gloo")  # the world group only lines the ranks up
    groups, reducers = {}, {}
    for name in args.backends.split(","):
        group = dist.new_group(backend="rcclx" if name.startswith("rcclx") else name)
        groups[name] = group
        if name == "rcclx-lp":
            reducers[name] = lambda y, c=group.comm: c.all_reduce(y, hints=LOW_PRECISION)
        else:
            reducers[name] = "group"
    steps = _build_steps(args, groups, reducers, device, dtype)

    def sync():
        sync_device()
        dist.barrier()

    times = _medians_ms({key: s.run for key, s in steps.items()}, args.steps, sync)
    peer = PEERS[args.device]
    rows = []
    for (name, phase), ms in times.items():
        if name.startswith("floor"):
            continue
        host_sync = phase == "moe" and not name.startswith("rcclx")
        floor = times[("floor-host" if host_sync else "floor", phase)]
        out = steps[(name, phase)].output().float()
        ref_step = steps.get((peer, phase))
        diff = (out - ref_step.output().float()).abs().max() if ref_step else torch.tensor(-1.0)
        scale = ref_step.output().float().abs().max() if ref_step else torch.tensor(1.0)
        stats = torch.stack([diff, diff / scale]).cpu()
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)  # the worst rank
        peer_ms = times.get((peer, phase))
        rows.append(
            {
                "backend": name,
                "phase": phase,
                "ms": ms,
                "floor_ms": floor,
                "comm_ms": max(0.0, ms - floor),  # what the exchanges add to a step
                "comm_share": max(0.0, ms - floor) / ms,
                "peer_over_this": peer_ms / ms if peer_ms else None,
                "max_abs_diff": float(stats[0]) if ref_step else None,
                "max_rel_diff": float(stats[1]) if ref_step else None,
            }
        )
    if rank == 0:
        print(format_table(rows, peer), flush=True)
        print(f"command: {command(args)}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"command": command(args), "peer": peer, "rows": rows}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def format_table(rows, peer: str) -> str:
    head = f"{'backend':<9} {'phase':<14} {'ms/step':>9} {'floor ms':>9} {'comm ms':>8} {'comm':>6}"
    head += f" {peer + '/this':>10} {'max|d| vs ' + peer:>16}"
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = f"{r['peer_over_this']:.2f}x" if r["peer_over_this"] else "-"
        diff = f"{r['max_abs_diff']:.2e}" if r["max_abs_diff"] is not None else "-"
        lines.append(
            f"{r['backend']:<9} {r['phase']:<14} {r['ms']:9.3f} {r['floor_ms']:9.3f}"
            f" {r['comm_ms']:8.3f} {r['comm_share']:6.1%} {ratio:>10} {diff:>16}"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    args = _parse(argv)
    if "RANK" in os.environ:
        _rank_main(args)
        return
    argv = sys.argv[1:] if argv is None else list(argv)
    command = [sys.executable, "-m", "rcclx_benchmarks.e2e.bench", *argv]
    sys.exit(run_local_ranks(command, args.ranks))


if __name__ == "__main__":
    main()
