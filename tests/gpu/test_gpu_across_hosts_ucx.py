"""GPU buffers across hosts handed to UCX as GPU memory (staged_backend.hpp, ucx_messages.hpp):
with the ucx transport between pretend hosts (RCCLX_NET_TRANSPORT=ucx) and a UCX that drives
CUDA memory on every rank, send/recv, all_to_all(_v), gather and scatter move between the ranks'
GPU memory through UCX's messages (cuda_ipc between pretend hosts of one machine; GPUDirect RDMA
or UCX's own pipelined staging between real hosts) instead of through pinned host copies.

The collective families of test_gpu_collectives run unchanged (bitwise against the same
references as on one host) on 1+1, 2+1 and 2x2 pretend hosts, where the communicator says it
hands GPU memory to UCX; RCCLX_UCX_GPU_MEMORY=0 on one rank makes every rank stage; the graph of
every collective replays on new inputs; a peer that dies while the stream waits on a send/recv
ends the wait with an error naming it.

Skips, saying why, where UCX cannot drive CUDA memory here (no libucx with CUDA support).
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
import test_gpu_across_hosts as across  # noqa: E402
import test_gpu_collectives as collectives  # noqa: E402
from gpu_cases import current_stream, rank_device  # noqa: E402

from launcher import launch, pretend_hosts, values  # noqa: E402

pytestmark = pytest.mark.gpu

UCX = {"RCCLX_NET_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": "20000"}
IN_PLACE = "GPU memory to UCX in place"


def _sharing_rank(ctx):
    from rcclx_core import _testing

    comm = ctx.communicator()
    said = _testing.gpu_sharing(comm)
    comm.destroy()
    return said


@functools.cache
def _route_here() -> str:
    """What two ranks on pretend hosts over ucx say of GPU memory ("" when it goes in place)."""
    try:
        said = values(launch(_sharing_rank, 2, env=UCX, timeout=120, rank_env=pretend_hosts()))
    except AssertionError as e:  # e.g. no UCX loads here
        return f"no communicator over ucx: {e}"
    return "" if all(IN_PLACE in s for s in said) else f"the communicator says: {said[0]}"


@pytest.fixture(autouse=True)
def _needs_ucx_with_cuda():
    why = _route_here()
    if why:
        pytest.skip(f"UCX does not take GPU memory here ({why})")


def _family_rank(ctx, family, hosts):
    from rcclx_core import _testing

    dev = rank_device(ctx)
    comm = across._spans_hosts(ctx, hosts)
    assert IN_PLACE in _testing.gpu_sharing(comm), _testing.gpu_sharing(comm)
    c = collectives.CollectiveCases(ctx, comm, dev)
    collectives.FAMILIES[family][0](c)
    comm.destroy()
    return c.results


@pytest.mark.parametrize(
    "family, layout",
    [(f, "1+1") for f in ("data_movement", "v_variants", "point_to_point", "multi_round")]
    + [(f, layout) for f in ("data_movement", "point_to_point") for layout in ("2+1", "2x2")],
)
def test_collective_family_with_gpu_memory_on_ucx(family, layout):
    """Over more than two ranks only the families without reductions (the host folds each
    host's ranks first, so reductions' float bits differ from the one-host reference)."""
    hosts = across.LAYOUTS[layout]
    results = launch(
        _family_rank, len(hosts), family, max(hosts) + 1, env=UCX, timeout=240,
        rank_env=pretend_hosts(hosts),
    )  # fmt: skip
    expect = collectives.FAMILIES[family][1]
    if family == "data_movement" and len(hosts) > 2:  # a broadcast from every root
        expect = len(collectives.COPY_TYPES) * len(collectives.COUNTS) * (4 + len(hosts))
    checks.assert_cases(results, expect_cases=expect, same_on_all_ranks=True)


def test_in_place_all_to_all_with_gpu_memory_on_ucx():
    results = launch(
        _family_rank, 2, "in_place_and_misaligned", 2, env=UCX, timeout=240,
        rank_env=pretend_hosts(),
    )  # fmt: skip
    checks.assert_cases(
        results, expect_cases=collectives.FAMILIES["in_place_and_misaligned"][1],
        same_on_all_ranks=True,
    )  # fmt: skip


def test_one_rank_without_gpu_memory_makes_every_rank_stage():
    def rank_env(r):
        return {**pretend_hosts()(r), **({"RCCLX_UCX_GPU_MEMORY": "0"} if r == 1 else {})}

    said = values(launch(_sharing_rank, 2, env=UCX, timeout=120, rank_env=rank_env))
    assert all(IN_PLACE not in s and "staged through the host" in s for s in said), said


@pytest.mark.parametrize("layout", list(across.LAYOUTS))
def test_graph_of_every_collective_with_gpu_memory_on_ucx(layout):
    replays = 3
    hosts = across.LAYOUTS[layout]
    results = launch(
        collectives._graph_rank, len(hosts), replays, len(hosts) > 2, env=UCX, timeout=240,
        rank_env=pretend_hosts(hosts),
    )  # fmt: skip
    checks.assert_cases(results, expect_cases=replays * len(collectives.GRAPH_CALLS))


def _dies_during_send_recv_rank(ctx):
    """A send/recv pair on 16 MiB whose peer dies before sending."""
    dev = rank_device(ctx)
    comm = across._spans_hosts(ctx)
    x = torch.ones(1 << 22, device=dev)
    y = torch.empty_like(x)

    def exchange():
        comm.group_start()
        comm.send(x, 1 - ctx.rank, stream=current_stream())
        comm.recv(y, 1 - ctx.rank, stream=current_stream())
        comm.group_end()

    exchange()
    torch.cuda.synchronize()
    return across._rank_1_dies_while(ctx, comm, x, exchange)


def test_a_peer_that_dies_during_a_send_recv_on_ucx_is_an_error_not_a_hang():
    results = launch(
        _dies_during_send_recv_rank, 2, env={**UCX, "RCCLX_TIMEOUT_MS": "5000"}, timeout=90,
        expect_errors=True, rank_env=pretend_hosts(),
    )  # fmt: skip
    survivor = results[0]
    assert survivor.error is None, survivor.error
    assert survivor.value["raised"] is None, survivor.value
    assert survivor.value["drained_s"] < 30, survivor.value
