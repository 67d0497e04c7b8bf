"""Case loops that run inside the ranks, one per collective family.

Each takes a communicator, runs many calls (types x ops x counts, in place and out of place,
roots varying), and returns {case: (digest of the output, problem or None)} for
`checks.assert_cases`. Receive buffers start poisoned (checks.poison), so unwritten elements
show. In place and out of place alternate over the (case, count) grid, so every type, op,
count and algorithm meets both without doubling the calls.
"""

from __future__ import annotations

import checks
import numpy as np
import rcclx_helpers as H
from checks import join_problems, same_bits


def _modes(ci: int, ki: int) -> bool:
    """In place for half the (case, count) grid."""
    return (ci + ki) % 2 == 1


def _place(inplace: bool) -> str:
    return "in place" if inplace else "out of place"


def _reduction_kw(spec, op, scalar):
    kw = dict(op=op, **spec.kw())
    if op == H.OP.PREMUL_SUM:
        kw["scalar"] = scalar
    return kw


# --- reductions ---------------------------------------------------------------------------


def all_reduce(comm, algo, cases=None, counts=H.COUNTS):
    """Rank 0 checks its output against the reference; the parent checks that every rank's
    output has the same bits."""
    n, me = comm.size, comm.rank
    verify = me == 0
    out = {}
    for ci, (spec, op, values) in enumerate(cases or H.reduction_cases()):
        for ki, count in enumerate(counts):
            inputs = [
                H.make_input(spec, op, values, p, count) if verify or p == me else None
                for p in range(n)
            ]
            scalars = [H.scalar_of(spec, values, p) for p in range(n)]
            kw = _reduction_kw(spec, op, scalars[me])
            inplace = _modes(ci, ki)
            x = inputs[me].copy()
            if inplace:
                comm.all_reduce(x, algo=algo, **kw)
                got, unchanged = x, None
            else:
                got = checks.poison(np.empty_like(x))
                comm.all_reduce(x, got, algo=algo, **kw)
                unchanged = same_bits(x, inputs[me], "sendbuf modified: ")
            problem = H.check_reduction(spec, op, values, got, inputs, scalars) if verify else None
            key = f"all_reduce {spec.name} {op.name} {values} count={count} {_place(inplace)}"
            out[key] = (checks.digest(got), join_problems(problem, unchanged))
    return out


def reduce(comm, cases=None, counts=H.COUNTS):
    """The root checks its result; every other rank checks that its buffers are untouched."""
    n, me = comm.size, comm.rank
    out = {}
    for ci, (spec, op, values) in enumerate(cases or H.reduction_cases()):
        for ki, count in enumerate(counts):
            root = (ci + 3 * ki) % n
            is_root = me == root
            inputs = [
                H.make_input(spec, op, values, p, count) if is_root or p == me else None
                for p in range(n)
            ]
            scalars = [H.scalar_of(spec, values, p) for p in range(n)]
            kw = _reduction_kw(spec, op, scalars[me])
            inplace = _modes(ci, ki)
            x = inputs[me].copy()
            if inplace:
                comm.reduce(x, root=root, **kw)
                got = x
                problem = (
                    None if is_root else same_bits(x, inputs[me], "non-root buffer modified: ")
                )
            else:
                got = checks.poison(np.empty_like(x))
                comm.reduce(x, got, root=root, **kw)
                problem = join_problems(
                    same_bits(x, inputs[me], "sendbuf modified: "),
                    None
                    if is_root
                    else same_bits(
                        got, checks.poison(np.empty_like(x)), "non-root recvbuf written: "
                    ),
                )
            if is_root:
                problem = join_problems(
                    H.check_reduction(spec, op, values, got, inputs, scalars), problem
                )
            key = (
                f"reduce {spec.name} {op.name} {values} count={count} root={root} {_place(inplace)}"
            )
            out[key] = ("", problem)
    return out


RS_COUNTS = (0, 1, 1001, 5003)  # per rank; 5003 elements of any type span several 4 KiB chunks


def _v_counts(base: int, n: int) -> list[int]:
    """Per-rank block sizes around `base`, unequal, with empty blocks among them."""
    if base == 0:
        return [0] * n
    if base == 1:
        return [1 - p % 2 for p in range(n)]
    return [0 if p == 1 else base + 7 * p for p in range(n)]


def reduce_scatter(comm, cases=None, counts=RS_COUNTS, variable=False):
    """Every rank checks its own block; reduce_scatter_v (variable) with unequal blocks."""
    n, me = comm.size, comm.rank
    out = {}
    for ci, (spec, op, values) in enumerate(cases or H.reduction_cases()):
        for ki, base in enumerate(counts):
            blocks = _v_counts(base, n) if variable else [base] * n
            displs = np.concatenate([[0], np.cumsum(blocks)]).astype(int)
            lo, hi = int(displs[me]), int(displs[me + 1])
            # Rank p's block b is input (p, seed b): this rank needs its own blocks and every
            # rank's block `me`.
            mine = np.concatenate(
                [H.make_input(spec, op, values, me, c, seed=b) for b, c in enumerate(blocks)]
            )
            theirs = [H.make_input(spec, op, values, p, blocks[me], seed=me) for p in range(n)]
            scalars = [H.scalar_of(spec, values, p) for p in range(n)]
            kw = _reduction_kw(spec, op, scalars[me])
            inplace = _modes(ci, ki)
            x = mine.copy()
            got = x[lo:hi] if inplace else checks.poison(np.empty(hi - lo, dtype=x.dtype))
            if variable:
                comm.reduce_scatter_v(x, got, blocks, **kw)
            else:
                comm.reduce_scatter(x, got, **kw)
            problem = H.check_reduction(spec, op, values, got.copy(), theirs, scalars)
            if not inplace:
                problem = join_problems(problem, same_bits(x, mine, "sendbuf modified: "))
            name = "reduce_scatter_v" if variable else "reduce_scatter"
            key = f"{name} {spec.name} {op.name} {values} counts={blocks} {_place(inplace)}"
            out[key] = ("", problem)
    return out


# --- data movement ------------------------------------------------------------------------


def _key(name, spec, count, extra=""):
    return f"{name} {spec.name} count={count}{extra}"


def broadcast_gather_scatter(comm, specs=H.SPECS, counts=H.COUNTS):
    """broadcast (in and out of place), gather and scatter, the root moving with the case."""
    n, me = comm.size, comm.rank
    out = {}
    for si, spec in enumerate(specs):
        for ki, count in enumerate(counts):
            root = (si + ki) % n
            inplace = _modes(si, ki)
            mine = [H.make_bytes(spec, p, count, tag=1) for p in range(n)]
            kw = spec.kw()
            # broadcast
            if inplace:
                buf = mine[me].copy() if me == root else checks.poison(np.empty_like(mine[me]))
                comm.broadcast(buf, root=root, **kw)
                got = buf
            else:
                got = checks.poison(np.empty_like(mine[me]))
                comm.broadcast(mine[me], got, root=root, **kw)
            mode = " in place" if inplace else " out of place"
            out[_key("broadcast", spec, count, f" root={root}{mode}")] = (
                checks.digest(got),
                same_bits(got, mine[root]),
            )
            # gather: the root receives every rank's block in rank order
            recv = checks.poison(np.empty(n * count, dtype=spec.storage)) if me == root else None
            comm.gather(mine[me], recv, root=root, **kw)
            problem = same_bits(recv, np.concatenate(mine)) if me == root else None
            out[_key("gather", spec, count, f" root={root}")] = ("", problem)
            # scatter: block p of the root's buffer lands on rank p
            blocks = [H.make_bytes(spec, p, count, tag=2 + root) for p in range(n)]
            send = np.concatenate(blocks) if me == root else None
            got = checks.poison(np.empty(count, dtype=spec.storage))
            comm.scatter(send, got, root=root, **kw)
            out[_key("scatter", spec, count, f" root={root}")] = ("", same_bits(got, blocks[me]))
    return out


def all_gather(comm, specs=H.SPECS, counts=H.COUNTS):
    """all_gather (in place: sendbuf is this rank's block of recvbuf) and all_gather_v."""
    n, me = comm.size, comm.rank
    out = {}
    for si, spec in enumerate(specs):
        for ki, count in enumerate(counts):
            kw = spec.kw()
            mine = [H.make_bytes(spec, p, count, tag=3) for p in range(n)]
            want = np.concatenate(mine)
            inplace = _modes(si, ki)
            recv = checks.poison(np.empty(n * count, dtype=spec.storage))
            if inplace:
                recv[me * count : (me + 1) * count] = mine[me]
                comm.all_gather(recv[me * count : (me + 1) * count], recv, **kw)
            else:
                comm.all_gather(mine[me], recv, **kw)
            mode = " in place" if inplace else " out of place"
            out[_key("all_gather", spec, count, mode)] = (
                checks.digest(recv),
                same_bits(recv, want),
            )
            blocks = _v_counts(count, n)
            vmine = [H.make_bytes(spec, p, blocks[p], tag=4) for p in range(n)]
            recv = checks.poison(np.empty(sum(blocks), dtype=spec.storage))
            comm.all_gather_v(vmine[me], recv, blocks, **kw)
            out[_key("all_gather_v", spec, count, f" counts={blocks}")] = (
                checks.digest(recv),
                same_bits(recv, np.concatenate(vmine)),
            )
    return out


def _a2av_counts(base: int, n: int) -> list[list[int]]:
    """send[r][p]: elements rank r sends to rank p (some empty)."""
    if base <= 1:
        return [[base * ((r + p) % 2) for p in range(n)] for r in range(n)]
    return [
        [0 if (r + 2 * p) % 5 == 3 else base + 5 * r + 3 * p for p in range(n)] for r in range(n)
    ]


def all_to_all(comm, specs=H.SPECS, counts=H.COUNTS):
    """all_to_all (also in place), and all_to_all_v with unequal blocks at gapped, reordered
    displacements."""
    n, me = comm.size, comm.rank
    out = {}
    for spec in specs:
        for count in counts:
            kw = spec.kw()
            c = count // n if count > 1 else count
            sends = [H.make_bytes(spec, p, n * c, tag=5) for p in range(n)]
            recv = checks.poison(np.empty(n * c, dtype=spec.storage))
            comm.all_to_all(sends[me], recv, **kw)
            want = np.concatenate([sends[p][me * c : (me + 1) * c] for p in range(n)])
            out[_key("all_to_all", spec, c, " per rank")] = ("", same_bits(recv, want))
            in_place = sends[me].copy()  # NCCL's ncclAlltoAll takes sendbuff == recvbuff
            comm.all_to_all(in_place, in_place, **kw)
            out[_key("all_to_all in place", spec, c, " per rank")] = ("", same_bits(in_place, want))

            sc = _a2av_counts(count // n if count > 1 else count, n)
            gap = 3
            # Rank r lays its send blocks out in rank order with gaps; receives in reverse order.
            sdispl = [[sum(sc[r][:p]) + gap * p for p in range(n)] for r in range(n)]
            rc = [sc[p][me] for p in range(n)]
            rdispl, pos = [0] * n, gap
            for p in reversed(range(n)):
                rdispl[p], pos = pos, pos + rc[p] + gap
            send = checks.poison(np.empty(sdispl[me][-1] + sc[me][-1] + gap, dtype=spec.storage))
            blocks = {}
            for p in range(n):
                for r in range(n):
                    blocks[r, p] = H.make_bytes(spec, r * n + p, sc[r][p], tag=6)
                send[sdispl[me][p] : sdispl[me][p] + sc[me][p]] = blocks[me, p]
            recv = checks.poison(np.empty(pos, dtype=spec.storage))
            comm.all_to_all_v(send, recv, sc[me], rc, sdispl[me], rdispl, **kw)
            want = checks.poison(np.empty(pos, dtype=spec.storage))
            for p in range(n):
                want[rdispl[p] : rdispl[p] + rc[p]] = blocks[p, me]
            out[_key("all_to_all_v", spec, count, f" counts={sc}")] = ("", same_bits(recv, want))
    return out
