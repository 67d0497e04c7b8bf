"""split(color, key) and split_ranks(ranks): membership, order, and collectives on the
sub-communicators (every allreduce algorithm), interleaved with the parent's."""

import checks
import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch


def _sub_collectives(sub, members, tag):
    """Runs collectives on `sub`, whose rank i is parent rank members[i]; returns problems."""
    check = checks.same_bits
    problems = []
    m = len(members)
    if sub.size != m or members[sub.rank] != tag:
        where = members.index(tag)
        return [f"size {sub.size} rank {sub.rank}, expected size {m} with this rank at {where}"]
    want = float(sum(r + 1 for r in members))
    for algo in ("ring", "dda_flat", "dda_tree"):
        x = np.full(5000, tag + 1.0)
        sub.all_reduce(x, algo=algo)
        problems.append(check(x, np.full(5000, want), f"all_reduce {algo}: "))
    ag = np.zeros(m, dtype=np.int32)
    sub.all_gather(np.array([tag], dtype=np.int32), ag)
    problems.append(check(ag, np.array(members, dtype=np.int32), "all_gather (rank order): "))
    b = np.array([tag * 100], dtype=np.int64)
    sub.broadcast(b, root=m - 1)
    problems.append(check(b, np.array([members[-1] * 100], dtype=np.int64), "broadcast: "))
    return problems


def _split_rank(ctx):
    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    check, join = checks.same_bits, checks.join_problems
    out = {}
    # By parity, keys reversing the order: sub rank 0 is the highest parent rank of the color.
    sub = comm.split(me % 2, key=-me)
    members = sorted((r for r in range(n) if r % 2 == me % 2), reverse=True)
    out["split parity"] = ("", join(*_sub_collectives(sub, members, me)))
    # The parent keeps working between and after its sub-communicators' calls.
    x = np.full(3, 1.0)
    comm.all_reduce(x)
    out["parent after split"] = ("", check(x, np.full(3, float(n))))
    # Default key: parent order. A negative color gets None.
    sub2 = comm.split(0 if me != 1 else -1)
    if me == 1:
        out["split negative color"] = ("", None if sub2 is None else f"got {sub2!r}, expected None")
    else:
        members2 = [r for r in range(n) if r != 1]
        out["split negative color"] = ("", join(*_sub_collectives(sub2, members2, me)))
    # split_ranks: the listed ranks in the listed order; others get None.
    ranks = [n - 1, 0]
    sub3 = comm.split_ranks(ranks)
    if me in ranks:
        out["split_ranks"] = ("", join(*_sub_collectives(sub3, ranks, me)))
    else:
        out["split_ranks"] = ("", None if sub3 is None else f"got {sub3!r}, expected None")
    # A split of a split.
    if sub is not None and sub.size > 1:
        subsub = sub.split_ranks([sub.size - 1, 0])
        if subsub is not None:
            y = np.full(4, me + 1.0)
            subsub.all_reduce(y, algo="dda_tree")
            members4 = [members[-1], members[0]]
            out["nested split"] = ("", check(y, np.full(4, float(sum(r + 1 for r in members4)))))
            subsub.destroy()
    out.setdefault("nested split", ("", None))
    # Sub-communicators and parent interleaved, then torn down in any order.
    z = np.full(2, float(me))
    sub.all_reduce(z)
    comm.all_reduce(x)
    out["interleaved"] = (
        "",
        join(check(z, np.full(2, float(sum(members)))), check(x, np.full(3, float(n * n)))),
    )
    for s in (sub, sub2, sub3):
        if s is not None:
            s.destroy()
    comm.barrier()
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_split(nranks):
    results = launch(_split_rank, nranks, timeout=60)
    checks.assert_cases(results, expect_cases=6)
