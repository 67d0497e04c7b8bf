"""Property-based fuzzing of rcclx_core.Communicator's collectives and p2p.

Property: every call either succeeds with the reference result (when every argument is valid)
or raises one of the typed errors of fuzz_cases.allowed_errors() whose message names an argument
that was made invalid. A crash or a hang fails the test with the example (each property runs in
a forked rank). Most properties use a 1-rank communicator; the 2-rank part checks the arguments
that depend on peers (roots, peers, split sums), both ranks drawing the same examples.
"""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

import fuzz_cases  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.timeout(fuzz_cases.TIMEOUT + 30)

# numpy / torch dtypes the communicator reduces; bfloat16 exists only in torch.
VALID_DTYPES = ["int8", "uint8", "int32", "int64", "float16", "float32", "float64", "bfloat16"]
UNSUPPORTED_DTYPES = ["complex64", "complex128"]
GARBAGE = ["abc", b"xy", 3.5, 7, [1, 2, 3], {"a": 1}, object(), (1.0,)]
# Operators valid for every dtype on one rank (a 1-rank reduction is the input itself).
IDENTITY_OPS = ["SUM", "PROD", "MAX", "MIN"]
INVALID_OPS = [99, -1, 1000]


def _like(buf):
    """A zeroed buffer of buf's kind, dtype and size (the output of a valid call)."""
    if isinstance(buf, torch.Tensor):
        return torch.zeros_like(buf)
    return np.zeros_like(buf)


def _make(kind: str, dtype: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 6, size=n).astype(np.float64)
    if dtype.startswith("uint"):
        values = np.abs(values)
    if kind == "numpy" and dtype != "bfloat16":
        return values.astype(dtype)
    return torch.from_numpy(values).to(getattr(torch, dtype))


def _as_numpy(buf):
    if isinstance(buf, torch.Tensor):
        return buf.to(torch.float64).numpy()
    return np.asarray(buf, dtype=np.float64)


@st.composite
def buffers(draw, n: int, name: str, bad: set, allow_bad: bool = True):
    """A buffer of n elements: valid (numpy or torch, contiguous, any supported dtype) or, when
    allow_bad, one the call must reject (complex dtype, non-contiguous view, garbage object);
    a rejected one adds ``name`` to ``bad``."""
    choice = draw(
        st.sampled_from(["valid"] * 4 + (["complex", "strided", "garbage"] if allow_bad else []))
    )
    kind = draw(st.sampled_from(["numpy", "torch"]))
    seed = draw(st.integers(0, 2**16))
    if choice == "valid":
        return _make(kind, draw(st.sampled_from(VALID_DTYPES)), n, seed)
    bad.add(name)
    if choice == "complex":
        dt = draw(st.sampled_from(UNSUPPORTED_DTYPES))
        arr = np.ones(n, dtype=dt)
        return torch.from_numpy(arr) if kind == "torch" else arr
    if choice == "strided":
        base = _make(kind, "float32", 2 * max(n, 2), seed)
        return base[::2]
    return draw(st.sampled_from(GARBAGE))


def _check_rejection(err: BaseException, bad: set, maybe: set) -> None:
    allowed = fuzz_cases.allowed_errors()
    assert isinstance(err, allowed), f"untyped error {type(err).__name__}: {err}"
    msg = str(err)
    if "incompatible function arguments" in msg:
        return  # pybind's own TypeError lists the whole signature
    names = bad | maybe
    if names & {"sendbuf", "recvbuf"}:
        # A bad buffer's size may be checked against the other one first, naming that one.
        names = names | {"sendbuf", "recvbuf"}
    assert any(name in msg for name in names), f"message names none of {sorted(names)}: {msg}"


def _call(log, label: str, fn, bad: set, maybe: set, **kwargs):
    """Calls fn(**kwargs); returns True when it succeeded (and so must be checked)."""
    log.record(f"{label}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    try:
        fn(**kwargs)
    except BaseException as err:  # noqa: BLE001 - the property classifies every error
        if not (bad or maybe):
            raise AssertionError(f"{label} rejected valid arguments {kwargs!r}") from err
        _check_rejection(err, bad, maybe)
        return False
    assert not bad, f"{label} accepted invalid {sorted(bad)}: {kwargs!r}"
    return True


def _same_type(buf, like):
    return (
        isinstance(buf, (np.ndarray, torch.Tensor))
        and isinstance(like, (np.ndarray, torch.Tensor))
        and type(buf) is type(like)
        and str(buf.dtype).replace("torch.", "") == str(like.dtype).replace("torch.", "")
    )


@st.composite
def ops(draw, bad: set, maybe: set, valid: bool = False):
    import rcclx_core

    choice = draw(st.sampled_from(["valid"] + ([] if valid else ["int_invalid", "other"])))
    if choice == "valid":
        return getattr(rcclx_core.RedOp, draw(st.sampled_from(IDENTITY_OPS)))
    if choice == "int_invalid":
        bad.add("op")
        return draw(st.sampled_from(INVALID_OPS))
    maybe.add("op")  # a bitwise op is valid only for integer dtypes; a str is a TypeError
    return draw(st.sampled_from(["sum", 2.5, rcclx_core.RedOp.BXOR, rcclx_core.RedOp.BAND]))


@st.composite
def roots(draw, nranks: int, bad: set, name: str = "root", valid: bool = False):
    choice = draw(st.sampled_from(["valid"] + ([] if valid else ["range", "type"])))
    if choice == "valid":
        return draw(st.integers(0, nranks - 1))
    bad.add(name)
    if choice == "range":
        return draw(st.sampled_from([-1, nranks, nranks + 5, -(2**31), 2**31 - 1]))
    return draw(st.sampled_from([0.5, "0", None, [0]]))


def _comm_one_rank():
    import ctran
    import rcclx_core

    return rcclx_core.Communicator.from_store(ctran.MemoryStore(), 0, 1)


# --- 1-rank properties -----------------------------------------------------------------------


def _fuzz_reductions(ctx, log):
    comm = _comm_one_rank()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        valid = data.draw(st.booleans())  # half the examples are valid calls, checked
        which = data.draw(
            st.sampled_from(["all_reduce", "reduce", "reduce_scatter", "reduce_scatter_v"])
        )
        n = data.draw(st.integers(0, 9))
        send = data.draw(buffers(n, "sendbuf", bad, allow_bad=not valid))
        kwargs = {"sendbuf": send, "op": data.draw(ops(bad, maybe, valid))}
        recv_len = data.draw(st.sampled_from([n] if valid else [n, n + 1, max(n - 1, 0)]))
        inplace = which in ("all_reduce", "reduce") and data.draw(st.booleans())
        recv = None
        if not inplace:
            recv = _like(send) if valid else data.draw(buffers(recv_len, "recvbuf", bad))
            if recv_len != n:
                bad.add("recvbuf")
                maybe.add("sendbuf")  # a size mismatch may be reported on either buffer
            kwargs["recvbuf"] = recv
            if "sendbuf" not in bad and "recvbuf" not in bad and not _same_type(recv, send):
                maybe.update({"recvbuf", "dtype", "type"})
        if which == "all_reduce" and data.draw(st.booleans()):
            algo = data.draw(st.sampled_from(["auto", "ring", "bogus", "", "RING"]))
            kwargs["algo"] = algo
            if algo == "bogus":
                bad.add("algo")
            elif algo == "":
                maybe.add("algo")  # an empty name is taken as unset (auto)
            elif algo != "auto":
                maybe.add("algo")
        if which == "reduce":
            kwargs["root"] = data.draw(roots(1, bad, valid=valid))
        if which == "reduce_scatter_v":
            counts = data.draw(
                st.sampled_from([[n]] if valid else [[n], [n + 1], [-1], [], [n, 0], "x"])
            )
            kwargs["counts"] = counts
            if counts != [n]:
                bad.add("counts")
        if op_name(kwargs["op"]) in ("BXOR", "BAND") and "sendbuf" not in bad:
            if "float" in str(send.dtype):
                bad.discard("op")
                maybe.add("op")
        if _call(log, which, getattr(comm, which), bad, maybe, **kwargs):
            if "sendbuf" in bad or isinstance(kwargs["op"], (str, float)):
                return
            out = send if recv is None else recv
            if _same_type(out, send):
                np.testing.assert_array_equal(_as_numpy(out), _as_numpy(send), err_msg=which)

    prop()


def op_name(op):
    return getattr(op, "name", str(op))


def _fuzz_data_movement(ctx, log):
    comm = _comm_one_rank()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        valid = data.draw(st.booleans())  # half the examples are valid calls, checked
        which = data.draw(
            st.sampled_from(
                [
                    "broadcast",
                    "all_gather",
                    "all_gather_v",
                    "all_to_all",
                    "all_to_all_v",
                    "gather",
                    "scatter",
                ]
            )
        )
        n = data.draw(st.integers(0, 9))
        send = data.draw(buffers(n, "sendbuf", bad, allow_bad=not valid))
        recv_len = data.draw(st.sampled_from([n] if valid else [n, n + 1, max(n - 1, 0)]))
        recv = _like(send) if valid else data.draw(buffers(recv_len, "recvbuf", bad))
        kwargs = {"sendbuf": send, "recvbuf": recv}
        if recv_len < n or (recv_len != n and which in ("broadcast", "all_to_all", "scatter")):
            maybe.add("recvbuf")
        if recv_len != n:
            maybe.update({"recvbuf", "sendbuf"})  # a size mismatch may be reported on either
        if "sendbuf" not in bad and "recvbuf" not in bad and not _same_type(recv, send):
            maybe.update({"recvbuf", "dtype", "type"})
        if which in ("broadcast", "gather", "scatter"):
            kwargs["root"] = data.draw(roots(1, bad, valid=valid))
        if which == "all_gather_v":
            counts = data.draw(
                st.sampled_from([[n]] if valid else [[n], [n + 1], [-1], [], [n, 0], None])
            )
            kwargs["recv_counts"] = counts
            if counts != [n]:
                bad.add("recv_counts")
        if which == "all_to_all_v":
            for key in ("send_counts", "recv_counts"):
                counts = data.draw(
                    st.sampled_from([[n]] if valid else [[n], [n + 1], [-1], [], [n, 0]])
                )
                kwargs[key] = counts
                if counts != [n]:
                    maybe.update({key, "sendbuf", "recvbuf"})  # may be reported on a buffer
            displs = data.draw(
                st.sampled_from([None, [0]] if valid else [None, [0], [1], [-1], [0, 0]])
            )
            if displs is not None:
                kwargs["send_displs"] = displs
                if displs != [0]:
                    maybe.update({"send_displs", "send_counts", "sendbuf"})
        ok = _call(log, which, getattr(comm, which), bad, maybe, **kwargs)
        clean = not (maybe - {"recvbuf"}) and recv_len == n
        if ok and clean and _same_type(recv, send):
            np.testing.assert_array_equal(_as_numpy(recv), _as_numpy(send), err_msg=which)

    prop()


def _fuzz_dtype_override(ctx, log):
    import rcclx_core

    comm = _comm_one_rank()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        nbytes = data.draw(st.integers(0, 24))
        send = np.frombuffer(np.random.default_rng(nbytes).bytes(nbytes), dtype=np.uint8).copy()
        dtype = data.draw(
            st.one_of(
                st.sampled_from(list(rcclx_core.DataType.__members__.values())),
                st.sampled_from([99, -3, "float32", 1.5, None]),
            )
        )
        if dtype is not None:
            # A byte count that is not a whole number of elements is reported on the buffer.
            maybe.update({"dtype", "sendbuf"})
        before = send.copy()
        which = data.draw(st.sampled_from(["all_reduce", "broadcast"]))
        kwargs = {"sendbuf": send, "dtype": dtype}
        if which == "all_reduce":
            kwargs["op"] = rcclx_core.RedOp.MAX
        if _call(log, which, getattr(comm, which), bad, maybe, **kwargs):
            # One rank: the result is the input, whatever element type the bytes are read as.
            # (A NaN may come back as another NaN: its sign and payload are not data.)
            if send.tobytes() != before.tobytes():
                as_type = _TORCH_TYPES[dtype.name]
                got = torch.from_numpy(send).view(as_type).to(torch.float64)
                want = torch.from_numpy(before).view(as_type).to(torch.float64)
                torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)

    prop()


_TORCH_TYPES = {
    "INT8": torch.int8,
    "UINT8": torch.uint8,
    "INT32": torch.int32,
    "UINT32": torch.uint32,
    "INT64": torch.int64,
    "UINT64": torch.uint64,
    "FLOAT16": torch.float16,
    "FLOAT32": torch.float32,
    "FLOAT64": torch.float64,
    "BFLOAT16": torch.bfloat16,
    "FLOAT8_E4M3": torch.float8_e4m3fn,
    "FLOAT8_E5M2": torch.float8_e5m2,
}


def _fuzz_send_recv(ctx, log):
    comm = _comm_one_rank()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        n = data.draw(st.integers(0, 9))
        which = data.draw(st.sampled_from(["send", "recv"]))
        buf = data.draw(buffers(n, "buf", bad))
        peer = data.draw(roots(1, bad, name="peer"))
        if not bad:
            # A valid self-exchange runs as a group: a lone send to self would wait for its recv.
            out = _like(buf)
            log.record(f"group(send({buf!r}, 0), recv({out!r}, 0))")
            with comm.group():
                comm.send(buf, 0)
                comm.recv(out, 0)
            if _same_type(out, buf):
                np.testing.assert_array_equal(_as_numpy(out), _as_numpy(buf))
            return
        _call(log, which, getattr(comm, which), bad, maybe, buf=buf, peer=peer)

    prop()


def _fuzz_alltoallv_dynamic(ctx, log):
    comm = _comm_one_rank()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        rows = data.draw(st.integers(0, 6))
        row_elems = data.draw(st.sampled_from([1, 1, 2, 0, -1]))
        elems = rows * max(row_elems, 1)
        send = data.draw(buffers(elems, "sendbuf", bad))
        cap = data.draw(st.sampled_from([elems, elems, elems + 2, max(elems - 1, 0)]))
        recv = data.draw(buffers(cap, "recvbuf", bad))
        split = data.draw(st.sampled_from([[rows], [rows + 1], [-1], [], [rows, 0]]))
        split_kind = data.draw(st.sampled_from(["int64", "int32", "list", "float64"]))
        if split_kind == "list":
            in_splits = split
        else:
            in_splits = torch.tensor(split, dtype=getattr(torch, split_kind))
        out_splits = torch.zeros(data.draw(st.sampled_from([1, 1, 0, 2])), dtype=torch.int64)
        if row_elems <= 0:
            bad.add("row_elems")
        if split != [rows] or split_kind != "int64":
            maybe.add("input_split_sizes")
        if out_splits.numel() != 1:
            maybe.add("output_split_sizes")
        if cap != elems or not _same_type(recv, send):
            maybe.update({"recvbuf", "max_output_rows", "rank", "dtype"})
        # The core names this call's buffers input/output, as torchcomms does (see
        # test_alltoallv_dynamic_names_its_buffers_as_the_caller_passed_them).
        maybe.update(
            alias
            for name, alias in (("sendbuf", "input"), ("recvbuf", "output"))
            if name in bad | maybe
        )
        kwargs = dict(
            input=send,
            output=recv,
            input_split_sizes=in_splits,
            output_split_sizes=out_splits,
            row_elems=row_elems,
        )
        if _call(log, "alltoallv_dynamic", comm.alltoallv_dynamic, bad, maybe, **kwargs):
            if not maybe:
                assert int(out_splits[0]) == rows
                if _same_type(recv, send):
                    np.testing.assert_array_equal(_as_numpy(recv), _as_numpy(send))

    prop()


ONE_RANK_PROPERTIES = [
    _fuzz_reductions,
    _fuzz_data_movement,
    _fuzz_dtype_override,
    _fuzz_send_recv,
    _fuzz_alltoallv_dynamic,
]


def _fuzz_all_one_rank(ctx, log):
    # Every property runs even when an earlier one fails, and the failure names its property.
    failures = []
    for prop in ONE_RANK_PROPERTIES:
        try:
            prop(ctx, log)
        except Exception as err:  # noqa: BLE001 - reported with the property's name
            failures.append(f"{prop.__name__}: {type(err).__name__}: {err}")
    assert not failures, "\n".join(failures)


def test_fuzz_one_rank(tmp_path):
    # One forked rank for all of them: a launch costs seconds on a loaded machine.
    fuzz_cases.run_isolated(_fuzz_all_one_rank, 1, tmp_path)


# --- the minimal examples the fuzzing found, as regular tests --------------------------------


@pytest.mark.parametrize("dtype", ["float32", 1.5, object()])
def test_dtype_of_the_wrong_type_is_a_type_error_naming_dtype(dtype):
    comm = _comm_one_rank()
    with pytest.raises(TypeError, match="dtype"):
        comm.all_reduce(np.ones(4, dtype=np.uint8), dtype=dtype)
    with pytest.raises(TypeError, match="dtype"):
        comm.broadcast(np.ones(4, dtype=np.uint8), dtype=dtype)


@pytest.mark.parametrize("counts", [None, "x", 1.5, [1.5]])
def test_counts_of_the_wrong_type_are_a_type_error_naming_them(counts):
    comm = _comm_one_rank()
    buf = np.ones(2, dtype=np.float32)
    with pytest.raises(TypeError, match="recv_counts"):
        comm.all_gather_v(buf, np.zeros(2, dtype=np.float32), recv_counts=counts)
    with pytest.raises(TypeError, match="counts"):
        comm.reduce_scatter_v(buf, np.zeros(2, dtype=np.float32), counts=counts)


def test_alltoallv_dynamic_names_its_buffers_as_the_caller_passed_them():
    """Its parameters carry torchcomms' names (input, output, input_split_sizes, ...), and so
    do its messages: a strided input is refused as `input`, by the keyword the caller used."""
    comm = _comm_one_rank()
    with pytest.raises(rcclx_core_errors(), match=r"alltoallv_dynamic: input\b"):
        comm.alltoallv_dynamic(
            input=np.zeros(4, dtype=np.float32)[::2],
            output=np.zeros(2, dtype=np.float32),
            input_split_sizes=torch.tensor([2], dtype=torch.int64),
            output_split_sizes=torch.zeros(1, dtype=torch.int64),
        )


def rcclx_core_errors():
    import rcclx_core

    return rcclx_core.InvalidArgumentError


# --- 2-rank properties: arguments whose validity depends on the peers ------------------------


def _fuzz_peer_arguments(ctx, log):
    import rcclx_core

    comm = rcclx_core.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks)

    @fuzz_cases.settings(max(EXAMPLES_2R, 1))
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        which = data.draw(
            st.sampled_from(
                ["reduce", "broadcast", "gather", "scatter", "reduce_scatter_v", "all_gather_v"]
            )
        )
        n = data.draw(st.integers(1, 6))
        send = np.full(2 * n, ctx.rank + 1, dtype=np.float32)
        recv = np.zeros(2 * n, dtype=np.float32)
        kwargs = {"sendbuf": send, "recvbuf": recv}
        if which in ("reduce", "broadcast", "gather", "scatter"):
            # Every rank draws the same root, so an invalid one is rejected on both ranks.
            kwargs["root"] = data.draw(roots(2, bad))
            if which in ("broadcast", "reduce"):
                kwargs["sendbuf"], kwargs["recvbuf"] = send[:n], recv[:n]
            if which == "gather":
                kwargs["sendbuf"] = send[:n]
            if which == "scatter":
                kwargs["recvbuf"] = recv[:n]
        else:
            # Counts that do not sum to the buffer, of the wrong length or negative.
            counts = data.draw(
                st.sampled_from([[n, n], [n, n], [n, n + 1], [n], [n, n, 0], [-1, 2 * n + 1]])
            )
            if counts != [n, n]:
                bad.add("counts" if which == "reduce_scatter_v" else "recv_counts")
            if which == "reduce_scatter_v":
                kwargs.update(counts=counts, recvbuf=recv[:n])
            else:
                kwargs.update(recv_counts=counts, sendbuf=send[:n])
        if _call(log, which, getattr(comm, which), bad, maybe, **kwargs):
            root = kwargs.get("root", 0)
            if which == "reduce" and ctx.rank == root:
                np.testing.assert_array_equal(recv[:n], np.full(n, 3.0))
            if which == "broadcast":
                np.testing.assert_array_equal(recv[:n], np.full(n, root + 1.0))
            if which == "gather" and ctx.rank == root:
                np.testing.assert_array_equal(recv, np.repeat([1.0, 2.0], n))
            if which == "scatter":
                np.testing.assert_array_equal(recv[:n], np.full(n, root + 1.0))
            if which == "reduce_scatter_v":
                np.testing.assert_array_equal(recv[:n], np.full(n, 3.0))
            if which == "all_gather_v":
                np.testing.assert_array_equal(recv, np.repeat([1.0, 2.0], n))

    prop()
    comm.barrier()


EXAMPLES_2R = fuzz_cases.EXAMPLES


def test_fuzz_peer_arguments_two_ranks(tmp_path):
    fuzz_cases.run_isolated(_fuzz_peer_arguments, 2, tmp_path)
