"""Object collectives (``torchcomms.objcol``: the real torchcomms' where installed, else the
stand-in's, torchcomms_rcclx.objcol) on 3 ranks: objects of different sizes per rank gathered,
broadcast, scattered, sent and received; a tensor travels inside a dict."""

from __future__ import annotations

import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")


def _obj(r: int):
    return {"rank": r, "name": "x" * (10 * r + 1), "t": torch.arange(r + 1)}


def _same(a, b) -> bool:
    return a["rank"] == b["rank"] and a["name"] == b["name"] and torch.equal(a["t"], b["t"])


def _objcol_rank(ctx):
    from torchcomms import objcol

    comm = H.comm_of(ctx, "objects")
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    got = [None] * n
    objcol.all_gather_object(comm, got, _obj(me))
    out["all_gather_object"] = all(_same(got[r], _obj(r)) for r in range(n))
    gathered = [None] * n if me == 1 else None
    objcol.gather_object(comm, _obj(me), 1, gathered)
    out["gather_object"] = me != 1 or all(_same(gathered[r], _obj(r)) for r in range(n))
    lst = [_obj(2), "two", 2] if me == 2 else [None, None, None]
    objcol.broadcast_object_list(comm, lst, 2)
    out["broadcast_object_list"] = _same(lst[0], _obj(2)) and lst[1:] == ["two", 2]
    mine = [None]
    objcol.scatter_object_list(comm, 0, mine, [_obj(r) for r in range(n)] if me == 0 else None)
    out["scatter_object_list"] = _same(mine[0], _obj(me))
    if me == 0:
        objcol.send_object_list(comm, [_obj(0), [1, 2]], 1)
    elif me == 1:
        got = [None, None]
        objcol.recv_object_list(comm, got, 0)
        out["send/recv_object_list"] = _same(got[0], _obj(0)) and got[1] == [1, 2]
    comm.finalize()
    return out


def test_object_collectives():
    results = launch(_objcol_rank, 3)
    for r in results:
        assert r.value and all(r.value.values()), (r.rank, r.value)
    assert "send/recv_object_list" in results[1].value
