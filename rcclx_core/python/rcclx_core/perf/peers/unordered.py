"""``--compare unordered``: RCCLX itself with RCCLX_DETERMINISTIC=0, on the same buffers and
with the first ``--algo`` of the run: the ring, chain and hierarchical forms pass partial sums
along the ring (docs/determinism.rst), so the column shows what the fold order costs."""

from __future__ import annotations

from rcclx_core.perf.ours import OursColumn


def unavailable(cfg, world) -> str | None:
    """Why the column cannot run in this run, or None."""
    if cfg.low_precision:
        return "low precision quantizes: its order does not change with RCCLX_DETERMINISTIC"
    return None


class UnorderedColumn(OursColumn):
    name = "unordered"
    label = "unordered"

    def close(self) -> None:
        self.comm.destroy()


def columns(cfg, world, placement) -> list:
    comm = world.comm.split(0, hints={"RCCLX_DETERMINISTIC": "0"})
    return [UnorderedColumn(comm, cfg, placement, cfg.algos[0])]
