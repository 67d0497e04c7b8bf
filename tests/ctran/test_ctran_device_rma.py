"""DeviceRma (one-sided puts and stream-ordered signals over mapped device memory): a build
without GPU code refuses it with CudaError; with a GPU, a ring of puts and signals between
processes (ranks may share one GPU) lands exactly what was put."""

import pytest

import ctran
from launcher import gpu_count, launch, values


@pytest.mark.skipif(ctran.built_with_cuda(), reason="this build has GPU code")
def test_without_gpu_code_it_is_a_cuda_error():
    group = ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1, "device_rma")
    with pytest.raises(ctran.CudaError, match="no GPU code"):
        ctran.DeviceRma(group, 0, 0, 16)
    group.destroy()


def _ring_rank(ctx):
    import torch

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    torch.cuda.set_device(ctx.device)
    n, me = ctx.nranks, ctx.rank
    nxt, prv = (me + 1) % n, (me - 1) % n
    mine = torch.full((64,), -1, dtype=torch.int32, device="cuda")
    rma = ctran.DeviceRma(group, ctx.device, mine.data_ptr(), mine.numel() * 4)
    stream = torch.cuda.current_stream().cuda_stream
    problems = []
    for k in range(3):  # three puts and signals before the first wait: signals count
        src = torch.full((8,), me * 10 + k, dtype=torch.int32, device="cuda")
        rma.put(nxt, k * 32, src.data_ptr(), 32, stream)
        rma.signal(nxt, stream)
    for _ in range(3):
        rma.wait_signal(prv, stream, 20000)
    torch.cuda.synchronize()
    want = torch.full((64,), -1, dtype=torch.int32)
    for k in range(3):
        want[k * 8 : k * 8 + 8] = prv * 10 + k
    if not torch.equal(mine.cpu(), want):
        problems.append(f"got {mine.cpu().tolist()}")
    try:
        rma.put(nxt, 60 * 4, src.data_ptr(), 32, stream)
        problems.append("out-of-bounds put accepted")
    except ctran.InvalidArgumentError as e:
        if "exceeds the window size 256" not in str(e):
            problems.append(str(e))
    rma.destroy()
    group.destroy()
    return problems


@pytest.mark.gpu
@pytest.mark.parametrize("nranks", [2, 3])
def test_ring_of_puts_and_signals(nranks):
    if gpu_count() == 0:
        pytest.skip("needs a GPU")
    pytest.importorskip("torch")
    for rank, problems in enumerate(values(launch(_ring_rank, nranks))):
        assert problems == [], f"rank {rank}: {problems}"
