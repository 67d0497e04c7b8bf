"""Property-based fuzzing of the torchcomms communicator (torchcomms_rcclx.new_comm) on one rank.

Property: every call either succeeds with the reference result (when every argument is valid)
or raises one of the typed errors of fuzz_cases.allowed_errors() whose message names an argument
that was made invalid. Tensors of every dtype (complex and bool included), non-contiguous views,
meta tensors, numpy arrays and garbage objects; ops including PREMUL_SUM with generated factors;
roots and peers of every kind; split sizes; hints and timeouts. The properties run in a forked
rank, so a crash fails the test with the example.
"""

from __future__ import annotations

import os

import pytest

hypothesis = pytest.importorskip("hypothesis")
torch = pytest.importorskip("torch")

import fuzz_cases  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.timeout(fuzz_cases.TIMEOUT + 30)

VALID_DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64]
VALID_DTYPES += [torch.float16, torch.bfloat16, torch.float32, torch.float64]
GARBAGE = ["abc", 3.5, 7, [1.0, 2.0], None, object()]


def _new_comm():
    import torch.distributed as dist

    import torchcomms_rcclx as tc

    return tc.new_comm("rcclx", "cpu", "fuzz", store=dist.HashStore())


@st.composite
def tensors(draw, n: int, name: str, bad: set, maybe: set, valid: bool = False):
    """n elements: a valid contiguous CPU tensor, one that only some calls take (bool, complex:
    ``name`` added to ``maybe``), or (adding ``name`` to ``bad``) a non-contiguous, meta, numpy
    or garbage argument."""
    import numpy as np

    choice = draw(
        st.sampled_from(["valid"] * 5 + ["complex", "strided", "meta", "numpy", "garbage", "bool"])
    )
    values = torch.arange(n, dtype=torch.float64) % 7 - 3
    if choice == "valid":
        dtype = draw(st.sampled_from(VALID_DTYPES))
        return (values.abs() if dtype == torch.uint8 else values).to(dtype)
    if choice == "bool":
        maybe.add(name)  # bool is a byte type for data movement; reductions may refuse it
        return values > 0
    if choice == "complex":
        maybe.add(name)  # pairs of reals: moved, and reduced by linear operators only
        return values.to(torch.complex64)
    bad.add(name)
    if choice == "strided":
        return torch.zeros(2 * max(n, 2))[::2]
    if choice == "meta":
        return torch.empty(n, device="meta")
    if choice == "numpy":
        return np.zeros(n, dtype=np.float32)
    return draw(st.sampled_from(GARBAGE))


@st.composite
def reduce_ops(draw, bad: set, maybe: set, valid: bool = False):
    import torchcomms_rcclx as tc

    choice = draw(
        st.sampled_from(["plain", "premul"] + ([] if valid else ["premul_bad", "garbage"]))
    )
    if choice == "plain":
        return draw(
            st.sampled_from(
                [tc.ReduceOp.SUM, tc.ReduceOp.MAX, tc.ReduceOp.MIN, tc.ReduceOp.PRODUCT]
            )
        )
    if choice == "premul":
        maybe.add("op")  # PREMUL_SUM is for floating point tensors
        factor = draw(st.one_of(st.floats(-4, 4, allow_nan=False), st.integers(-4, 4)))
        return tc.ReduceOp.PREMUL_SUM(factor)
    if choice == "premul_bad":
        # A factor that is not a number, or a tensor of the wrong shape: rejected either when
        # the op is made or when it is used.
        maybe.update({"op", "factor", "PREMUL_SUM", "tensor"})
        factor = draw(st.sampled_from(["2", None, [1.0], torch.ones(3), float("nan")]))
        return ("premul", factor)
    bad.add("op")
    return draw(st.sampled_from(["SUMM", 3, None, 1.5]))


def _fuzz_torchcomm(ctx, log):
    import torchcomms_rcclx as tc

    os.environ["TORCHCOMM_RANK"] = "0"  # a forked rank of its own: nothing else sees these
    os.environ["TORCHCOMM_SIZE"] = "1"
    comm = _new_comm()
    allowed = fuzz_cases.allowed_errors()

    @fuzz_cases.settings()
    @hypothesis.given(data=st.data())
    def prop(data):
        bad, maybe = set(), set()
        # Half the examples are valid calls, whose results are checked.
        valid = data.draw(st.booleans())
        which = data.draw(
            st.sampled_from(
                [
                    "all_reduce",
                    "reduce",
                    "broadcast",
                    "all_gather_single",
                    "reduce_scatter_single",
                    "all_to_all_single",
                    "all_to_all_v_single",
                    "gather_single",
                    "send",
                    "recv",
                ]
            )
        )
        n = data.draw(st.integers(0, 8))
        first = data.draw(
            tensors(
                n,
                "tensor"
                if which in ("all_reduce", "reduce", "broadcast", "send", "recv")
                else "input",
                bad,
                maybe,
                valid,
            )
        )
        args: dict = {}
        if which in ("all_reduce", "reduce", "broadcast", "send", "recv"):
            args["tensor"] = first
        else:
            out_len = data.draw(st.sampled_from([n] if valid else [n, n + 1]))
            if valid and isinstance(first, torch.Tensor):
                out = torch.zeros(out_len, dtype=first.dtype)
                maybe.update({"output"} if "input" in bad | maybe else set())
            else:
                out = data.draw(tensors(out_len, "output", bad, maybe, valid))
            if out_len != n:
                bad.add("output")
                maybe.add("input")
            if (
                "input" not in bad | maybe
                and "output" not in bad | maybe
                and out.dtype != first.dtype
            ):
                bad.add("output")
                maybe.add("input")
            args.update(output=out, input=first)
        op = None
        if which in ("all_reduce", "reduce", "reduce_scatter_single"):
            op = data.draw(reduce_ops(bad, maybe, valid))
            if isinstance(op, tuple):
                try:
                    op = tc.ReduceOp.PREMUL_SUM(op[1])
                except allowed as err:
                    assert any(k in str(err) for k in ("factor", "PREMUL_SUM")), str(err)
                    return
            args["op"] = op
            if getattr(op, "factor", None) is not None and not bad and maybe == {"op"}:
                if first.dtype.is_floating_point:
                    maybe.discard("op")
        if which in ("reduce", "broadcast", "gather_single"):
            root = data.draw(st.sampled_from([0] if valid else [0, 1, -1, 2**40, 0.0, "0", True]))
            args["root"] = root
            if root is True:
                maybe.add("root")
            elif root != 0 or not isinstance(root, int):
                bad.add("root")
        if which in ("send", "recv"):
            peer_name = "dst" if which == "send" else "src"
            peer = data.draw(st.sampled_from([1, -1, 2**40, 0.5, "0", None]))
            args[peer_name] = peer
            bad.add(peer_name)  # a valid peer would wait for the matching call: not fuzzed here
        if which == "all_to_all_v_single":
            for key in ("output_split_sizes", "input_split_sizes"):
                sizes = data.draw(
                    st.sampled_from([[n]] if valid else [[n], [n + 1], [-1], [], [n, 0], "x", None])
                )
                args[key] = sizes
                if sizes != [n]:
                    maybe.add(key)
                    maybe.update({"split", "input", "output"})
        if not valid and data.draw(st.integers(0, 5)) == 0:
            # A name rcclx does not read is ignored (torchcomms' contract); the others are bad.
            hints = data.draw(
                st.sampled_from([{"fast": "1"}, {"low_precision": "maybe"}, "x", {1: 2}])
            )
            args["hints"] = hints
            (maybe if hints == {"fast": "1"} else bad).add("hints")
            maybe.add("hint")
        if not valid and data.draw(st.integers(0, 5)) == 0:
            timeout = data.draw(st.sampled_from([0, -1, "1s", 1e9]))
            args["timeout"] = timeout
            if timeout != 1e9:
                bad.add("timeout")
        log.record(f"{which}({', '.join(f'{k}={v!r}' for k, v in args.items())})")
        before = (
            first.clone()
            if isinstance(first, torch.Tensor) and first.device.type == "cpu"
            else None
        )
        try:
            getattr(comm, which)(**args)
        except BaseException as err:  # noqa: BLE001 - the property classifies every error
            if not (bad or maybe):
                raise AssertionError(f"{which} rejected valid arguments {args!r}") from err
            assert isinstance(err, allowed), f"untyped error {type(err).__name__}: {err}"
            names = bad | maybe
            assert any(name in str(err) for name in names), (
                f"message names none of {sorted(names)}: {err}"
            )
            return
        assert not bad, f"{which} accepted invalid {sorted(bad)}: {args!r}"
        if maybe or before is None:
            return
        # One rank: every collective's result is its input (times the factor for PREMUL_SUM).
        result = args.get("output", first)
        expected = before
        if op is not None and getattr(op, "factor", None) is not None:
            expected = (before.to(torch.float64) * float(op.factor)).to(before.dtype)
        torch.testing.assert_close(
            result.to(torch.float64), expected.to(torch.float64), rtol=1e-2, atol=1e-2
        )

    prop()
    comm.finalize()


def test_fuzz_torchcomm_one_rank(tmp_path):
    fuzz_cases.run_isolated(_fuzz_torchcomm, 1, tmp_path)


@pytest.mark.parametrize("splits", [None, 3, object()])
def test_split_sizes_that_are_not_a_sequence_are_a_type_error_naming_them(splits, monkeypatch):
    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    comm = _new_comm()
    try:
        with pytest.raises(TypeError, match="input_split_sizes"):
            comm.all_to_all_v_single(torch.zeros(2), torch.ones(2), [2], splits)
        with pytest.raises(TypeError, match="output_split_sizes"):
            comm.all_to_all_v_single(torch.zeros(2), torch.ones(2), splits, [2])
    finally:
        comm.finalize()
