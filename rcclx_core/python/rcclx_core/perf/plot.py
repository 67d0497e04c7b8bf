"""``--plot FILE``: bus bandwidth against size, one line per algorithm of ours (solid) and per
peer (dashed); with peers, a second panel of our best row's time over the best peer's.
"""

from __future__ import annotations

from rcclx_core.perf.peers import LABELS
from rcclx_core.perf.spec import Config
from rcclx_core.perf.summary import size_summary


def _lines(rows: list[dict], peers: list[str]) -> dict[str, tuple[list, list, str]]:
    lines: dict[str, tuple[list, list, str]] = {}
    for r in rows:
        if "busbw" in r:
            xs, ys, _ = lines.setdefault(f"rcclx {r['algo']}".rstrip(" -"), ([], [], "-o"))
            xs.append(r["size"])
            ys.append(r["busbw"])
    seen = set()
    for r in rows:
        if r["size"] in seen or "peers" not in r:
            continue
        seen.add(r["size"])
        for p in peers:
            entry = r["peers"].get(p, {})
            if "busbw" in entry:
                xs, ys, _ = lines.setdefault(LABELS[p], ([], [], "--s"))
                xs.append(r["size"])
                ys.append(entry["busbw"])
    return lines


def write_plot(path: str, cfg: Config, nranks: int, rows: list[dict], peers: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = [(s["size"], s["ratio"]) for s in size_summary(rows) if "ratio" in s]
    if ratios:
        fig, (ax, ax2) = plt.subplots(
            2, 1, figsize=(8, 8), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
        )
    else:
        fig, ax = plt.subplots(figsize=(8, 5))
    positive = False
    for label, (xs, ys, style) in _lines(rows, peers).items():
        ax.plot(xs, ys, style, label=label, markersize=4)
        positive |= any(y > 0 for y in ys)
    ax.set_xscale("log", base=2)
    if positive:  # one rank moves nothing: busbw 0
        ax.set_yscale("log")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(
        f"rcclx-perf {cfg.collective} {cfg.datatype}, {nranks} ranks on {cfg.device}, {cfg.mode}"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if ratios:
        ax2.plot(*zip(*ratios), "-o", color="black")
        ax2.axhline(1.0, color="gray", lw=0.8)
        ax2.set_ylabel("our best / best peer")
        ax2.grid(True, alpha=0.3)
        ax2.set_xlabel("size (bytes)")
    else:
        ax.set_xlabel("size (bytes)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
