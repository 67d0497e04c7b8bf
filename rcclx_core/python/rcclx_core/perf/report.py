"""What rank 0 prints (a header, one line per size and algorithm, a summary, as nccl-tests does)
and writes (``--json``, ``--plot``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TextIO

from rcclx_core.perf.spec import Config, format_bytes

_BUSBW = {"all_reduce": "2(n-1)/n", "broadcast": "1", "reduce": "1"}
_COLUMNS = [
    ("size(B)", 13),
    ("count(elems)", 13),
    ("type", 9),
    ("algo", 15),
    ("time(us)", 11),
    ("algbw(GB/s)", 12),
    ("busbw(GB/s)", 12),
    ("#wrong", 7),
]
_GLOO_COLUMNS = [("gloo(us)", 11), ("speedup", 8)]


def _algo_label(row: dict) -> str:
    if row.get("algo") == "auto" and row.get("selected"):
        return f"auto({row['selected']})"
    return row.get("algo", "-")


class Report:
    """Rank 0's output: ``header()``, then ``add(row)`` per row as it is measured, ``finish()``.

    A row is a dict: size, count, type, algo (and for auto: selected, reason), the slowest
    rank's mean / median / min / max and the reported ``time`` in microseconds, algbw and busbw
    in GB/s, wrong (summed over ranks), and for ``--compare``: gloo (the same fields) and speedup.
    """

    def __init__(self, cfg: Config, nranks: int, description: str, out: TextIO | None = None):
        self.cfg, self.nranks, self.description = cfg, nranks, description
        self.out = out or sys.stdout
        self.rows: list[dict] = []
        self.columns = _COLUMNS + (_GLOO_COLUMNS if cfg.compare else [])

    def _print(self, line: str = "") -> None:
        print(line, file=self.out, flush=True)

    def header(self) -> None:
        cfg = self.cfg
        op = cfg.redop if cfg.coll.reduces else "none"
        algos = ",".join(cfg.algos)
        check = "off" if not cfg.check else "every element against an exact reference (0 = OK)"
        self._print(
            f"# rcclx-perf: {cfg.collective}, type {cfg.datatype}, op {op}, "
            f"{self.nranks} ranks ({self.description}), algo {algos}"
        )
        self._print(
            f"#   sizes {format_bytes(cfg.minbytes)} .. {format_bytes(cfg.maxbytes)} "
            f"bytes, x{cfg.stepfactor} per step; {cfg.warmup_iters} warm-up + "
            f"{cfg.iters} timed iterations per size"
        )
        self._print(
            f"#   time = {cfg.statistic} over iterations, of the slowest rank; "
            f"busbw = algbw * {_BUSBW.get(cfg.collective, '(n-1)/n')}"
        )
        self._print(
            f"#   check: {check}"
            + (f"; compare: {cfg.compare} (torch.distributed)" if cfg.compare else "")
        )
        self._print("#")
        self._print("#" + " ".join(f"{name:>{width}}" for name, width in self.columns)[1:])

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if "skipped" in row:
            return  # listed once, with the reason, by finish()
        cells = [
            row["size"],
            row["count"],
            row["type"],
            _algo_label(row),
            f"{row['time']:.2f}",
            f"{row['algbw']:.3f}",
            f"{row['busbw']:.3f}",
            row["wrong"] if self.cfg.check else "N/A",
        ]
        if self.cfg.compare:
            gloo = row.get("gloo") or {}
            cells.append(f"{gloo['time']:.2f}" if "time" in gloo else "n/a")
            cells.append(f"{row['speedup']:.2f}" if "speedup" in row else "n/a")
        self._print(" ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, self.columns)).rstrip())

    def summary(self) -> dict:
        timed = [r for r in self.rows if "busbw" in r]
        gloo = [r["gloo"] for r in self.rows if "gloo" in r]
        return {
            "wrong": sum(r.get("wrong", 0) for r in timed),
            "avg_busbw": sum(r["busbw"] for r in timed) / len(timed) if timed else 0.0,
            "gloo_wrong": sum(g.get("wrong", 0) for g in gloo) if gloo else None,
            "gloo_errors": sorted({g["error"] for g in gloo if "error" in g}),
            "skipped": sorted(
                {f"{r['algo']}: {r['skipped']}" for r in self.rows if "skipped" in r}
            ),
        }

    def finish(self) -> None:
        s = self.summary()
        for note in s["skipped"]:
            self._print(f"# skipped {note}")
        for error in s["gloo_errors"]:
            self._print(f"# gloo n/a: {error}")
        if self.cfg.compare and self.cfg.check:
            self._print(f"# gloo wrong values    : {s['gloo_wrong']}")
        if self.cfg.check:
            self._print(
                f"# Out of bounds values : {s['wrong']} {'OK' if s['wrong'] == 0 else 'FAILED'}"
            )
        self._print(f"# Avg bus bandwidth    : {s['avg_busbw']:.4f} GB/s")
        self._print()
        if self.cfg.json_path:
            self.write_json(self.cfg.json_path, s)
        if self.cfg.plot_path:
            self.write_plot(self.cfg.plot_path)

    def write_json(self, path: str, summary: dict) -> None:
        doc = {
            "tool": "rcclx-perf",
            "nranks": self.nranks,
            "launch": self.description,
            "units": {"time": "us", "bandwidth": "GB/s (1e9 bytes per second)", "size": "bytes"},
            "config": dataclasses.asdict(self.cfg),
            "rows": self.rows,
            "summary": summary,
        }
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        self._print(f"# wrote {path}")

    def write_plot(self, path: str) -> None:
        """Bus bandwidth against size, one line per algorithm (and gloo)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        lines: dict[str, tuple[list, list]] = {}
        factor = self.cfg.coll.busbw_factor(self.nranks)
        for r in self.rows:
            if "busbw" in r:
                xs, ys = lines.setdefault(f"rcclx {r['algo']}".rstrip(" -"), ([], []))
                xs.append(r["size"])
                ys.append(r["busbw"])
        for size, gloo in sorted({r["size"]: r["gloo"] for r in self.rows if "gloo" in r}.items()):
            if "time" in gloo:
                xs, ys = lines.setdefault("gloo", ([], []))
                xs.append(size)
                ys.append(size / max(gloo["time"], 1e-3) / 1e3 * factor)
        fig, ax = plt.subplots(figsize=(8, 5))
        for label, (xs, ys) in lines.items():
            ax.plot(xs, ys, marker="o", label=label, linestyle="--" if "auto" in label else "-")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"rcclx-perf {self.cfg.collective} {self.cfg.datatype}, {self.nranks} ranks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        self._print(f"# wrote {path}")
