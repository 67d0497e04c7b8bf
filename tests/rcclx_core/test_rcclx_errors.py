"""Bad input gets a clear error naming the argument and value, never a crash or a hang.

Argument errors are raised on the calling rank before any communication, so every rank making
the same bad call raises and the communicator stays usable. Mismatches between ranks (counts,
datatypes, collectives) are detected by the ranks that see them; the others fail on a dead
peer or their deadline (RCCLX_TIMEOUT_MS, kept short here) instead of hanging.
"""

import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch

TIMEOUT_MS = 1500


def _argument_errors(comm):
    """(description, call) pairs; each call must raise the error in ERRORS[description]."""
    import rcclx_core as rc

    n = comm.size
    f32 = np.zeros(6, dtype=np.float32)
    f64 = np.zeros(6, dtype=np.float64)
    small = np.zeros(5, dtype=np.float32)
    ro = np.zeros(6, dtype=np.float32)
    ro.flags.writeable = False
    strided = np.zeros(12, dtype=np.float32)[::2]
    transposed = np.zeros((3, 4), dtype=np.float32).T
    return {
        "None sendbuf": lambda: comm.all_reduce(None),
        "None recvbuf": lambda: comm.all_gather(f32, None),
        "None send buffer": lambda: comm.send(None, 0),
        "not an array": lambda: comm.all_reduce([1.0, 2.0]),
        "unsupported element type": lambda: comm.all_reduce(np.zeros(4, dtype=np.int16)),
        "complex element type": lambda: comm.broadcast(np.zeros(4, dtype=np.complex64)),
        "strided sendbuf": lambda: comm.all_reduce(strided),
        "strided recvbuf": lambda: comm.all_reduce(f32, np.zeros(12, dtype=np.float32)[::2]),
        "transposed sendbuf": lambda: comm.all_reduce(transposed),
        "read-only recvbuf": lambda: comm.all_reduce(f32, ro),
        "read-only in-place buffer": lambda: comm.all_reduce(ro),
        "read-only recv": lambda: comm.recv(ro, 0),
        "read-only broadcast": lambda: comm.broadcast(f32, ro),
        "wrong-size recvbuf": lambda: comm.all_reduce(f32, small),
        "wrong-size all_gather recvbuf": lambda: comm.all_gather(
            f32, np.zeros(6 * n + 1, dtype=np.float32)
        ),
        "wrong-size reduce_scatter sendbuf": lambda: comm.reduce_scatter(
            np.zeros(6 * n - 1, np.float32), f32
        ),
        "wrong-size broadcast recvbuf": lambda: comm.broadcast(f32, small),
        "wrong-size gather recvbuf": lambda: comm.gather(f32, small, root=comm.rank),
        "wrong-size scatter sendbuf": lambda: comm.scatter(small, f32, root=comm.rank),
        "all_to_all not divisible": lambda: comm.all_to_all(
            np.zeros(n * 3 + 1, np.float32), np.zeros(n * 3 + 1, np.float32)
        ),
        "mismatched dtypes": lambda: comm.all_reduce(f32, f64),
        "BAND on float32": lambda: comm.all_reduce(f32, op=rc.RedOp.BAND),
        "BXOR on bfloat16": lambda: comm.reduce_scatter(
            np.zeros(2 * n, np.uint16),
            np.zeros(2, np.uint16),
            op=rc.RedOp.BXOR,
            dtype=rc.DataType.BFLOAT16,
        ),
        "BOR on float64 reduce": lambda: comm.reduce(f64, root=0, op=rc.RedOp.BOR),
        "unknown op": lambda: comm.all_reduce(f32, op=42),
        "unknown dtype": lambda: comm.all_reduce(f32, dtype=99),
        "dtype= with a partial element": lambda: comm.all_reduce(
            np.zeros(3, np.uint8), dtype=rc.DataType.BFLOAT16
        ),
        "unknown algorithm": lambda: comm.all_reduce(f32, algo="bogus"),
        "root too large": lambda: comm.reduce(f32, root=n),
        "negative root": lambda: comm.broadcast(f32, root=-1),
        "gather root": lambda: comm.gather(f32, np.zeros(6 * n, np.float32), root=n + 3),
        "scatter root": lambda: comm.scatter(np.zeros(6 * n, np.float32), f32, root=-2),
        "send peer": lambda: comm.send(f32, n),
        "recv peer": lambda: comm.recv(f32, -1),
        "all_gather_v counts length": lambda: comm.all_gather_v(
            f32, np.zeros(6 * n, np.float32), [6] * (n + 1)
        ),
        "all_gather_v negative count": lambda: comm.all_gather_v(
            f32, np.zeros(6, np.float32), [-1] + [6] * (n - 1)
        ),
        "all_gather_v own count": lambda: comm.all_gather_v(
            f32, np.zeros(7 * n, np.float32), [7] * n
        ),
        "reduce_scatter_v recvbuf": lambda: comm.reduce_scatter_v(
            np.zeros(4 * n, np.float32), small, [4] * n
        ),
        "all_to_all_v block past the end": lambda: comm.all_to_all_v(f32, f32, [6] * n, [1] * n),
        "all_to_all_v counts length": lambda: comm.all_to_all_v(f32, f32, [1] * (n + 1), [1] * n),
        "split_ranks out of range": lambda: comm.split_ranks([0, n]),
        "group_end without group_start": lambda: comm.group_end(),
        "select_all_reduce bad op": lambda: rc._testing.selection(
            comm, 64, int(rc.DataType.FLOAT32), int(rc.RedOp.BAND)
        ),
        "alloc_symmetric without a device": lambda: comm.alloc_symmetric(4096),
        "register_symmetric without a device": lambda: comm.register_symmetric(_DeviceArray()),
        "register_symmetric of a list": lambda: comm.register_symmetric([1, 2]),
    }


class _DeviceArray:
    """Looks like a device array (nothing is ever read through its pointer here)."""

    __cuda_array_interface__ = {
        "shape": (16,),
        "typestr": "<f4",
        "data": (4096, False),
        "version": 2,
    }


# (exception type name, fragments the message must contain); {n} is the world size.
ERRORS = {
    "alloc_symmetric without a device": (
        "InvalidUsageError",
        ["alloc_symmetric", "symmetric buffers are GPU memory", "without a device"],
    ),
    "register_symmetric without a device": (
        "InvalidUsageError",
        ["register_symmetric", "symmetric buffers are GPU memory", "without a device"],
    ),
    "register_symmetric of a list": (
        "InvalidArgumentError",
        ["register_symmetric", "__cuda_array_interface__", "builtins.list"],
    ),
    "None sendbuf": ("InvalidArgumentError", ["all_reduce", "sendbuf is None"]),
    "None recvbuf": ("InvalidArgumentError", ["all_gather", "recvbuf is None"]),
    "None send buffer": ("InvalidArgumentError", ["send", "buf is None"]),
    "not an array": ("InvalidArgumentError", ["sendbuf", "contiguous array", "list"]),
    "unsupported element type": ("InvalidArgumentError", ["sendbuf", "not supported", "dtype="]),
    "complex element type": ("InvalidArgumentError", ["sendbuf", "not supported"]),
    "strided sendbuf": ("InvalidArgumentError", ["sendbuf", "contiguous", "strides (2)"]),
    "strided recvbuf": ("InvalidArgumentError", ["recvbuf", "contiguous"]),
    "transposed sendbuf": ("InvalidArgumentError", ["sendbuf", "contiguous", "shape (4, 3)"]),
    "read-only recvbuf": ("InvalidArgumentError", ["all_reduce", "recvbuf is read-only"]),
    "read-only in-place buffer": ("InvalidArgumentError", ["sendbuf is read-only"]),
    "read-only recv": ("InvalidArgumentError", ["recv", "buf is read-only"]),
    "read-only broadcast": ("InvalidArgumentError", ["broadcast", "recvbuf is read-only"]),
    "wrong-size recvbuf": ("InvalidArgumentError", ["recvbuf has 5 elements but needs 6"]),
    "wrong-size all_gather recvbuf": (
        "InvalidArgumentError",
        ["recvbuf has {6n+1} elements but needs {6n}"],
    ),
    "wrong-size reduce_scatter sendbuf": (
        "InvalidArgumentError",
        ["sendbuf has {6n-1} elements but needs {6n}"],
    ),
    "wrong-size broadcast recvbuf": (
        "InvalidArgumentError",
        ["broadcast", "recvbuf has 5 elements"],
    ),
    "wrong-size gather recvbuf": (
        "InvalidArgumentError",
        ["gather", "recvbuf has 5 elements but needs {6n}"],
    ),
    "wrong-size scatter sendbuf": (
        "InvalidArgumentError",
        ["scatter", "sendbuf has 5 elements but needs {6n}"],
    ),
    "all_to_all not divisible": (
        "InvalidArgumentError",
        ["all_to_all", "{3n+1} elements", "multiple of {n}"],
    ),
    "mismatched dtypes": ("InvalidArgumentError", ["sendbuf is float32 but recvbuf is float64"]),
    "BAND on float32": ("InvalidArgumentError", ["op band", "float32"]),
    "BXOR on bfloat16": ("InvalidArgumentError", ["op bxor", "bfloat16"]),
    "BOR on float64 reduce": ("InvalidArgumentError", ["reduce", "op bor", "float64"]),
    "unknown op": ("InvalidArgumentError", ["op 42"]),
    "unknown dtype": ("InvalidArgumentError", ["datatype 99"]),
    "dtype= with a partial element": ("InvalidArgumentError", ["3 bytes", "bfloat16"]),
    "unknown algorithm": ("InvalidArgumentError", ["'bogus'", "dda_flat"]),
    "root too large": ("InvalidArgumentError", ["reduce", "root {n} is out of range"]),
    "negative root": ("InvalidArgumentError", ["broadcast", "root -1 is out of range"]),
    "gather root": ("InvalidArgumentError", ["gather", "root {n+3}"]),
    "scatter root": ("InvalidArgumentError", ["scatter", "root -2"]),
    "send peer": ("InvalidArgumentError", ["send", "peer {n} is out of range"]),
    "recv peer": ("InvalidArgumentError", ["recv", "peer -1 is out of range"]),
    "all_gather_v counts length": ("InvalidArgumentError", ["recv_counts has {n+1} entries"]),
    "all_gather_v negative count": ("InvalidArgumentError", ["recv_counts[0]=-1", "negative"]),
    "all_gather_v own count": ("InvalidArgumentError", ["recv_counts[{rank}]=7", "send count 6"]),
    "reduce_scatter_v recvbuf": ("InvalidArgumentError", ["recvbuf has 5 elements but needs 4"]),
    "all_to_all_v block past the end": ("InvalidArgumentError", ["sendbuf block 1", "past"]),
    "all_to_all_v counts length": ("InvalidArgumentError", ["send_counts has {n+1} entries"]),
    "split_ranks out of range": (
        "InvalidArgumentError",
        ["split_ranks", "rank {n} is out of range"],
    ),
    "group_end without group_start": (
        "InvalidUsageError",
        ["group_end without a matching group_start"],
    ),
    "select_all_reduce bad op": ("InvalidArgumentError", ["band", "float32"]),
}


def _argument_errors_rank(ctx):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    out = {}
    for name, call in _argument_errors(comm).items():
        try:
            call()
            out[name] = ("returned", "", False)
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out[name] = (type(e).__name__, str(e), isinstance(e, (ValueError, rc.Error)))
    # The communicator is still in step on every rank.
    x = np.arange(4, dtype=np.float64)
    comm.all_reduce(x)
    out["still usable"] = x.tolist()
    comm.destroy()
    try:
        comm.all_reduce(x)
        out["after destroy"] = ("returned", "")
    except Exception as e:  # noqa: BLE001
        out["after destroy"] = (type(e).__name__, str(e))
    try:
        comm.destroy()
        out["destroy twice"] = ("returned", "")
    except Exception as e:  # noqa: BLE001
        out["destroy twice"] = (type(e).__name__, str(e))
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_argument_errors(nranks):
    results = launch(_argument_errors_rank, nranks, timeout=60)
    n = nranks
    subst = {
        "{n}": n,
        "{6n}": 6 * n,
        "{6n+1}": 6 * n + 1,
        "{6n-1}": 6 * n - 1,
        "{3n+1}": 3 * n + 1,
        "{n+1}": n + 1,
        "{n+3}": n + 3,
    }
    failures = []
    for res in results:
        v = res.value
        for name, (etype, fragments) in ERRORS.items():
            kind, message, is_value_error = v[name]
            if kind != etype:
                failures.append(f"rank {res.rank}: {name}: {kind}: {message} (expected {etype})")
                continue
            if etype == "InvalidArgumentError" and not is_value_error:
                failures.append(f"rank {res.rank}: {name}: not a ValueError")
            for frag in fragments:
                for k, val in subst.items():
                    frag = frag.replace(k, str(val))
                frag = frag.replace("{rank}", str(res.rank))
                if frag not in message:
                    failures.append(f"rank {res.rank}: {name}: {message!r} lacks {frag!r}")
        assert v["still usable"] == [0.0, n, 2.0 * n, 3.0 * n]
        assert v["after destroy"][0] == "InvalidUsageError" and "destroyed" in v["after destroy"][1]
        assert v["destroy twice"][0] == "InvalidUsageError"
    assert set(ERRORS) == set(results[0].value) - {"still usable", "after destroy", "destroy twice"}
    assert not failures, "\n".join(failures)


# --- mismatches between ranks -----------------------------------------------------------


def _mismatch_rank(ctx, case):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    # Rank 0 hosts the bootstrap store: nobody may leave before everyone is done with it.
    ctx.barrier("created")
    me, n = comm.rank, comm.size
    big = me == n - 1  # the last rank passes a different size
    try:
        if case == "all_reduce dtype":
            comm.all_reduce(np.ones(100, np.float64 if big else np.float32), algo="ring")
        elif case.startswith("all_reduce type "):  # same bytes, another element type
            x = np.ones(64, np.int32 if big else np.float32)
            comm.all_reduce(x, algo=case.split()[2])
        elif case.startswith("all_reduce op "):  # same buffers, another operator
            op = rc.RedOp.MAX if big else rc.RedOp.SUM
            comm.all_reduce(np.ones(64, np.float32), op=op, algo=case.split()[2])
        elif case == "reduce_scatter op":
            op = rc.RedOp.MIN if big else rc.RedOp.SUM
            comm.reduce_scatter(np.ones(8 * n, np.float32), np.zeros(8, np.float32), op=op)
        elif case.startswith("all_reduce "):
            count = 10000 + (16 if big else 0)
            comm.all_reduce(np.ones(count, np.float32), algo=case.split()[1])
        elif case == "broadcast":
            comm.broadcast(np.ones(300 + big, np.int32), root=0)
        elif case == "reduce":
            comm.reduce(np.ones(300 + big, np.int32), root=0)
        elif case == "all_gather":
            c = 300 + big
            comm.all_gather(np.ones(c, np.int32), np.zeros(c * n, np.int32))
        elif case == "reduce_scatter":
            c = 300 + big
            comm.reduce_scatter(np.ones(c * n, np.int32), np.zeros(c, np.int32))
        elif case == "all_to_all":
            c = 300 + big
            comm.all_to_all(np.ones(c * n, np.int32), np.zeros(c * n, np.int32))
        elif case == "send/recv":
            if me == 0:
                comm.send(np.ones(100, np.int32), 1)
            elif me == 1:
                comm.recv(np.ones(101, np.int32), 0)
        elif case == "collective order":
            if big:
                comm.broadcast(np.ones(10, np.int32), root=0)
            else:
                comm.all_reduce(np.ones(10, np.int32), algo="ring")
        elif case == "split_ranks lists":
            comm.split_ranks([0, 1] if big else [1, 0])
        else:
            raise AssertionError(case)
        return ("returned", "")
    except rc.Error as e:
        return (type(e).__name__, str(e))


# (case, type the detecting rank raises, fragment of its message)
MISMATCHES = [
    ("all_reduce ring", "InvalidArgumentError", "mismatched count or datatype"),
    ("all_reduce dda_flat", "InvalidArgumentError", "counts or datatypes differ"),
    ("all_reduce dda_tree", "InvalidArgumentError", "counts or datatypes differ"),
    ("all_reduce dtype", "InvalidArgumentError", "float64, sum"),
    ("broadcast", "InvalidArgumentError", "mismatched count or datatype"),
    ("reduce", "InvalidArgumentError", "mismatched count or datatype"),
    ("all_gather", "InvalidArgumentError", "mismatched count or datatype"),
    ("reduce_scatter", "InvalidArgumentError", "mismatched count or datatype"),
    ("all_to_all", "InvalidArgumentError", "mismatched count or datatype"),
    ("send/recv", "InvalidArgumentError", "sent 400 bytes but rank 1 expected 404"),
    ("collective order", "InvalidUsageError", "mismatched calls"),
    ("all_reduce type ring", "InvalidArgumentError", "same element type, operator and root"),
    ("all_reduce type dda_flat", "InvalidArgumentError", "int32, sum"),
    ("all_reduce op ring", "InvalidArgumentError", "float32, max"),
    ("all_reduce op dda_tree", "InvalidArgumentError", "float32, max"),
    ("reduce_scatter op", "InvalidArgumentError", "float32, min"),
    ("split_ranks lists", "InvalidArgumentError", "passed ranks"),
]


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize(("case", "etype", "fragment"), MISMATCHES, ids=[m[0] for m in MISMATCHES])
def test_mismatch_between_ranks_errors(case, etype, fragment, nranks):
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS, **H.CHUNK_ENV}
    results = launch(_mismatch_rank, nranks, case, env=env, timeout=30, expect_errors=True)
    outcomes = [(r.rank, r.error_type, r.error, r.value) for r in results]
    assert all(r.ok for r in results), outcomes  # no rank hung or died
    detected = [v for v in (r.value for r in results) if v[0] == etype and fragment in v[1]]
    assert detected, outcomes
    # The others fail too (on the mismatch, a peer's exit, or their deadline), or complete
    # when their part did not depend on the mismatch (the root of a broadcast, a sender whose
    # message fit in the FIFO).
    for r in results:
        assert r.value[0] in ("returned", etype, "RemoteError", "TimeoutError"), outcomes


def _after_mismatch_rank(ctx, case):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    ctx.barrier("created")
    me = comm.rank
    outcomes = []
    for step in ("mismatched", "next"):
        try:
            if step == "next":
                comm.all_reduce(np.ones(16, np.float32), algo="ring")
            elif case == "type":
                comm.all_reduce(np.ones(16, np.int32 if me == 0 else np.float32), algo="ring")
            else:  # every rank names itself the root: each sends, none receives
                comm.broadcast(np.ones(16, np.float32), root=me)
            outcomes.append(("returned", ""))
        except rc.Error as e:
            outcomes.append((type(e).__name__, str(e)))
    return outcomes


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("case", ["type", "root"])
def test_mismatch_fails_the_communicator_on_every_rank(case, nranks):
    """What a mismatched call leaves in the channels is never read as a later call's data: once
    any rank sees the mismatch, every rank's next call that communicates raises, naming it."""
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS, **H.CHUNK_ENV}
    results = launch(_after_mismatch_rank, nranks, case, env=env, timeout=30)
    outcomes = [(r.rank, r.value) for r in results]
    for r in results:
        kind, message = r.value[1]
        assert kind in ("InvalidUsageError", "InvalidArgumentError", "RemoteError"), outcomes
        assert "mismatched calls" in message or "must pass the same" in message, outcomes
