"""The torchcomms surface on GPU tensors, 2 ranks (sharing a GPU where the machine has one):
``cuda`` and ``hip`` without an index become ``cuda:rank % count``; collectives on the current
stream (the Work's wait() has nothing to do) and with async_op=True on the internal stream (the
current stream waits for it, the host does not); the list forms; batched P2P; split;
tensor_register; a host tensor on a GPU communicator is refused naming it; the same with the
ranks on two pretend hosts."""

from __future__ import annotations

import checks
import pytest
import tc_helpers as H

from launcher import launch, pretend_hosts

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def _gpu_rank(ctx):
    import rcclx_core

    torch.cuda.set_device(ctx.device)
    comm = H.comm_of(ctx, "gpu", device=torch.device("hip" if ctx.rank % 2 else "cuda"))
    n, me = comm.get_size(), comm.get_rank()
    dev = comm.get_device()
    out = {"device": ("", None if dev == torch.device("cuda", me % torch.cuda.device_count())
                      else f"got {dev}")}  # fmt: skip
    for dtype in H.DTYPES:
        for op in H.OPS:
            if not H.reducible(dtype, op):
                continue
            for count in H.COUNTS:
                inputs = [H.make(p, count, dtype, device=dev) for p in range(n)]
                want = H.reference(inputs, op)
                for a in (False, True):
                    t = inputs[me].clone()
                    w = comm.all_reduce(t, H.op_of(op, a, device=dev), a)
                    w.wait()
                    out[f"all_reduce {H.name_of(dtype)} {op} {count} async={a}"] = (
                        checks.digest(t),
                        H.compare(t, want, op),
                    )
        count = 1024
        ins = [H.make(p, count, dtype, device=dev) for p in range(n)]
        for a in (False, True):
            lst = [torch.empty(count, dtype=dtype, device=dev) for _ in range(n)]
            comm.all_gather(lst, ins[me], a).wait()
            out[f"all_gather {H.name_of(dtype)} async={a}"] = (
                "",
                H.compare(torch.cat(lst), torch.cat(ins)),
            )
            o = torch.empty(count, dtype=dtype, device=dev)
            big = [H.make(p, n * count, dtype, salt=1, device=dev) for p in range(n)]
            comm.reduce_scatter_single(o, big[me], H.op_of("SUM"), a).wait()
            want = H.reference(big, "SUM")[me * count : (me + 1) * count]
            out[f"reduce_scatter_single {H.name_of(dtype)} async={a}"] = ("", H.compare(o, want))
            fwd = torch.empty(count, dtype=dtype, device=dev)
            batch = comm.batch_op_create()
            batch.send(ins[me], (me + 1) % n)
            batch.recv(fwd, (me - 1) % n)
            batch.issue(a).wait()
            out[f"batch {H.name_of(dtype)} async={a}"] = ("", H.compare(fwd, ins[(me - 1) % n]))
    buf = torch.ones(1 << 16, device=dev)
    comm.tensor_register(buf)
    comm.all_reduce(buf, H.op_of("SUM"), False)
    comm.tensor_deregister(buf)
    out["registered"] = ("", H.compare(buf, torch.full_like(buf, float(n))))
    child = comm.split(list(range(n)), "child")
    t = torch.ones(8, device=dev)
    child.all_reduce(t, H.op_of("SUM"), False).wait()
    out["split"] = ("", H.compare(t, torch.full_like(t, float(n))))
    host = torch.ones(4)  # a GPU communicator runs host tensors on the host
    comm.all_reduce(host, H.op_of("SUM"), False)
    out["host tensor"] = ("", H.compare(host, torch.full_like(host, float(n))))
    try:
        comm.all_reduce(torch.ones(4, device=dev)[::2], H.op_of("SUM"), False)
        out["strided GPU tensor"] = ("", "did not raise")
    except rcclx_core.InvalidArgumentError as e:
        out["strided GPU tensor"] = ("", None if "tensor must be contiguous" in str(e) else str(e))
    torch.cuda.synchronize()
    child.finalize()
    comm.finalize()
    return out


@pytest.mark.parametrize("hosts", ["one host", "pretend hosts"])
def test_gpu_collectives(hosts):
    """On pretend hosts (RCCLX_HOST_ID per rank) every call is staged through host memory and
    tensor_register is a check alone."""
    own_host = pretend_hosts() if hosts != "one host" else None
    checks.assert_cases(launch(_gpu_rank, 2, timeout=180, rank_env=own_host))


def _graph_rank(ctx):
    torch.cuda.set_device(ctx.device)
    comm = H.comm_of(ctx, "graph", device=torch.device("cuda"))
    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    out = {}
    for count in (1024, 1 << 20):
        t = torch.zeros(count, device=dev)
        o = torch.empty(n * count, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up outside the capture
            comm.all_reduce(t, H.op_of("SUM"), False)
            comm.all_gather_single(o, t, False)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            comm.all_reduce(t, H.op_of("SUM"), False)
            comm.all_gather_single(o, t, False)
        for step in range(3):
            ins = [H.make(p, count, torch.float32, salt=step, device=dev) for p in range(n)]
            t.copy_(ins[me])
            graph.replay()
            want = H.reference(ins, "SUM")
            out[f"all_reduce replay {step} of {count}"] = ("", H.compare(t, want))
            out[f"all_gather replay {step} of {count}"] = ("", H.compare(o, want.repeat(n)))
    torch.cuda.synchronize()
    comm.finalize()
    return out


def test_graph_capture_and_replay():
    """all_reduce and all_gather_single captured into one CUDA graph, replayed with new inputs."""
    checks.assert_cases(launch(_graph_rank, 2, timeout=180))


def _two_streams_rank(ctx):
    torch.cuda.set_device(ctx.device)
    comm = H.comm_of(ctx, "streams", device=torch.device("cuda"))
    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    count = 1 << 18
    ins = [[H.make(p, count, torch.float32, salt=k, device=dev) for p in range(n)]
           for k in range(8)]  # fmt: skip
    outs = [torch.empty(count, device=dev) for _ in range(8)]
    for k in range(8):  # fill each input on the stream its call will use
        with torch.cuda.stream(streams[k % 2]):
            outs[k].copy_(ins[k][me])
    torch.cuda.synchronize()
    for k in range(8):  # alternate streams; nothing orders them but the communicator
        with torch.cuda.stream(streams[k % 2]):
            comm.all_reduce(outs[k], H.op_of("SUM"), False)
    torch.cuda.synchronize()
    out = {}
    for k in range(8):
        out[f"call {k} on stream {k % 2}"] = ("", H.compare(outs[k], H.reference(ins[k], "SUM")))
    comm.finalize()
    return out


def test_calls_on_alternating_streams():
    """all_reduce calls of one communicator issued on two streams with nothing ordering them
    run in issue order (each result exact)."""
    checks.assert_cases(launch(_two_streams_rank, 2, timeout=180))


def _work_of_a_dead_peer_rank(ctx):
    import os
    import signal
    import time

    import rcclx_core

    torch.cuda.set_device(ctx.device)
    store = ctx.store()
    comm = H.comm_of(ctx, "dead_peer", device=torch.device("cuda"))
    dev = comm.get_device()
    x = torch.ones(1 << 16, device=dev)
    comm.all_reduce(x, H.op_of("SUM"), False)
    torch.cuda.synchronize()
    if ctx.rank == 1:
        store.get("dead_peer/issued")
        os.kill(os.getpid(), signal.SIGKILL)
    # Both calls' kernels wait for rank 1, which never joins them: they end when the
    # communicator's watch sees it die, and their streams complete with undefined outputs.
    in_flight = comm.all_reduce(x.clone(), H.op_of("SUM"), True)  # internal stream: an event
    on_stream = comm.all_reduce(x.clone(), H.op_of("SUM"), False)  # the current stream
    store.set("dead_peer/issued", b"1")
    raised = {}
    start = time.monotonic()
    for name, work in (("async", in_flight), ("sync", on_stream)):
        try:
            work.wait_blocking()
            raised[name] = None
        except rcclx_core.RemoteError as e:
            raised[name] = str(e)
    try:
        on_stream.wait()
        raised["wait"] = None
    except rcclx_core.RemoteError as e:
        raised["wait"] = str(e)
    raised["after_s"] = time.monotonic() - start
    raised["usable"] = float(torch.ones(10, device=dev).sum().item())
    return raised


def test_gpu_work_raises_the_failure_that_ended_its_kernels():
    """A peer killed while this rank's GPU calls wait on it: their kernels end early and their
    streams complete, but the Works' wait_blocking() and wait() raise a RemoteError naming the
    dead rank instead of returning undefined outputs as results; the GPU stays usable."""
    results = launch(_work_of_a_dead_peer_rank, 2, expect_errors=True, timeout=120)
    assert results[1].error_type == "Died", results[1]
    assert results[0].ok, f"{results[0].error_type}: {results[0].error}\n{results[0].traceback}"
    v = results[0].value
    for name in ("async", "sync", "wait"):
        assert v[name] is not None and "rank 1" in v[name], v
    assert v["after_s"] < 5.0 and v["usable"] == 10.0, v
