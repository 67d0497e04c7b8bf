"""new_comm, through torchcomms' ``new_comm("rcclx")`` (the real torchcomms where installed, else
the stand-in) and directly (``torchcomms_rcclx.new_comm``): rank and size from the launcher's
environment (torchcomms' variables first, then Open MPI's, PMI's, torchrun's), the store from
MASTER_ADDR / MASTER_PORT or store=, the device and the hints (the ones rcclx knows applied,
the others ignored and logged once), and what it refuses."""

from __future__ import annotations

import datetime

import checks
import pytest

from launcher import launch

torch = pytest.importorskip("torch")

import torchcomms  # noqa: E402

import rcclx_core  # noqa: E402
import torchcomms_rcclx as tc  # noqa: E402
from torchcomms_rcclx import _hints, _setup  # noqa: E402

H_REAL = getattr(torchcomms, "STANDIN", None) is None  # the real torchcomms is installed


def _sum_of_ranks(comm) -> float:
    t = torch.full((5,), float(comm.get_rank() + 1))
    comm.all_reduce(t, torchcomms.ReduceOp.SUM, False)
    return t[0].item()


def _from_env_rank(ctx):
    comm = torchcomms.new_comm("rcclx", torch.device("cpu"), "from_env")
    second = tc.new_comm("rcclx", "cpu", "from_env")  # same name, same store: own keys
    got = (
        comm.get_rank(),
        comm.get_size(),
        comm.get_name(),
        str(comm.get_device()),
        comm.get_backend(),
        _sum_of_ranks(comm),
        _sum_of_ranks(second),
    )
    second.finalize()
    comm.finalize()
    return got


def test_new_comm_from_torchrun_environment():
    port = checks.free_port()
    results = launch(
        _from_env_rank,
        3,
        rank_env=lambda r: {
            "RANK": str(r),
            "WORLD_SIZE": "3",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        },
    )
    assert [r.value for r in results] == [
        (r, 3, "from_env", "cpu", "rcclx", 6.0, 6.0) for r in range(3)
    ]


def _from_store_rank(ctx):
    import torch.distributed as dist

    # A torch store (rank 0 hosts it; the port travels through the launch's store).
    if ctx.rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, ctx.nranks, is_master=True, wait_for_workers=False)
        ctx.store().set("tc/port", str(store.port).encode())
    else:
        store = dist.TCPStore("127.0.0.1", int(ctx.store().get("tc/port")), ctx.nranks)
    hints = {"rcclx_allreduce_algo": "ring", "persistent_store": "true"}  # a foreign one too
    comm = torchcomms.new_comm(
        "rcclx",
        torch.device("cpu"),
        "from_store",
        store=store,
        timeout=datetime.timedelta(seconds=20),
        hints=hints,
    )
    opts = comm.get_options()
    backend = comm.get_backend_impl()
    algo, _ = rcclx_core._testing.selection(backend.get_core(), 4096)
    got = (
        comm.get_rank(),
        _sum_of_ranks(comm),
        opts.timeout.total_seconds(),
        dict(opts.hints),
        algo,
        type(backend).__mro__[1].__name__ if H_REAL else type(backend).__name__,
    )
    comm.finalize()
    return got


def test_new_comm_from_a_torch_store_with_timeout_and_hints():
    results = launch(
        _from_store_rank,
        2,
        rank_env=lambda r: {"TORCHCOMM_RANK": str(r), "TORCHCOMM_SIZE": "2", "RANK": "9"},
    )
    hints = {"rcclx_allreduce_algo": "ring", "persistent_store": "true"}
    assert [r.value for r in results] == [
        (r, 3.0, 20.0, hints, "ring", "TorchCommRCCLX") for r in range(2)
    ]


def test_importing_the_package_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, torchcomms_rcclx; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_rank_and_size_take_the_first_variables_set():
    env = {"RANK": "1", "WORLD_SIZE": "4", "PMI_RANK": "2", "PMI_SIZE": "3"}
    assert _setup.rank_and_size(env) == (2, 3)
    env |= {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}
    assert _setup.rank_and_size(env) == (0, 2)
    env |= {"TORCHCOMM_RANK": "1", "TORCHCOMM_SIZE": "5"}
    assert _setup.rank_and_size(env) == (1, 5)
    assert _setup.rank_and_size({"RANK": "3", "WORLD_SIZE": "4"}) == (3, 4)


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "no rank and world size"),
        ({"RANK": "0"}, "RANK is set but WORLD_SIZE is not"),
        ({"TORCHCOMM_RANK": "x", "TORCHCOMM_SIZE": "2"}, "must be integers"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not a rank of WORLD_SIZE=2"),
    ],
)
def test_bad_environment_is_named(env, message):
    with pytest.raises(rcclx_core.InvalidArgumentError, match=message):
        _setup.rank_and_size(env)


def test_new_comm_refuses_what_it_cannot_run(monkeypatch):
    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    with pytest.raises(rcclx_core.InvalidArgumentError, match="backend 'nccl'"):
        tc.new_comm("nccl", "cpu", "x")
    with pytest.raises(rcclx_core.InvalidArgumentError, match="name must be"):
        tc.new_comm("rcclx", "cpu", "")
    with pytest.raises(rcclx_core.InvalidArgumentError, match="'meta' is not supported"):
        tc.new_comm("rcclx", torch.device("meta"), "x")
    with pytest.raises(TypeError, match=r"hints\['RCCLX_ALLREDUCE_ALGO'\] must be a string"):
        _hints.comm_knobs({"RCCLX_ALLREDUCE_ALGO": 3}, "new_comm")
    with pytest.raises(rcclx_core.InvalidArgumentError, match="timeout must be"):
        tc.new_comm("rcclx", "cpu", "x", timeout=-1)
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(rcclx_core.InvalidArgumentError, match="MASTER_ADDR"):
        tc.new_comm("rcclx", "cpu", "x")
    if torch.cuda.device_count() == 0:
        for dev in ("cuda", "hip"):
            with pytest.raises(rcclx_core.InvalidArgumentError, match="sees no GPU"):
                tc.new_comm("rcclx", torch.device(dev), "x")


def test_bad_hints_fail_the_creation(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv("TORCHCOMM_RANK", "0")
    monkeypatch.setenv("TORCHCOMM_SIZE", "1")
    with pytest.raises(rcclx_core.InvalidArgumentError, match="RCCLX_ALLREDUCE_ALGO"):
        tc.new_comm(
            "rcclx", "cpu", "x", store=dist.HashStore(), hints={"rcclx_allreduce_algo": "no"}
        )


def test_reduce_ops_map_to_the_core():
    assert tc.ReduceOp.SUM.code == int(rcclx_core.RedOp.SUM)
    assert tc.ReduceOp.PRODUCT.code == int(rcclx_core.RedOp.PROD)
    for name in ("MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"):
        op = getattr(tc.ReduceOp, name)
        assert op.code == int(getattr(rcclx_core.RedOp, name)) and op.type.name == name
    p = tc.ReduceOp.PREMUL_SUM(torch.tensor([0.25]))
    assert p.code == int(rcclx_core.RedOp.PREMUL_SUM) and p.scalar() == 0.25
    assert tc.ReduceOp.PREMUL_SUM(3).scalar() == 3.0
    import torch.distributed as dist

    from torchcomms_rcclx._ops import as_reduce_op

    assert as_reduce_op(dist.ReduceOp.PRODUCT, "x") is tc.ReduceOp.PRODUCT
    assert as_reduce_op(dist.ReduceOp.AVG, "x") is tc.ReduceOp.AVG
    for bad in (torch.ones(2), "2", None, True):
        with pytest.raises(TypeError, match="factor must be"):
            tc.ReduceOp.PREMUL_SUM(bad)


def test_hints_rcclx_knows_are_applied_and_others_ignored_once(monkeypatch):
    """torchcomms' contract: a backend reads the hints it knows and ignores the rest, so a
    program tuned for another backend runs unchanged; each ignored name is logged once."""
    logged = []
    monkeypatch.setattr(_hints.ctran, "log_info", logged.append)
    monkeypatch.setattr(_hints, "_logged", set())
    hints = {"rcclx_allreduce_algo": "ring", "RCCLX_TIMEOUT_MS": "5000", "nccl_algo": "tree"}
    for _ in range(3):
        assert _hints.comm_knobs(hints, "new_comm") == {
            "RCCLX_ALLREDUCE_ALGO": "ring",
            "RCCLX_TIMEOUT_MS": "5000",
        }
    assert _hints.call_options("all_reduce", {"algo": "ring", "low_precision": "1"}) == (
        "ring",
        True,
    )
    for _ in range(2):
        assert _hints.call_options("broadcast", {"algo": "ring", "hint_key": "x"}) == (None, None)
    assert _hints.call_options("all_gather", {"RCCL_LOW_PRECISION_ENABLE": "0"}) == (None, False)
    assert len(logged) == 3 and all("ignored" in line for line in logged), logged
    assert "'nccl_algo'" in logged[0] and "new_comm" in logged[0]
    with pytest.raises(rcclx_core.InvalidArgumentError, match=r"hints\['low_precision'\]='x'"):
        _hints.call_options("all_reduce", {"low_precision": "x"})


def _quick_start_rank(ctx):
    """docs/torchcomms.rst's quick start, as written (torchcomms' own, backend "rcclx")."""
    comm = torchcomms.new_comm("rcclx", torch.device("cpu"), name="my_comm")
    rank = comm.get_rank()
    world_size = comm.get_size()

    t = torch.full((1024,), float(rank + 1), device=comm.get_device())
    comm.all_reduce(t, torchcomms.ReduceOp.SUM, async_op=False)
    after_sum = t[0].item()
    work = comm.all_reduce(t, torchcomms.ReduceOp.PREMUL_SUM(0.5), async_op=True)
    work.wait()

    out = torch.empty(world_size * 1024, device=comm.get_device())
    comm.all_gather_single(out, t, async_op=False)
    comm.finalize()
    return rank, world_size, after_sum, out.unique().tolist(), H_REAL


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_quick_start_runs_as_written(nranks):
    """On whichever torchcomms is installed: the real one in nox -s tests' second pass."""
    port = checks.free_port()
    env = {"WORLD_SIZE": str(nranks), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    results = launch(_quick_start_rank, nranks, rank_env=lambda r: {**env, "RANK": str(r)})
    total = nranks * (nranks + 1) / 2
    assert [r.value for r in results] == [
        (r, nranks, total, [total * nranks * 0.5], H_REAL) for r in range(nranks)
    ]
