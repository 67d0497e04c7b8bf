"""The ``rcclx-perf`` command line: options in the manner of nccl-tests, then the launch."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from rcclx_core.perf import launch
from rcclx_core.perf.spec import (
    COLLECTIVES,
    DTYPE_ALIASES,
    DTYPES,
    REDOPS,
    Config,
    allreduce_algos,
    parse_bytes,
)

_EPILOG = """\
Ranks: by default rcclx-perf starts --nranks processes on this host. Under torchrun (RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT set) it runs as that one rank instead, e.g.
  torchrun --nproc-per-node 4 -m rcclx_core.perf -b 1K -e 16M

Reported time: every iteration is timed on its own; each rank takes the mean (or --median) of
its iterations and the slowest rank's is reported. algbw = size / time; busbw = algbw times
nccl-tests' factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;
broadcast, reduce 1). size is the larger per-rank buffer; count is the count argument of the
NCCL API (all_gather's send count, reduce_scatter's receive count, all_to_all's per-peer count).

Exit status: 0 ok, 1 wrong values found, 2 bad command line, 3 a rank failed.
"""


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rcclx-perf",
        description="Times and checks RCCLX collectives over a range of "
        "sizes, in the manner of nccl-tests.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--collective", choices=list(COLLECTIVES), default="all_reduce")
    p.add_argument("-b", "--minbytes", type=_bytes, default="64", help="smallest size (64)")
    p.add_argument("-e", "--maxbytes", type=_bytes, default="64M", help="largest size (64M)")
    p.add_argument("-f", "--stepfactor", type=int, default=4, help="size multiplier (4)")
    p.add_argument("-n", "--iters", type=int, default=100, help="timed iterations (100)")
    p.add_argument("-w", "--warmup_iters", type=int, default=10, help="warm-up iterations (10)")
    p.add_argument(
        "-c",
        "--check",
        type=int,
        choices=(0, 1),
        default=1,
        help="check every element of the result (1)",
    )
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
    p.add_argument(
        "-g", "--nranks", type=int, default=None, help="ranks (processes) to start on this host (2)"
    )
    p.add_argument(
        "--median", action="store_true", help="report the median iteration time instead of the mean"
    )
    p.add_argument(
        "--compare",
        choices=["gloo"],
        default=None,
        help="also time torch.distributed's gloo on the same data",
    )
    p.add_argument("--json", metavar="FILE", help="write every result as JSON")
    p.add_argument("--plot", metavar="FILE", help="draw busbw against size (needs matplotlib)")
    return p


def config_from_args(argv: list[str] | None = None) -> tuple[Config, int | None]:
    """The run's Config and the requested --nranks (None: not given); exits 2 on a bad line."""
    p = build_parser()
    a = p.parse_args(argv)
    coll = COLLECTIVES[a.collective]
    if a.redop is not None and not coll.reduces:
        p.error(f"--redop does not apply to {a.collective}")
    if a.algo is not None and a.collective != "all_reduce":
        p.error("--algo applies to all_reduce only")
    if a.minbytes < 1 or a.maxbytes < a.minbytes:
        p.error(f"sizes must satisfy 1 <= minbytes ({a.minbytes}) <= maxbytes ({a.maxbytes})")
    if a.stepfactor < 2:
        p.error(f"--stepfactor {a.stepfactor} must be at least 2")
    if a.iters < 1 or a.warmup_iters < 0:
        p.error("--iters must be at least 1 and --warmup_iters at least 0")
    if a.nranks is not None and a.nranks < 1:
        p.error(f"--nranks {a.nranks} must be at least 1")
    if a.compare == "gloo" and importlib.util.find_spec("torch") is None:
        p.error("--compare gloo needs torch (pip install 'rcclx-core[compare]')")
    if a.plot and importlib.util.find_spec("matplotlib") is None:
        p.error("--plot needs matplotlib (pip install 'rcclx-core[plot]')")
    algo = a.algo or ("auto" if a.collective == "all_reduce" else "-")
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
        algos=allreduce_algos() if algo == "all" else (algo,),
        statistic="median" if a.median else "mean",
        compare=a.compare,
        json_path=a.json,
        plot_path=a.plot,
    )
    return cfg, a.nranks


def main(argv: list[str] | None = None) -> int:
    cfg, nranks = config_from_args(argv)
    if launch.under_torchrun():
        world_size = int(os.environ["WORLD_SIZE"])
        if nranks is not None and nranks != world_size:
            print(
                f"rcclx-perf: --nranks {nranks} differs from torchrun's WORLD_SIZE {world_size}",
                file=sys.stderr,
            )
            return 2
        return launch.run_torchrun(cfg)
    return launch.launch_local(cfg, nranks or 2)
