"""``rcclx-perf --repeat R``: the same sweep R times, each in a fresh set of processes, and per
size and column how much the runs' times differ.

A timing that holds in one process may not in the next (where the pages land, which core each
rank gets, what else the machine runs): the median over iterations hides none of that, so each
run starts a new Python interpreter (``python -m rcclx_core.perf.repeat CONFIG``) that launches
new ranks. Each run's rows come back through its ``--json`` file; this module prints, per size
and column, the median over runs of the run's time (the median of medians when ``--median``),
the fastest and slowest run and the spread (slowest / fastest), then per size our best column
against the best peer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import TextIO

from rcclx_core.perf import launch
from rcclx_core.perf.peers import LABELS
from rcclx_core.perf.spec import Config


def _child_config(cfg: Config, json_path: str) -> dict:
    one = dataclasses.replace(cfg, json_path=json_path, plot_path=None, targets=None)
    return dataclasses.asdict(one)


def _config_from(doc: dict) -> Config:
    """The Config a run's spec file holds (JSON has lists where the Config has tuples)."""
    names = {f.name for f in dataclasses.fields(Config)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in names}
    return Config(**values)


def _one_run(cfg: Config, nranks: int, ngpus: int, workdir: str, index: int) -> tuple[int, str]:
    """Runs the sweep once in a new interpreter; returns its exit code and its output."""
    result = os.path.join(workdir, f"run{index}.json")
    spec = os.path.join(workdir, f"run{index}.config.json")
    with open(spec, "w") as f:
        json.dump({"config": _child_config(cfg, result), "nranks": nranks, "ngpus": ngpus}, f)
    proc = subprocess.run(
        [sys.executable, "-m", "rcclx_core.perf.repeat", spec],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc.returncode, proc.stdout


def _column_times(doc: dict) -> dict[tuple[int, str], tuple[float, str]]:
    """{(size, column): (time, label)} of one run: our algorithms by name, peers by column."""
    out = {}
    for row in doc["rows"]:
        if "time" not in row:
            continue
        algo = row.get("algo", "-")
        label = f"auto({row['selected']})" if algo == "auto" and row.get("selected") else algo
        out[(row["size"], algo)] = (row["time"], label)
        for name, peer in row.get("peers", {}).items():
            if "time" in peer:
                out[(row["size"], f"peer:{name}")] = (peer["time"], LABELS.get(name, name))
    return out


def stability(docs: list[dict]) -> list[dict]:
    """Per size and column (in the runs' order): the runs' times, their median, min, max and
    spread; columns missing from some run are reported over the runs that have them."""
    per_run = [_column_times(d) for d in docs]
    keys = list(dict.fromkeys(k for run in per_run for k in run))
    out = []
    for size, column in sorted(keys, key=lambda k: (k[0], k[1].startswith("peer:"))):
        got = [run[(size, column)] for run in per_run if (size, column) in run]
        times = [t for t, _ in got]
        labels = list(dict.fromkeys(label for _, label in got))
        out.append(
            {
                "size": size,
                "column": column,
                "peer": column.startswith("peer:"),
                "label": "|".join(labels) if column != "auto" else _auto_label(labels),
                "runs": times,
                "median": statistics.median(times),
                "min": min(times),
                "max": max(times),
                "spread": max(times) / min(times),
            }
        )
    return out


def _auto_label(labels: list[str]) -> str:
    chosen = [label[len("auto(") : -1] for label in labels if label.startswith("auto(")]
    return f"auto({'|'.join(chosen)})" if chosen else "auto"


def per_size(rows: list[dict]) -> list[dict]:
    """Per size: our fastest column by its median over runs (auto only when it is alone) and
    the fastest peer's, with ours / peer and each one's spread."""
    out = []
    for size in dict.fromkeys(r["size"] for r in rows):
        group = [r for r in rows if r["size"] == size]
        ours = [r for r in group if not r["peer"]]
        explicit = [r for r in ours if r["column"] != "auto"] or ours
        entry: dict = {"size": size}
        if explicit:
            mine = min(explicit, key=lambda r: r["median"])
            entry.update(best=mine["label"], time=mine["median"], spread=mine["spread"])
        peers = [r for r in group if r["peer"]]
        if peers and explicit:
            peer = min(peers, key=lambda r: r["median"])
            entry.update(
                best_peer=peer["label"],
                peer_time=peer["median"],
                peer_spread=peer["spread"],
                ratio=entry["time"] / peer["median"],
            )
        out.append(entry)
    return out


def scheduling(docs: list[dict], rows: list[dict]) -> list[dict]:
    """Per size, the fastest and the slowest run of our best column (by median over runs): the
    run, its time and every rank's scheduling record (sched.py) while that column was timed."""
    out = []
    for size in dict.fromkeys(r["size"] for r in rows):
        ours = [r for r in rows if r["size"] == size and not r["peer"]]
        explicit = [r for r in ours if r["column"] != "auto"] or ours
        if not explicit:
            continue
        best = min(explicit, key=lambda r: r["median"])
        times = [(_column_times(d).get((size, best["column"])), k) for k, d in enumerate(docs)]
        timed = [(t[0], k) for t, k in times if t is not None]
        if len(timed) != len(docs):
            continue  # a run without the column: the runs do not line up
        for which, (time_us, k) in (("fastest", min(timed)), ("slowest", max(timed))):
            records = next(
                (
                    r.get("sched")
                    for r in docs[k]["rows"]
                    if r["size"] == size and r.get("algo") == best["column"]
                ),
                None,
            )
            rows_k = docs[k]["rows"]
            link = next((r["link"] for r in rows_k if r["size"] == size and "link" in r), None)
            out.append(
                {
                    "size": size,
                    "which": which,
                    "run": k + 1,
                    "time": time_us,
                    "ranks": records,
                    "link": link,
                }
            )
    return out


def _sched_cell(record: dict | None) -> str:
    if not record:
        return "-"
    parts = [str(record.get(k, "?")) for k in ("voluntary", "involuntary", "migrations")]
    return "/".join(parts) + (f"@{record['cpu']}" if "cpu" in record else "")


def _link_cell(link: dict | None) -> str:
    if not link:
        return "-"
    return f"{link['round_trip_ns']:.0f} ns {link['handoff_64k_us']:.1f} us"


def _print_scheduling(entries: list[dict], out) -> None:
    p = lambda line="": print(line, file=out, flush=True)  # noqa: E731
    p("# Scheduling in each size's fastest and slowest run of our best column: per rank, while")
    p("# that column was timed, context switches of all its process's threads (voluntary /")
    p("# involuntary), their moves between CPUs, and @ the CPU its timing thread ended on;")
    p("# steal = ms the host held this machine's CPUs back meanwhile (rank 0's reading);")
    p("# link = round trip of a cache line and of 64 KiB between two CPUs, right after the size")
    p(f"# {'size(B)':>12} {'run':>12} {'time(us)':>11} {'steal':>6} {'link':>17}  ranks")
    for e in entries:
        ranks = e["ranks"] or [None]
        cells = " ".join(f"{_sched_cell(r):>18}" for r in ranks)
        steal = (ranks[0] or {}).get("steal_ms")
        p(
            f"  {e['size']:>12} {e['which'] + ' ' + str(e['run']):>12} {e['time']:>11.2f} "
            f"{'-' if steal is None else steal:>6} {_link_cell(e.get('link')):>17}  {cells}"
        )
    p()


def _print_tables(cfg: Config, repeat: int, rows: list[dict], sizes: list[dict], out) -> None:
    stat = f"{cfg.statistic}s"
    p = lambda line="": print(line, file=out, flush=True)  # noqa: E731
    p("#")
    p(f"# Stability over {repeat} runs, each in fresh processes: per size and column the median")
    p(f"# over runs of each run's time (the {stat} over iterations), the fastest and slowest run,")
    p("# spread = slowest / fastest")
    p(
        f"# {'size(B)':>12} {'column':>24} {'median(us)':>11} {'min(us)':>11} {'max(us)':>11} "
        f"{'spread':>7}"
    )
    for r in rows:
        p(
            f"  {r['size']:>12} {r['label']:>24} {r['median']:>11.2f} {r['min']:>11.2f} "
            f"{r['max']:>11.2f} {r['spread']:>7.2f}"
        )
    p("#")
    p("# Per size: our best column and the best peer by their medians over runs;")
    p("# ours/peer = our median / the peer's (below 1: ours faster)")
    p(
        f"# {'size(B)':>12} {'best ours':>18} {'median(us)':>11} {'spread':>7} "
        f"{'best peer':>10} {'median(us)':>11} {'spread':>7} {'ours/peer':>10}"
    )
    for s in sizes:
        if "best" not in s:
            continue
        peer = s.get("best_peer", "-")
        peer_time = f"{s['peer_time']:.2f}" if "peer_time" in s else "-"
        peer_spread = f"{s['peer_spread']:.2f}" if "peer_spread" in s else "-"
        ratio = f"{s['ratio']:.4f}" if "ratio" in s else "-"
        p(
            f"  {s['size']:>12} {s['best']:>18} {s['time']:>11.2f} {s['spread']:>7.2f} "
            f"{peer:>10} {peer_time:>11} {peer_spread:>7} {ratio:>10}"
        )
    p()


def run_repeated(
    cfg: Config, nranks: int, ngpus: int, repeat: int, out: TextIO | None = None
) -> int:
    """Runs the sweep ``repeat`` times in fresh processes and prints the stability tables;
    returns 0, or the exit code of the first run that did not pass (after its output)."""
    out = out or sys.stdout
    print(
        f"# rcclx-perf --repeat {repeat}: {cfg.collective}, {nranks} ranks, algo "
        f"{','.join(cfg.algos)}, device {cfg.device}; each run a new interpreter and new ranks",
        file=out,
        flush=True,
    )
    docs = []
    with tempfile.TemporaryDirectory(prefix="rcclx-perf-repeat-") as workdir:
        for k in range(repeat):
            start = time.monotonic()
            code, output = _one_run(cfg, nranks, ngpus, workdir, k)
            took = time.monotonic() - start
            print(f"# run {k + 1}/{repeat}: exit {code}, {took:.0f} s", file=out, flush=True)
            if code != 0:  # wrong values or a failed rank: the run's own report says which
                print(output, file=out, end="", flush=True)
                return code
            with open(os.path.join(workdir, f"run{k}.json")) as f:
                docs.append(json.load(f))
    rows = stability(docs)
    sizes = per_size(rows)
    _print_tables(cfg, repeat, rows, sizes, out)
    _print_scheduling(scheduling(docs, rows), out)
    if cfg.json_path:
        with open(cfg.json_path, "w") as f:
            json.dump(
                {
                    "tool": "rcclx-perf",
                    "repeat": repeat,
                    "stability": rows,
                    "per_size": sizes,
                    "runs": docs,
                },
                f,
                indent=1,
            )
        print(f"# wrote {cfg.json_path}", file=out, flush=True)
    return 0


def _child_main(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    return launch.launch_local(_config_from(spec["config"]), spec["nranks"], spec["ngpus"], [])


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1]))
