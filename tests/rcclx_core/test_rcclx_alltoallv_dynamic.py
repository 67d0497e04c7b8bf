"""alltoallv_dynamic on host buffers: counts exchanged by the call, output_split_sizes and
output_offsets written, exact results for random counts (zeros included), a rank sending
nothing, one rank receiving everything, the exact capacity, padded inputs, uneven row_elems,
the receive-counts-known mode, async calls and the errors (overflow naming sender, receiver
and counts; invalid counts on every rank), over shared memory and over tcp."""

import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch


def _matrix(kind: str, n: int, seed: int) -> np.ndarray:
    """counts[s, d]: rows rank s sends to rank d (the same on every rank)."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        m = rng.integers(0, 6, size=(n, n))
        return np.where(rng.random((n, n)) < 0.3, 0, m)
    if kind == "silent_sender":  # rank 0 sends nothing, still receives
        m = rng.integers(1, 5, size=(n, n))
        m[0, :] = 0
        return m
    if kind == "one_receiver":  # everything goes to the last rank
        m = np.zeros((n, n), dtype=np.int64)
        m[:, n - 1] = rng.integers(1, 7, size=n)
        return m
    if kind == "all_zero":
        return np.zeros((n, n), dtype=np.int64)
    raise ValueError(kind)


def _rows(s: int, d: int, count: int, row: int) -> np.ndarray:
    """The rows rank s sends rank d: values naming sender, receiver, row and element."""
    r = np.arange(count, dtype=np.int64)[:, None]
    e = np.arange(row, dtype=np.int64)[None, :]
    return (((s * 16 + d) * 1000 + r) * 64 + e).reshape(-1)


def _input(rank, m, row, pad):
    """This rank's input and (with pad) its block offsets: `pad` rows of -1 before each block."""
    n = m.shape[0]
    parts, offsets, at = [], [], 0
    for d in range(n):
        parts.append(np.full(pad * row, -1, dtype=np.int64))
        at += pad
        offsets.append(at)
        parts.append(_rows(rank, d, int(m[rank, d]), row))
        at += int(m[rank, d])
    return np.concatenate(parts), np.array(offsets, dtype=np.int64)


def _one_call(comm, kind, seed, row, slack, pad, known=False, async_op=False):
    """One call; returns a failure text or None."""
    n, me = comm.size, comm.rank
    m = _matrix(kind, n, seed)
    send, offsets = _input(me, m, row, pad)
    want_counts = m[:, me].astype(np.int64)
    total = int(want_counts.sum())
    out = np.full((total + slack) * row, -7, dtype=np.int64)
    splits = m[me, :].astype(np.int64)
    got_counts = want_counts.copy() if known else np.full(n, -5, dtype=np.int64)
    got_offsets = np.full(n, -5, dtype=np.int64)
    work = comm.alltoallv_dynamic(
        send,
        out,
        splits,
        got_counts,
        input_offsets=offsets if pad else None,
        output_offsets=got_offsets,
        row_elems=row,
        output_split_sizes_known=known,
        async_op=async_op,
    )
    if async_op:
        work.wait()
    want = np.concatenate([_rows(s, me, int(m[s, me]), row) for s in range(n)])
    want_offsets = np.concatenate([[0], np.cumsum(want_counts)[:-1]])
    label = f"{kind} seed={seed} row={row} slack={slack} pad={pad} known={known}"
    if not np.array_equal(got_counts, want_counts):
        return f"{label}: output_split_sizes {got_counts} != {want_counts}"
    if not np.array_equal(got_offsets, want_offsets):
        return f"{label}: output_offsets {got_offsets} != {want_offsets}"
    if not np.array_equal(out[: total * row], want):
        return f"{label}: output rows differ"
    if not np.all(out[total * row :] == -7):
        return f"{label}: rows past the received ones were written"
    return None


def _cases_rank(ctx):
    comm = H.comm_of(ctx)
    failures = []
    calls = [
        *[("random", seed, row, slack, 0) for seed in range(4) for row, slack in ((1, 0), (3, 2))],
        ("random", 11, 7, 1, 2),
        ("random", 12, 5, 0, 1),
        ("silent_sender", 3, 2, 0, 0),
        ("one_receiver", 4, 3, 0, 0),
        ("all_zero", 0, 4, 0, 0),
    ]
    for call in calls:
        failures.append(_one_call(comm, *call))
    failures.append(_one_call(comm, "random", 21, 3, 0, 1, known=True))
    failures.append(_one_call(comm, "random", 22, 2, 1, 0, async_op=True))
    comm.destroy()
    return [f for f in failures if f]


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_alltoallv_dynamic_results(nranks):
    for res in launch(_cases_rank, nranks, timeout=120):
        assert res.value == [], res.value


def test_alltoallv_dynamic_over_tcp():
    for res in launch(_cases_rank, 3, env={"RCCLX_TRANSPORT": "tcp"}, timeout=120):
        assert res.value == [], res.value


def _errors_rank(ctx):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    out = {}
    # Overflow on the last rank: every rank sends it 3 rows of 2 elements, it holds 5 rows
    # (max_output_rows) of a 10-row output; the others receive nothing and succeed.
    splits = np.zeros(n, dtype=np.int64)
    splits[n - 1] = 3
    send = np.concatenate([_rows(me, n - 1, 3, 2)])
    recv = np.full(20, -7, dtype=np.int64)
    counts = np.full(n, -5, dtype=np.int64)
    try:
        comm.alltoallv_dynamic(send, recv, splits, counts, row_elems=2, max_output_rows=5)
        out["overflow"] = None
    except rc.InvalidArgumentError as e:
        out["overflow"] = str(e)
    out["overflow_counts"] = counts.tolist()
    out["overflow_rows"] = recv.tolist()
    # A negative count on rank 0: every rank fails, rank 0 naming the entry.
    bad = np.ones(n, dtype=np.int64)
    if me == 0:
        bad[1] = -2
    try:
        comm.alltoallv_dynamic(
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), bad, np.zeros(n, np.int64)
        )
        out["negative"] = None
    except rc.InvalidArgumentError as e:
        out["negative"] = str(e)
    # More rows than the input holds, on the last rank.
    big = np.ones(n, dtype=np.int64)
    if me == n - 1:
        big[0] = 10 - n
    try:
        comm.alltoallv_dynamic(
            np.zeros(8, dtype=np.int64),
            np.zeros(16 * n, dtype=np.int64),
            big,
            np.zeros(n, np.int64),
        )
        out["oversized"] = None
    except rc.InvalidArgumentError as e:
        out["oversized"] = str(e)
    # Known receive counts that are wrong on rank 0.
    known = np.ones(n, dtype=np.int64)
    if me == 0:
        known[n - 1] = 2
    try:
        comm.alltoallv_dynamic(
            np.arange(n, dtype=np.int64),
            np.zeros(2 * n, dtype=np.int64),
            np.ones(n, dtype=np.int64),
            known,
            output_split_sizes_known=True,
        )
        out["mismatch"] = None
    except rc.InvalidArgumentError as e:
        out["mismatch"] = str(e)
    # Argument checks (local, before any exchange).
    local = []
    for kwargs in (
        dict(input_split_sizes=np.ones(n + 1, dtype=np.int64)),
        dict(input_split_sizes=np.ones(n, dtype=np.int32)),
        dict(row_elems=3),
        dict(row_elems=0),
    ):
        args = dict(
            input_split_sizes=np.ones(n, dtype=np.int64),
            output_split_sizes=np.zeros(n, dtype=np.int64),
        )
        args.update(kwargs)
        try:
            comm.alltoallv_dynamic(np.zeros(2 * n, np.float32), np.zeros(2 * n, np.float32), **args)
            local.append(None)
        except rc.InvalidArgumentError as e:
            local.append(str(e))
    out["local"] = local
    # The communicator still works after every error.
    out["after"] = _one_call(comm, "random", 5, 2, 0, 0)
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_alltoallv_dynamic_errors(nranks):
    results = [r.value for r in launch(_errors_rank, nranks, timeout=120)]
    n = nranks
    last = results[n - 1]
    assert last["overflow"] is not None
    assert f"output overflow on rank {n - 1}" in last["overflow"]
    # Rank 0's block fits; rank 1's, starting at row 3, is the first cut.
    assert "rank 1 sent 3 rows starting at row 3" in last["overflow"]
    assert "holds 5 rows" in last["overflow"] and f"{3 * n} rows were sent" in last["overflow"]
    kept = [min(3, max(0, 5 - 3 * s)) for s in range(n)]
    assert last["overflow_counts"] == kept
    want = np.concatenate([_rows(s, n - 1, kept[s], 2) for s in range(n)]).tolist()
    assert last["overflow_rows"][:10] == want
    assert last["overflow_rows"][10:] == [-7] * 10
    for r in results[: n - 1]:
        assert r["overflow"] is None and r["overflow_counts"] == [0] * n
    assert "input_split_sizes[1]=-2 is negative" in results[0]["negative"]
    for r in results[1:]:
        assert "rank 0's input_split_sizes or input_offsets are invalid" in r["negative"]
    assert "input_split_sizes add up to 9 rows" in results[n - 1]["oversized"]
    for r in results[: n - 1]:
        assert f"rank {n - 1}'s input_split_sizes" in r["oversized"]
    assert (
        f"output_split_sizes[{n - 1}]=2 on rank 0 (receive counts known) but rank {n - 1}"
        " sends 1 rows" in results[0]["mismatch"]
    )
    for r in results[1:]:
        assert r["mismatch"] is None
    for r in results:
        local = r["local"]
        assert f"input_split_sizes has {n + 1} entries for {n} ranks" in local[0]
        assert "input_split_sizes is int32 but must be int64" in local[1]
        assert f"input has {2 * n} elements, not a multiple of row_elems 3" in local[2] or (
            2 * n % 3 == 0
        )
        assert "row_elems is 0" in local[3]
        assert r["after"] is None
