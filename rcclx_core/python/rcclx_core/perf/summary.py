"""The end of the table: per size, our best row and the best peer, and the ratio between them.

Rows are rank 0's report rows (runner.make_row): several per size with ``--algo all``, each
carrying the same peers.
"""

from __future__ import annotations


def row_label(row: dict) -> str:
    """A row's algorithm as the table shows it: "auto(dda_flat)" for auto, else its name."""
    if row.get("algo") == "auto" and row.get("selected"):
        return f"auto({row['selected']})"
    return row.get("algo", "-")


def rows_by_size(rows: list[dict]) -> dict[int, list[dict]]:
    """The timed rows of each size, in size order."""
    out: dict[int, list[dict]] = {}
    for r in rows:
        if "time" in r:
            out.setdefault(r["size"], []).append(r)
    return dict(sorted(out.items()))


def best_ours(rows: list[dict], exclude_auto: bool = True) -> dict | None:
    """Our fastest row of one size; auto (which runs one of the others) only if it is alone."""
    explicit = [r for r in rows if r.get("algo") != "auto"] if exclude_auto else rows
    candidates = explicit or rows
    return min(candidates, key=lambda r: r["time"]) if candidates else None


def peer_times(row: dict) -> dict[str, float]:
    """{peer column: time} of the peers that ran at this row's size."""
    return {name: p["time"] for name, p in row.get("peers", {}).items() if "time" in p}


def best_peer(row: dict) -> tuple[str, float] | None:
    times = peer_times(row)
    return min(times.items(), key=lambda kv: kv[1]) if times else None


def size_summary(rows: list[dict]) -> list[dict]:
    """Per size: our best row (label, time) and, when peers ran, the best peer and ours / it."""
    out = []
    for size, group in rows_by_size(rows).items():
        mine = best_ours(group)
        entry = {"size": size, "best": row_label(mine), "time": mine["time"], "rows": len(group)}
        peer = best_peer(mine)
        if peer is not None:
            entry.update(best_peer=peer[0], peer_time=peer[1], ratio=mine["time"] / peer[1])
        out.append(entry)
    return out
