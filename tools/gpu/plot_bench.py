"""Plots an allreduce_bench.py JSON: microseconds per op against message size, one line per
column (ours solid, peers dashed, ours on a symmetric buffer and with graph registration off
dotted), and the ratio of our best (on ordinary buffers, as captured) to the best peer.

    python3 tools/gpu/plot_bench.py tools/gpu/results/allreduce_2xh200_bf16.json out.png
"""

from __future__ import annotations

import json
import sys

OURS = ("dda_flat", "dda_tree", "dda_large", "auto")
PEERS = ("nccl", "symm_one_shot", "symm_two_shot")
# In place on a symmetric buffer, and ordinary outputs with graph registration off (dotted; not
# in the ratio).
SYM = ("dda_tree[sym]", "dda_tree[staged]")


def main(src: str, dst: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.load(open(src))
    rows = data["rank_rows"][0]
    sizes = [r["bytes"] for r in rows]
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(8, 8), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for col in OURS + PEERS + SYM:
        pts = [(r["bytes"], r[col]) for r in rows if isinstance(r.get(col), (int, float))]
        style = "-o" if col in OURS else ("--s" if col in PEERS else ":^")
        if pts:
            ax.plot(*zip(*pts), style, label=col, markersize=4)
    ratio = []
    for r in rows:
        ours = [r[c] for c in OURS if isinstance(r.get(c), (int, float))]
        peers = [r[c] for c in PEERS if isinstance(r.get(c), (int, float))]
        ratio.append(min(ours) / min(peers))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("us per op (CUDA graph of 20, median of 15)")
    ax.set_title(f"allreduce {data['dtype']}, {data['nranks']} x H200 (NVLink)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    ax2.plot(sizes, ratio, "-o", color="black")
    ax2.axhline(1.0, color="gray", lw=0.8)
    ax2.set_ylabel("our best / best peer")
    ax2.set_xlabel("bytes")
    ax2.set_xticks(sizes, [f"{s >> 20}M" if s >= 1 << 20 else f"{s >> 10}K" for s in sizes])
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
