"""The ``rcclx-perf`` command line: options in the manner of nccl-tests, then the launch.

Every option is checked here, before any rank starts, and a bad one exits 2 with a message that
names the option and its value (as argparse does for its own checks).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys

from rcclx_core.perf import device, launch, mps, repeat
from rcclx_core.perf import targets as targets_file
from rcclx_core.perf.peers import PEERS
from rcclx_core.perf.spec import (
    COLLECTIVES,
    DETERMINISM_DTYPES,
    DTYPE_ALIASES,
    DTYPES,
    LP_DTYPES,
    LP_REDOPS,
    REDOPS,
    Config,
    allreduce_algos,
    parse_bytes,
)

_EPILOG = """\
Device: --device auto (the default) runs on GPUs when this build has GPU code, a GPU is
visible and torch with CUDA is importable, else on the host; the header says which and why.
On GPUs the buffers are torch CUDA tensors, one rank per GPU by default (-g N with more ranks
than GPUs shares them: rank r on GPU r % GPUs, for correctness runs only).

Ranks: by default rcclx-perf starts -g processes on this host (cpu: 2; cuda: one per GPU).
Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set) it runs as that one rank
instead (on GPUs: GPU LOCAL_RANK % GPUs), e.g.
  torchrun --nproc-per-node 4 -m rcclx_core.perf -b 1K -e 16M

Timing: eager (the default): every call issued from the host; on the host each call is timed
on its own, on GPUs the GPU time per op comes from CUDA events just before and after each of
the back-to-back calls and host(us) is the host's time to issue a call. --graph N (GPUs): N ops
captured in one CUDA graph, each timed iteration one replay queued behind a GPU sleep; time per
op = replay / N.
Each rank takes the mean (or --median) of its iterations; the slowest rank's is reported.
algbw = size / time; busbw = algbw times nccl-tests' factor (all_reduce 2(n-1)/n; all_gather,
reduce_scatter, all_to_all(_v), gather, scatter (n-1)/n; broadcast, reduce, send_recv 1). size
is the larger per-rank buffer; count is the count argument of the NCCL API (all_gather's send
count, reduce_scatter's receive count, all_to_all's per-peer count, all_to_all_v's smallest
per-peer count: rank s sends count * (1 + (s + d) % n) elements to rank d).

Exit status: 0 ok, 1 wrong values found (or a low-precision error above its bound), 2 bad
command line, 3 a rank failed, 4 a target not met (with --strict-targets only).
"""

_TUNING = re.compile(r"^\s*$|^[A-Za-z_]\w*=[^,=\s]+(,[A-Za-z_]\w*=[^,=\s]+)*$")


def _bytes(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _dtype(text: str) -> str:
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in DTYPES:
        raise argparse.ArgumentTypeError(f"unknown datatype '{text}' (choose {', '.join(DTYPES)})")
    return name


def _peers(text: str) -> tuple[str, ...]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in names if p not in PEERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"'{text}': unknown peer '{unknown[0] if unknown else ''}' (choose a comma list of "
            f"{', '.join(PEERS)})"
        )
    return tuple(dict.fromkeys(names))  # in order, once each


def _sizes_and_iterations(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--minbytes", type=_bytes, default="64", help="smallest size (64)")
    p.add_argument("-e", "--maxbytes", type=_bytes, default="64M", help="largest size (64M)")
    p.add_argument("-f", "--stepfactor", type=int, default=4, help="size multiplier (4)")
    p.add_argument("-n", "--iters", type=int, default=100, help="timed iterations (100)")
    p.add_argument(
        "-w",
        "--warmup_iters",
        type=int,
        default=10,
        help="warm-up iterations (10; eager on a GPU at least --iters)",
    )
    p.add_argument(
        "-c", "--check", type=int, choices=(0, 1), default=1, help="check every element (1)"
    )
    p.add_argument(
        "--median", action="store_true", help="report the median iteration time instead of the mean"
    )
    p.add_argument(
        "--passes",
        type=int,
        default=1,
        help="passes over every column per size, every second in reverse order, each column "
        "keeping its best (1)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="R",
        help="run the whole sweep R times, each in fresh processes, and print per size and "
        "column the median over runs and the spread (slowest / fastest run) (1)",
    )


def _what_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collective", choices=list(COLLECTIVES), default="all_reduce")
    p.add_argument(
        "-d",
        "--datatype",
        type=_dtype,
        default="float32",
        help=f"element type: {', '.join(DTYPES)} (float32)",
    )
    p.add_argument(
        "--redop",
        choices=list(REDOPS),
        default=None,
        help="reduction of all_reduce, reduce_scatter, reduce (sum)",
    )
    p.add_argument(
        "--algo",
        choices=[*allreduce_algos(), "all"],
        default=None,
        help="all_reduce algorithm, or 'all' for one row each (auto)",
    )
    p.add_argument("--inplace", action="store_true", help="in place instead of out of place")
    p.add_argument(
        "--low-precision",
        action="store_true",
        help="the low-precision path (low_precision=True, FP8 e4m3 on the wire): all_reduce, "
        "all_gather, reduce_scatter, all_to_all of float32 / bfloat16",
    )
    p.add_argument(
        "--check-determinism",
        action="store_true",
        help="floating-point sums of inputs over eight decades, every element's bits checked "
        "against the fold order of docs/determinism.rst (all_reduce, reduce_scatter, reduce)",
    )


def _where_and_how(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="(auto)")
    p.add_argument(
        "-g",
        "--nranks",
        type=int,
        default=None,
        help="ranks (processes) on this host (cpu: 2, cuda: one per GPU)",
    )
    p.add_argument(
        "--hosts",
        type=int,
        default=1,
        metavar="H",
        help="spread the local ranks over H pretend hosts (RCCLX_HOST_ID per rank, in blocks of "
        "ranks): tcp between them, shared memory within (1)",
    )
    p.add_argument(
        "--graph", type=int, default=None, metavar="N", help="time N ops per CUDA graph (GPUs)"
    )
    p.add_argument(
        "--tuning", metavar="SPEC", help="_testing.set_gpu_tuning(comm, SPEC) for every row (GPUs)"
    )
    p.add_argument(
        "--symmetric",
        action="store_true",
        help="all_reduce in place on a comm.alloc_symmetric buffer (GPUs)",
    )
    p.add_argument(
        "--mps",
        action="store_true",
        help="start an NVIDIA MPS control daemon for the run and stop it after, so ranks "
        "sharing a GPU run their kernels at once (GPUs; a daemon already serving this "
        "environment is used as it is)",
    )
    p.add_argument(
        "--compare",
        type=_peers,
        default=(),
        metavar="PEERS",
        help=f"also time these on the same data: a comma list of {', '.join(PEERS)}",
    )
    p.add_argument(
        "--targets",
        metavar="FILE",
        help="ratio targets to judge (a file or: " + ", ".join(targets_file.shipped()) + ")",
    )
    p.add_argument("--strict-targets", action="store_true", help="exit 4 when a target is not met")
    p.add_argument("--json", metavar="FILE", help="write every result as JSON")
    p.add_argument("--plot", metavar="FILE", help="draw busbw against size (needs matplotlib)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rcclx-perf",
        description="Times and checks RCCLX collectives over a range of sizes, on CPUs or GPUs, "
        "in the manner of nccl-tests.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _what_runs(p)
    _sizes_and_iterations(p)
    _where_and_how(p)
    return p


def _check_collective_options(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    coll = COLLECTIVES[a.collective]
    if a.redop is not None and not coll.reduces:
        p.error(f"--redop {a.redop} does not apply to {a.collective}")
    if a.algo is not None and a.collective != "all_reduce":
        p.error(f"--algo applies to all_reduce only (not --collective {a.collective})")
    if a.inplace and coll.inplace is None:
        p.error(
            f"--inplace does not apply to {a.collective}: it would receive into the buffer it "
            "is still sending"
        )
    if a.check_determinism:
        _check_determinism_options(p, a, coll)
    if not a.low_precision:
        return
    if not coll.low_precision:
        p.error(
            f"--low-precision does not apply to {a.collective} (all_reduce, all_gather, "
            "reduce_scatter, all_to_all)"
        )
    if a.datatype not in LP_DTYPES:
        p.error(f"--low-precision with -d {a.datatype}: only {', '.join(LP_DTYPES)} are eligible")
    if (a.redop or "sum") not in LP_REDOPS:
        p.error(f"--low-precision with --redop {a.redop}: only {', '.join(LP_REDOPS)}")
    if a.algo is not None:
        p.error(f"--algo {a.algo} does not apply with --low-precision (the LP path is one)")


def _check_determinism_options(p: argparse.ArgumentParser, a: argparse.Namespace, coll) -> None:
    if not coll.reduces:
        p.error(f"--check-determinism checks reductions, not --collective {a.collective}")
    if a.datatype not in DETERMINISM_DTYPES:
        p.error(
            f"--check-determinism with -d {a.datatype}: only floating types "
            f"({', '.join(DETERMINISM_DTYPES)}) can fold in more than one order"
        )
    if (a.redop or "sum") != "sum":
        p.error(f"--check-determinism with --redop {a.redop}: it checks sum")
    if a.low_precision:
        p.error("--check-determinism with --low-precision: low precision quantizes (no fold)")
    if not a.check:
        p.error("--check-determinism with -c 0: the check is what it adds")


def _check_numbers(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    if a.minbytes < 1 or a.maxbytes < a.minbytes:
        p.error(f"sizes must satisfy 1 <= minbytes ({a.minbytes}) <= maxbytes ({a.maxbytes})")
    if a.stepfactor < 2:
        p.error(f"--stepfactor {a.stepfactor} must be at least 2")
    if a.iters < 1:
        p.error(f"--iters {a.iters} must be at least 1")
    if a.warmup_iters < 0:
        p.error(f"--warmup_iters {a.warmup_iters} must be at least 0")
    if a.passes < 1:
        p.error(f"--passes {a.passes} must be at least 1")
    if a.repeat < 1:
        p.error(f"--repeat {a.repeat} must be at least 1")
    if a.repeat > 1 and (a.targets or a.plot):
        option = f"--targets {a.targets}" if a.targets else f"--plot {a.plot}"
        p.error(f"--repeat {a.repeat} does not take {option} (they judge or draw one run)")
    if a.nranks is not None and a.nranks < 1:
        p.error(f"--nranks {a.nranks} must be at least 1")
    if a.hosts < 1 or (a.nranks is not None and a.hosts > a.nranks):
        p.error(f"--hosts {a.hosts} must be between 1 and the ranks ({a.nranks or 'default'})")
    if a.graph is not None and a.graph < 1:
        p.error(f"--graph {a.graph} must be at least 1")


def _check_device_options(p, a, choice: device.DeviceChoice) -> None:
    on = f"this run is on {choice.kind} ({choice.reason})"
    gpu_only = [
        (a.graph is not None, f"--graph {a.graph} needs --device cuda (CUDA graphs), but {on}"),
        (a.tuning is not None, f"--tuning '{a.tuning}' needs --device cuda, but {on}"),
        (a.symmetric, f"--symmetric needs --device cuda, but {on}"),
        (a.mps, f"--mps needs --device cuda, but {on}"),
    ]
    for bad, message in gpu_only:
        if bad and choice.kind != "cuda":
            p.error(message)
    if a.tuning is not None and not _TUNING.match(a.tuning):
        p.error(f"--tuning '{a.tuning}' is not 'name=value,...' (as RCCLX_GPU_TUNING)")
    if a.symmetric and a.collective != "all_reduce":
        p.error(f"--symmetric applies to all_reduce only (not --collective {a.collective})")
    if a.mps and mps.control_binary() is None and not mps.active():
        p.error(f"--mps: this machine has no {mps.CONTROL} (NVIDIA's MPS)")


def _check_tools(p: argparse.ArgumentParser, a: argparse.Namespace) -> list:
    """Checks what the options need installed and reads --targets; returns the targets."""
    if a.compare and importlib.util.find_spec("torch") is None:
        p.error(f"--compare {','.join(a.compare)} needs torch (pip install 'rcclx-core[compare]')")
    if a.plot and importlib.util.find_spec("matplotlib") is None:
        p.error(f"--plot {a.plot} needs matplotlib (pip install 'rcclx-core[plot]')")
    if a.strict_targets and not a.targets:
        p.error("--strict-targets needs --targets FILE")
    if not a.targets:
        return []
    try:
        return targets_file.parse(targets_file.resolve(a.targets))
    except targets_file.TargetsError as e:
        p.error(str(e))


def config_from_args(
    argv: list[str] | None = None,
) -> tuple[Config, int | None, int, list, int]:
    """The run's Config, the requested --nranks (None: not given), the GPUs of this host for the
    run, the targets and --repeat; exits 2 on a bad line."""
    p = build_parser()
    a = p.parse_args(argv)
    _check_collective_options(p, a)
    _check_numbers(p, a)
    try:
        choice = device.choose_device(a.device)
    except ValueError as e:
        p.error(str(e))
    _check_device_options(p, a, choice)
    target_list = _check_tools(p, a)
    if a.low_precision:
        algos = ("lp",)
    elif a.collective == "all_reduce":
        algos = allreduce_algos() if a.algo == "all" else (a.algo or "auto",)
    else:
        algos = ("-",)
    cfg = Config(
        collective=a.collective,
        minbytes=a.minbytes,
        maxbytes=a.maxbytes,
        stepfactor=a.stepfactor,
        iters=a.iters,
        warmup_iters=a.warmup_iters,
        check=bool(a.check),
        datatype=a.datatype,
        redop=a.redop or "sum",
        algos=algos,
        statistic="median" if a.median else "mean",
        device=choice.kind,
        device_reason=choice.reason,
        graph=a.graph or 0,
        inplace=a.inplace or a.symmetric,
        low_precision=a.low_precision,
        determinism=a.check_determinism,
        symmetric=a.symmetric,
        tuning=a.tuning,
        compare=a.compare,
        passes=a.passes,
        targets=a.targets,
        strict_targets=a.strict_targets,
        json_path=a.json,
        plot_path=a.plot,
        hosts=a.hosts,
        mps=a.mps,
    )
    return cfg, a.nranks, choice.ngpus, target_list, a.repeat


def main(argv: list[str] | None = None) -> int:
    cfg, nranks, ngpus, target_list, repeats = config_from_args(argv)
    if launch.under_torchrun():
        world_size = int(os.environ["WORLD_SIZE"])
        if nranks is not None and nranks != world_size:
            print(
                f"rcclx-perf: error: --nranks {nranks} differs from torchrun's WORLD_SIZE "
                f"{world_size}",
                file=sys.stderr,
            )
            return 2
        if cfg.hosts != 1:
            print(
                "rcclx-perf: error: --hosts is for local ranks; torchrun places ranks on its "
                "own hosts",
                file=sys.stderr,
            )
            return 2
        if repeats > 1:
            print(
                f"rcclx-perf: error: --repeat {repeats} starts its own ranks; under torchrun run "
                "the command several times instead",
                file=sys.stderr,
            )
            return 2
        if cfg.mps:
            print(
                "rcclx-perf: error: --mps starts a daemon for the ranks it starts; under torchrun "
                "start MPS before torchrun",
                file=sys.stderr,
            )
            return 2
        return launch.run_torchrun(cfg, ngpus, target_list)
    default_ranks = ngpus if cfg.device == "cuda" else 2
    daemon = mps.Daemon().start() if cfg.mps and not mps.active() else None
    try:
        if repeats > 1:
            return repeat.run_repeated(cfg, nranks or default_ranks, ngpus, repeats)
        return launch.launch_local(cfg, nranks or default_ranks, ngpus, target_list)
    finally:
        if daemon is not None:
            daemon.stop()
