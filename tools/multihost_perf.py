"""rcclx-perf across test hosts: the ranks placed on H pretend machines (network namespaces
joined by veths on a bridge, tests/multihost/hosts.py), so that ranks on different hosts talk
over their eth0 only, as on a cluster, and rcclx-perf runs under torchrun's environment (rank 0
on host 0, MASTER_ADDR its address). Root only. Prints rank 0's table, with every --compare
peer (gloo) on the same data.

    python tools/multihost_perf.py --hosts 2 --ranks-per-host 2 -- \\
        --device cpu --collective all_reduce --algo all --compare gloo -b 4K -e 64M -f 4

Everything after ``--`` goes to rcclx-perf (not --hosts or -g: the placement is this tool's).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS / "multihost"), str(TESTS)]


def _perf_rank(ctx, argv: list[str], port: int, placement: list[int]) -> str:
    """One rank of rcclx-perf, under torchrun's variables; returns what it printed."""
    from rcclx_core.perf import cli

    host = placement[ctx.rank]
    os.environ.update(
        MASTER_ADDR="10.77.0.1",
        MASTER_PORT=str(port),
        RANK=str(ctx.rank),
        WORLD_SIZE=str(len(placement)),
        LOCAL_RANK=str(placement[: ctx.rank].count(host)),
        LOCAL_WORLD_SIZE=str(placement.count(host)),
    )
    # The test hosts' names resolve to no address of theirs: gloo binds its interface, as a
    # cluster job whose host names do not resolve sets it.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(argv)
    if code not in (0, None):
        raise RuntimeError(f"rcclx-perf exited with {code} on rank {ctx.rank}:\n{out.getvalue()}")
    return _between_hosts() + out.getvalue()


def _between_hosts() -> str:
    """A header line: the transport between hosts as RCCLX_NET_TRANSPORT asks for it, and the
    UCX library a rank found (auto takes ucx only when every rank loads one)."""
    import ctran

    found, missing = ctran.ucx_library()
    want = os.environ.get("RCCLX_NET_TRANSPORT", "auto")
    return f"# between hosts: RCCLX_NET_TRANSPORT={want}; ucx: {found or missing}\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    perf_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--ranks-per-host", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole run")
    a = p.parse_args(own)
    if a.hosts < 1 or a.ranks_per_host < 1:
        p.error(f"--hosts {a.hosts} and --ranks-per-host {a.ranks_per_host} must be at least 1")
    for flag in ("--hosts", "-g", "--nranks"):
        if flag in perf_args:
            p.error(f"{flag} is set by the placement, not passed to rcclx-perf")

    import checks
    import hosts

    import ctran  # noqa: F401 - sets RCCLX_UCX_WHEEL_DIR (the libucx wheel), which ranks inherit

    # The ranks unpickle the rank function by module name: this file, importable there.
    tools = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [tools, *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    import multihost_perf

    reason = hosts.unavailable_reason()
    if reason:
        print(f"multihost_perf: {reason}", file=sys.stderr)
        return 2
    placement = [h for h in range(a.hosts) for _ in range(a.ranks_per_host)]
    with hosts.Cluster(a.hosts, preload=("torch",)) as cluster:
        results = cluster.launch(
            multihost_perf._perf_rank,
            placement,
            perf_args,
            checks.free_port(),
            placement,
            timeout=a.timeout,
        )
    print(
        f"# {a.hosts} test hosts x {a.ranks_per_host} ranks, veths on a bridge "
        "(tools/multihost_perf.py)"
    )
    print(results[0].value, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
