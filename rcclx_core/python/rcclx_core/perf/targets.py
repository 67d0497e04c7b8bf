"""``--targets FILE``: performance targets as ratios, judged against this run's rows.

The file holds one JSON object per line (JSON lines); blank lines and lines starting with ``#``
are ignored. Fields of a target:

``collective`` (required)
    The collective it is about; a run of another collective leaves it "not measured".
``bound`` (required), ``direction`` (``"<="``, the default, or ``">="``)
    The target is met when ``ratio direction bound``.
``algo`` (default ``"best"``)
    Our row: an algorithm name as in ``--algo`` (``"auto"``, ``"dda_flat"``...), ``"lp"`` (the
    ``--low-precision`` row), ``"-"`` (a collective without algorithms), or ``"best"``: our
    fastest row at that size (auto only where it is the only row).
``peer`` (default ``"best"``)
    What the row is measured against: a peer column (``"nccl"``, ``"nccl_sync"``,
    ``"symm_one_shot"``, ``"symm_two_shot"``, ``"symm_a2av"``, ``"gloo"``), ``"best"``: the
    fastest peer at that size, or ``"ours"``: our fastest other row (not auto).
``metric`` (default ``"time"``)
    ``"time"``: ratio = our time / the reference's; ``"busbw"``: ratio = our bus bandwidth / the
    reference's (the inverse).
``minbytes``, ``maxbytes`` (default: every size)
    The sizes (the table's ``size`` column) it applies to: bytes, or strings like ``"64K"``.
``datatype`` (optional)
    Only runs of this element type.
``name`` (optional)
    A label for the report.

Every size in range gives one verdict: ``met``, ``NOT MET``, or ``no data`` (the row or the
reference did not run, e.g. a peer printed ``-``). The package ships target files for the
documented claims (``cpu``, ``h200x2``: pass the name instead of a path).
"""

from __future__ import annotations

import dataclasses
import json
import os

from rcclx_core.perf.peers import LABELS
from rcclx_core.perf.spec import COLLECTIVES, DTYPES, Config, format_bytes, parse_bytes
from rcclx_core.perf.summary import best_ours, best_peer, row_label, rows_by_size

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets")
_REFERENCES = ("best", "ours", *LABELS)


class TargetsError(ValueError):
    """A targets file that cannot be read; the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class Target:
    collective: str
    bound: float
    algo: str = "best"
    peer: str = "best"
    metric: str = "time"
    direction: str = "<="
    minbytes: int = 0
    maxbytes: int | None = None
    datatype: str | None = None
    name: str = ""

    def describe(self) -> str:
        if self.name:
            return self.name
        what = "busbw" if self.metric == "busbw" else "time"
        if self.maxbytes is not None:
            sizes = f"{format_bytes(self.minbytes)}-{format_bytes(self.maxbytes)} B"
        else:
            sizes = f"from {format_bytes(self.minbytes)} B" if self.minbytes else "every size"
        return (
            f"{self.collective} {self.algo} {what} vs {self.peer} {self.direction} "
            f"{self.bound:g} at {sizes}"
        )


def shipped() -> dict[str, str]:
    """{name: path} of the target files inside the package."""
    names = sorted(f for f in os.listdir(_DIR) if f.endswith(".jsonl"))
    return {f[: -len(".jsonl")]: os.path.join(_DIR, f) for f in names}


def resolve(text: str) -> str:
    """A path, or the name of a shipped file."""
    if os.path.exists(text):
        return text
    files = shipped()
    if text in files:
        return files[text]
    raise TargetsError(f"--targets '{text}': no such file, nor a shipped one ({', '.join(files)})")


def _target(fields: dict) -> Target:
    unknown = set(fields) - {f.name for f in dataclasses.fields(Target)}
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}")
    for required in ("collective", "bound"):
        if required not in fields:
            raise ValueError(f"'{required}' is required")
    t = dict(fields)
    for key in ("minbytes", "maxbytes"):
        if key in t and t[key] is not None:
            t[key] = parse_bytes(t[key])
    if not isinstance(t["bound"], (int, float)) or isinstance(t["bound"], bool):
        raise ValueError(f"bound {t['bound']!r} is not a number")
    t["bound"] = float(t["bound"])
    target = Target(**t)
    checks = [
        (target.collective in COLLECTIVES, f"collective '{target.collective}'"),
        (target.peer in _REFERENCES, f"peer '{target.peer}' (choose {', '.join(_REFERENCES)})"),
        (target.metric in ("time", "busbw"), f"metric '{target.metric}' (time or busbw)"),
        (target.direction in ("<=", ">="), f"direction '{target.direction}' (<= or >=)"),
        (target.datatype is None or target.datatype in DTYPES, f"datatype '{target.datatype}'"),
    ]
    for ok, what in checks:
        if not ok:
            raise ValueError(f"unknown {what}")
    return target


def parse(path: str) -> list[Target]:
    """The targets of a file (see the module's description); TargetsError names the line."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TargetsError(f"--targets '{path}': {e.strerror}") from None
    targets = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            fields = json.loads(text)
            if not isinstance(fields, dict):
                raise ValueError("a line must hold one JSON object")
            targets.append(_target(fields))
        except (ValueError, TypeError) as e:  # json.JSONDecodeError is a ValueError
            raise TargetsError(f"--targets '{path}', line {number}: {e}") from None
    return targets


def _our_row(group: list[dict], algo: str) -> dict | None:
    if algo == "best":
        return best_ours(group)
    return next((r for r in group if r.get("algo") == algo), None)


def _reference(group: list[dict], row: dict, peer: str) -> tuple[str, float] | None:
    """(label, time) the row is measured against, or None when it did not run."""
    if peer == "ours":
        others = [r for r in group if r is not row and r.get("algo") != "auto"]
        if not others:
            return None
        mine = best_ours(others)
        return row_label(mine), mine["time"]
    if peer == "best":
        return best_peer(row)
    entry = row.get("peers", {}).get(peer, {})
    return (peer, entry["time"]) if "time" in entry else None


def _verdict(target: Target, size: int, group: list[dict]) -> dict:
    out = {"target": target.describe(), "size": size, "bound": target.bound}
    row = _our_row(group, target.algo)
    if row is None:
        return {**out, "verdict": "no data", "why": f"no row '{target.algo}'"}
    ref = _reference(group, row, target.peer)
    if ref is None:
        return {**out, "verdict": "no data", "why": f"'{target.peer}' did not run"}
    ratio = row["time"] / ref[1] if target.metric == "time" else ref[1] / row["time"]
    met = ratio <= target.bound if target.direction == "<=" else ratio >= target.bound
    return {
        **out,
        "ours": row_label(row),
        "versus": ref[0],
        "ratio": ratio,
        "verdict": "met" if met else "NOT MET",
    }


def evaluate(targets: list[Target], cfg: Config, rows: list[dict]) -> list[dict]:
    """One verdict per target and size in its range; a target this run cannot speak to (other
    collective, type or sizes) gives one verdict "not measured"."""
    groups = rows_by_size(rows)
    out = []
    for t in targets:
        sizes = [s for s in groups if s >= t.minbytes and (t.maxbytes is None or s <= t.maxbytes)]
        if t.collective != cfg.collective or (t.datatype and t.datatype != cfg.datatype):
            sizes = []
        if not sizes:
            out.append({"target": t.describe(), "size": None, "verdict": "not measured"})
        out += [_verdict(t, s, groups[s]) for s in sizes]
    return out
