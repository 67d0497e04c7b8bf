"""What rank 0 prints (a header, one line per size and algorithm, totals, the per-size summary
and the targets' verdicts, as nccl-tests prints its table) and writes (``--json``, ``--plot``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TextIO

from rcclx_core.perf import check, targets
from rcclx_core.perf.peers import DESCRIPTIONS, LABELS, columns_of
from rcclx_core.perf.spec import Config, format_bytes
from rcclx_core.perf.summary import row_label, size_summary

EXIT_TARGETS_NOT_MET = 4  # with --strict-targets (1: wrong values, 2: command line, 3: a rank)


def peer_columns(cfg: Config) -> list[str]:
    return [c for p in cfg.compare for c in columns_of(p, cfg.collective)]


def _mode_lines(cfg: Config) -> list[str]:
    if cfg.graph:
        return [
            f"mode: graph: {cfg.graph} ops captured in one CUDA graph; each timed iteration is "
            f"one replay queued behind a GPU sleep; time = replay time / {cfg.graph}"
        ]
    if cfg.device == "cuda":
        return [
            "mode: eager: calls issued back to back on the current stream; time = GPU time per "
            "op (CUDA events",
            "  just before and after each call); host(us) = the host's time to issue one call",
        ]
    return ["mode: eager: every call runs on the host and is timed on its own (perf_counter)"]


class Report:
    """Rank 0's output: ``header()``, then ``add(row)`` per row as it is measured, ``finish()``.

    A row (runner.make_row) is a dict: size, count, type, algo (and for auto: selected,
    reason), the slowest rank's mean / median / min / max and the reported ``time`` in
    microseconds (eager on a GPU also ``host``: the host's time per call), algbw and busbw in
    GB/s, wrong (summed over ranks) or with --low-precision max_error, and with --compare
    ``peers``: per peer column the same fields and ``ratio`` (our time / the peer's), or ``na``
    (the reason it printed ``-``).
    """

    def __init__(
        self,
        cfg: Config,
        nranks: int,
        description: str,
        out: TextIO | None = None,
        target_list: list | None = None,
        sharing: str = "",
    ):
        self.cfg, self.nranks, self.description = cfg, nranks, description
        self.sharing = sharing
        self.out = out or sys.stdout
        self.rows: list[dict] = []
        self.targets = target_list or []
        self.peers = peer_columns(cfg)
        self.bound = check.lp_bound(cfg, nranks) if cfg.low_precision else None
        host = [("host(us)", 10)] if cfg.device == "cuda" and not cfg.graph else []
        checked = [("maxerr", 9)] if cfg.low_precision else [("#wrong", 7)]
        self.columns = [
            ("size(B)", 13),
            ("count(elems)", 13),
            ("type", 9),
            ("algo", 15),
            ("time(us)", 11),
            *host,
            ("algbw(GB/s)", 12),
            ("busbw(GB/s)", 12),
            *checked,
        ]
        for p in self.peers:
            width = len(LABELS[p])
            self.columns += [
                (f"{LABELS[p]}(us)", max(10, width + 5)),
                (f"ours/{LABELS[p]}", max(11, width + 6)),
            ]

    def _print(self, line: str = "") -> None:
        print(line, file=self.out, flush=True)

    def _header_lines(self) -> list[str]:
        cfg = self.cfg
        op = cfg.redop if cfg.coll.reduces else "none"
        layout = "in place (nccl-tests' layout)" if cfg.inplace else "out of place"
        if cfg.symmetric:
            layout += ", buffers in a comm.alloc_symmetric buffer"
        lines = [
            f"rcclx-perf: {cfg.collective}, type {cfg.datatype}, op {op}, {self.nranks} ranks "
            f"({self.description}), algo {','.join(cfg.algos)}",
            f"device: {cfg.device} ({cfg.device_reason})",
            *([f"ranks share GPUs: {self.sharing}"] if self.sharing else []),
            *_mode_lines(cfg),
            f"layout: {layout}",
        ]
        if cfg.low_precision:
            lines.append(
                "low precision: FP8 e4m3 on the wire (low_precision=True); maxerr = max|out - "
                f"ref| / max|ref| against float64, bound {self.bound:.4g}"
            )
        if cfg.tuning is not None:
            lines.append(f"tuning: _testing.set_gpu_tuning(comm, '{cfg.tuning}') for every row")
        passes = f"; best of {cfg.passes} passes" if cfg.passes > 1 else ""
        lines += [
            f"sizes {format_bytes(cfg.minbytes)} .. {format_bytes(cfg.maxbytes)} bytes, "
            f"x{cfg.stepfactor} per step; {cfg.warmup_calls} warm-up + {cfg.iters} timed "
            f"iterations per size{passes}",
            f"time = {cfg.statistic} over iterations, of the slowest rank; busbw = algbw * "
            f"{cfg.coll.busbw}",
        ]
        if not cfg.check:
            lines.append("check: off")
        elif cfg.low_precision:
            lines.append("check: every element against the float64 reference (maxerr)")
        elif cfg.determinism:
            lines.append(
                "check: every element's bits against the fold order, inputs over eight decades "
                "(docs/determinism.rst; 0 = OK)"
            )
        else:
            lines.append("check: every element against an exact reference (0 = OK)")
        if self.peers:
            names = ", ".join(f"{LABELS[p]} ({DESCRIPTIONS[p]})" for p in self.peers)
            lines.append(f"compare: {names}")
            lines.append("  ours/<peer> = our time / the peer's time (below 1: ours faster)")
        return lines

    def header(self) -> None:
        for line in self._header_lines():
            self._print(f"# {line}")
        self._print("#")
        self._print("#" + " ".join(f"{name:>{width}}" for name, width in self.columns)[1:])

    def _cells(self, row: dict) -> list[str]:
        cfg = self.cfg
        cells = [row["size"], row["count"], row["type"], row_label(row), f"{row['time']:.2f}"]
        if cfg.device == "cuda" and not cfg.graph:
            cells.append(f"{row['host_time']:.2f}")
        cells += [f"{row['algbw']:.3f}", f"{row['busbw']:.3f}"]
        if not cfg.check:
            cells.append("N/A")
        elif cfg.low_precision:
            cells.append(f"{row['max_error']:.2e}")
        else:
            cells.append(row["wrong"])
        for p in self.peers:
            entry = row.get("peers", {}).get(p, {})
            cells.append(f"{entry['time']:.2f}" if "time" in entry else "-")
            cells.append(f"{entry['ratio']:.3f}" if "ratio" in entry else "-")
        return [str(c) for c in cells]

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if "skipped" in row:
            return  # listed once, with the reason, by finish()
        cells = self._cells(row)
        self._print(" ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, self.columns)).rstrip())

    def totals(self) -> dict:
        timed = [r for r in self.rows if "busbw" in r]
        peer_entries = [(p, r["peers"][p]) for r in self.rows for p in r.get("peers", {})]
        out = {
            "wrong": sum(r.get("wrong", 0) for r in timed),
            "max_error": max((r.get("max_error", 0.0) for r in timed), default=0.0),
            "lp_bound": self.bound,
            "avg_busbw": sum(r["busbw"] for r in timed) / len(timed) if timed else 0.0,
            "skipped": sorted(
                {f"{r['algo']}: {r['skipped']}" for r in self.rows if "skipped" in r}
            ),
            "peer_na": {
                p: sorted({e["na"] for q, e in peer_entries if q == p and "na" in e})
                for p in self.peers
            },
            "peer_wrong": {
                p: sum(e["wrong"] for q, e in peer_entries if q == p and "wrong" in e)
                for p in self.peers
                if any(q == p and "wrong" in e for q, e in peer_entries)
            },
            "peer_max_error": {
                p: max(e["max_error"] for q, e in peer_entries if q == p and "max_error" in e)
                for p in self.peers
                if any(q == p and "max_error" in e for q, e in peer_entries)
            },
        }
        return out

    def _print_totals(self, t: dict) -> None:
        for note in t["skipped"]:
            self._print(f"# skipped {note}")
        for p, reasons in t["peer_na"].items():
            for reason in reasons:
                self._print(f"# {LABELS[p]} printed -: {reason}")
        for p, wrong in t["peer_wrong"].items():
            self._print(f"# {LABELS[p]} wrong values: {wrong}")
        for p, error in t["peer_max_error"].items():
            self._print(f"# {LABELS[p]} max error (full precision): {error:.3e}")
        if self.cfg.check and self.cfg.low_precision:
            ok = "OK" if t["max_error"] <= self.bound else "FAILED"
            self._print(
                f"# Low precision max error : {t['max_error']:.3e} (bound {self.bound:.4g}) {ok}"
            )
        elif self.cfg.check:
            self._print(
                f"# Out of bounds values : {t['wrong']} {'OK' if t['wrong'] == 0 else 'FAILED'}"
            )
        self._print(f"# Avg bus bandwidth    : {t['avg_busbw']:.4f} GB/s")

    def _print_summary(self, summary: list[dict]) -> None:
        if not summary:
            return
        self._print("#")
        self._print("# Summary per size: our best row; ours/peer = its time / the best peer's")
        self._print(
            f"# {'size(B)':>12} {'best ours':>16} {'time(us)':>10} {'best peer':>10} "
            f"{'time(us)':>10} {'ours/peer':>10}"
        )
        for s in summary:
            peer = LABELS.get(s.get("best_peer", ""), "-")
            peer_time = f"{s['peer_time']:.2f}" if "peer_time" in s else "-"
            ratio = f"{s['ratio']:.3f}" if "ratio" in s else "-"
            self._print(
                f"# {s['size']:>12} {s['best']:>16} {s['time']:>10.2f} {peer:>10} "
                f"{peer_time:>10} {ratio:>10}"
            )

    def _print_targets(self, verdicts: list[dict]) -> None:
        if not self.targets:
            return
        self._print("#")
        self._print(f"# Targets ({self.cfg.targets}):")
        for v in verdicts:
            if v["verdict"] == "not measured":
                self._print(f"#   {'not measured':>12}  {v['target']}")
                continue
            where = f"{v['target']}; {v['size']} B"
            if "ratio" in v:
                vs = f"{v['ours']} vs {LABELS.get(v['versus'], v['versus'])}"
                self._print(f"#   {v['verdict']:>12}  {v['ratio']:6.3f}  {where}: {vs}")
            else:
                self._print(f"#   {v['verdict']:>12}  {'-':>6}  {where}: {v['why']}")
        counts = {k: sum(v["verdict"] == k for v in verdicts) for k in _VERDICTS}
        self._print("#   " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))

    def finish(self) -> int:
        """Prints the end of the report and writes the files; returns EXIT_TARGETS_NOT_MET when
        --strict-targets and a target was not met, else 0."""
        t = self.totals()
        self._print_totals(t)
        summary = size_summary(self.rows)
        self._print_summary(summary)
        verdicts = targets.evaluate(self.targets, self.cfg, self.rows)
        self._print_targets(verdicts)
        self._print()
        if self.cfg.json_path:
            self.write_json(self.cfg.json_path, t, summary, verdicts)
        if self.cfg.plot_path:
            from rcclx_core.perf.plot import write_plot

            write_plot(self.cfg.plot_path, self.cfg, self.nranks, self.rows, self.peers)
            self._print(f"# wrote {self.cfg.plot_path}")
        not_met = any(v["verdict"] == "NOT MET" for v in verdicts)
        return EXIT_TARGETS_NOT_MET if self.cfg.strict_targets and not_met else 0

    def write_json(self, path: str, totals: dict, summary: list, verdicts: list) -> None:
        cfg = self.cfg
        doc = {
            "tool": "rcclx-perf",
            "nranks": self.nranks,
            "launch": self.description,
            "device": cfg.device,
            "device_reason": cfg.device_reason,
            "mode": cfg.mode,
            "inplace": cfg.inplace,
            "low_precision": cfg.low_precision,
            "tuning": cfg.tuning,
            "compare": list(cfg.compare),
            "peer_columns": self.peers,
            "units": {"time": "us", "bandwidth": "GB/s (1e9 bytes per second)", "size": "bytes"},
            "config": dataclasses.asdict(cfg),
            "rows": self.rows,
            "totals": totals,
            "summary": summary,
            "targets": verdicts,
        }
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        self._print(f"# wrote {path}")


_VERDICTS = ("met", "NOT MET", "no data", "not measured")
