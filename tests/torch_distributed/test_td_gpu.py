"""The "rcclx" backend on CUDA tensors (ranks share the GPUs when there are more ranks than
GPUs): the collectives DDP, FSDP2 and tensor parallelism use, against references, futures, a
batched ring of sends and receives, and DDP on the GPU against the same run on Gloo. Run by
``nox -s gpu``; skipped without a GPU."""

import importlib.util

import checks
import pytest
import td_helpers as H

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)
pytest.importorskip("torchcomms_rcclx", reason="torchcomms_rcclx is not installed")

pytestmark = pytest.mark.gpu


def _gpu_rank(ctx, port):
    import torch

    torch.cuda.set_device(ctx.device)
    dist = H.init(ctx, port, backend="cpu:rcclx,cuda:rcclx")
    n, me, dev = dist.get_world_size(), dist.get_rank(), torch.device("cuda", ctx.device)
    out = {}
    for name in ("float32", "bfloat16", "int32"):
        dtype = getattr(torch, name)
        for count in (0, 1, 4097, 1 << 20):
            xs = [H.rank_input(r, count, dtype, tag=count % 7, device=dev) for r in range(n)]
            key = f"{name} {count}"
            for op in ("SUM", "MAX"):
                t = xs[me].clone()
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                H.collect(out, f"all_reduce {op} {key}", t, H.reduce_ref(xs, op))
            t = xs[me].clone()
            fut = dist.all_reduce(t, async_op=True).get_future()
            H.collect(out, f"all_reduce future {key}", fut.wait()[0], H.reduce_ref(xs, "SUM"))
            flat = torch.empty(n * count, dtype=dtype, device=dev)
            H.all_gather_tensor(dist)(flat, xs[me])
            H.collect(out, f"all_gather_into_tensor {key}", flat, torch.cat(xs))
            o = torch.empty(count // n, dtype=dtype, device=dev)
            ins = [x[: n * (count // n)] for x in xs]
            H.reduce_scatter_tensor(dist)(o, ins[me].clone())
            block = H.reduce_ref(ins, "SUM")[me * (count // n) : (me + 1) * (count // n)]
            H.collect(out, f"reduce_scatter_tensor {key}", o, block)
            t = xs[me].clone()
            dist.broadcast(t, src=n - 1)
            H.collect(out, f"broadcast {key}", t, xs[n - 1])
            o = torch.empty(n * (count // n), dtype=dtype, device=dev)
            dist.all_to_all_single(o, ins[me].clone())
            want = torch.cat([x.view(n, -1)[me] for x in ins]) if count >= n else o
            H.collect(out, f"all_to_all_single {key}", o, want)
    send = H.rank_input(me, 1 << 22, torch.float32, device=dev)
    recv = torch.empty_like(send)
    ops = [
        dist.P2POp(dist.isend, send, (me + 1) % n),
        dist.P2POp(dist.irecv, recv, (me - 1) % n),
    ]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    H.collect(out, "ring", recv, H.rank_input((me - 1) % n, 1 << 22, torch.float32, device=dev))
    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_gpu_collectives(nranks):
    results = launch(_gpu_rank, nranks, checks.free_port(), timeout=240)
    checks.assert_cases(results)


def _gpu_ddp_rank(ctx, port):
    import torch
    from test_td_ddp import _train

    torch.cuda.set_device(ctx.device)
    dist = H.init(ctx, port, backend="cpu:gloo,cuda:gloo")
    out = {}
    got_l, got_p = _train(dist, torch, "rcclx", ctx.rank, False, device=f"cuda:{ctx.device}")
    ref_l, ref_p = _train(dist, torch, "gloo", ctx.rank, False, device=f"cuda:{ctx.device}")
    rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got_l, ref_l))
    out["losses"] = ("", None if rel <= 1e-6 else f"relative difference {rel:.3g}")
    H.collect(out, "params", got_p, ref_p)
    dist.destroy_process_group()
    return out


def test_gpu_ddp_matches_gloo():
    results = launch(_gpu_ddp_rank, 2, checks.free_port(), timeout=240)
    checks.assert_cases(results)


def _gpu_fsdp_rank(ctx, port):
    import torch
    from test_td_fsdp import LR, STEPS, _train_fsdp

    torch.cuda.set_device(ctx.device)
    dist = H.init(ctx, port, backend="cpu:rcclx,cuda:rcclx")
    device = f"cuda:{ctx.device}"
    got, _ = _train_fsdp(dist, torch, dist.group.WORLD, ctx.rank, device)
    one = H.one_process_losses(torch, ctx.nranks, STEPS, LR, device)[ctx.rank]
    rel = H.max_relative_difference(got, one)
    out = {"losses": ("", None if rel <= 1e-6 else f"relative difference {rel:.3g}")}
    out["learned"] = ("", None if got[-1] < got[0] else "loss did not fall")
    dist.destroy_process_group()
    return out


def test_gpu_fsdp2_matches_one_process_reference():
    """FSDP2 (fully_shard) on CUDA tensors against the same training computed in one process
    (each rank's batch, gradients averaged): the losses agree within 1e-6 relative."""
    checks.assert_cases(launch(_gpu_fsdp_rank, 2, checks.free_port(), timeout=240))


def _gpu_graph_rank(ctx, port):
    import torch

    torch.cuda.set_device(ctx.device)
    dist = H.init(ctx, port, backend="cpu:rcclx,cuda:rcclx")
    n, me, dev = ctx.nranks, ctx.rank, torch.device("cuda", ctx.device)
    out = {}
    for count in (1024, 1 << 20):
        t = torch.zeros(count, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dist.all_reduce(t)  # warm up outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            dist.all_reduce(t)
            t.mul_(2)
        for step in range(3):
            xs = [H.rank_input(r, count, torch.float32, tag=step, device=dev) for r in range(n)]
            t.copy_(xs[me])
            graph.replay()
            H.collect(out, f"replay {step} of {count}", t, H.reduce_ref(xs, "SUM") * 2)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return out


def test_gpu_graph_capture_of_dist_all_reduce():
    """dist.all_reduce captured into a CUDA graph and replayed with new inputs."""
    checks.assert_cases(launch(_gpu_graph_rank, 2, checks.free_port(), timeout=240))
