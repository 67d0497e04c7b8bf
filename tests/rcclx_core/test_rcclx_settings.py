"""A communicator's configuration: read once at creation from the environment and its hints
(CommConfig), kept for its life and for its children; the Python communicator type survives
factories and splits."""

import numpy as np
import pytest

import rcclx_core as rc
from launcher import launch


def _one_rank(**kw):
    return rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1, **kw)


def test_hints_override_the_environment(monkeypatch):
    monkeypatch.setenv("RCCLX_ALLREDUCE_ALGO", "dda_tree")
    assert rc._testing.selection(_one_rank(), 64)[0] == "dda_tree"
    hinted = _one_rank(hints={"RCCLX_ALLREDUCE_ALGO": "ring"})
    assert rc._testing.selection(hinted, 64) == ("ring", "forced by RCCLX_ALLREDUCE_ALGO=ring")
    # knob names in any case; thresholds too
    lower = _one_rank(
        hints={"rcclx_allreduce_algo": "auto", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "1K"}
    )
    assert rc._testing.selection(lower, 2048) == ("dda_tree", "2048 bytes <= tree max 2097152")


def test_the_environment_is_read_at_creation_only(monkeypatch):
    comm = _one_rank()
    before = rc._testing.selection(comm, 64)
    monkeypatch.setenv("RCCLX_ALLREDUCE_ALGO", "ring")
    monkeypatch.setenv("RCCLX_P2P_CHUNK_BYTES", "not-a-size")  # would fail a new communicator
    assert rc._testing.selection(comm, 64) == before
    x = np.arange(10.0)
    comm.all_reduce(x)
    assert np.array_equal(x, np.arange(10.0))
    with pytest.raises(rc.InvalidArgumentError, match="RCCLX_P2P_CHUNK_BYTES='not-a-size'"):
        _one_rank()


def test_bad_hints_fail_the_creation_naming_them():
    with pytest.raises(rc.InvalidArgumentError, match=r"hint RCCLX_NO_SUCH_KNOB='1' names no knob"):
        _one_rank(hints={"RCCLX_NO_SUCH_KNOB": "1"})
    with pytest.raises(
        rc.InvalidArgumentError, match=r"hint RCCLX_ALLREDUCE_ALGO='fastest' is not one of"
    ):
        _one_rank(hints={"RCCLX_ALLREDUCE_ALGO": "fastest"})
    with pytest.raises(rc.InvalidArgumentError, match=r"hint RCCLX_DDA_ENABLE='maybe'"):
        _one_rank(hints={"RCCLX_DDA_ENABLE": "maybe"})


def _split_rank(ctx):
    import rcclx_core as rc

    comm = rc.Communicator.from_store(
        ctx.store(), ctx.rank, ctx.nranks, hints={"RCCLX_ALLREDUCE_ALGO": "ring"}
    )
    sub = comm.split(ctx.rank % 2)
    listed = comm.split_ranks([0, 1])
    out = {
        "types": [type(c).__name__ for c in (comm, sub)],
        "subclass": isinstance(sub, rc.Communicator) and hasattr(sub, "group"),
        "child algo": rc._testing.selection(sub, 64)[0],
        "listed": None if listed is None else (listed.size, rc._testing.selection(listed, 64)[0]),
    }
    x = np.full(4, ctx.rank + 1.0)
    with sub.group():
        sub.all_reduce(x)
    out["sum"] = x.tolist()
    for c in (listed, sub, comm):
        if c is not None:
            c.destroy()
    return out


def test_children_keep_hints_and_the_python_type():
    results = [r.value for r in launch(_split_rank, 3, timeout=60)]
    for rank, r in enumerate(results):
        assert r["types"] == ["Communicator", "Communicator"]
        assert r["subclass"] and r["child algo"] == "ring"
        assert r["listed"] == ((2, "ring") if rank < 2 else None)
        want = 1.0 + 3.0 if rank % 2 == 0 else 2.0
        assert r["sum"] == [want] * 4


def test_sync_calls_return_none_and_async_calls_a_work():
    comm = _one_rank()
    x = np.ones(8)
    assert comm.all_reduce(x) is None
    work = comm.all_reduce(x, async_op=True)
    assert isinstance(work, rc.Work) and work.wait() and work.is_completed()
    assert work.description.startswith("all_reduce #")
    comm.destroy()
