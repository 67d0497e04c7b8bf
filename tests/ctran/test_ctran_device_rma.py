"""DeviceRma (one-sided puts and stream-ordered signals over mapped device memory): a build
without GPU code refuses it with CudaError; with a GPU, a ring of puts and signals between
processes (ranks may share one GPU) lands exactly what was put, and a wait for a signal that
never comes ends at its timeout without a trap and fails the window, not the GPU."""

import time

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


SILENT_TIMEOUT_MS = 300  # rank 0's first wait for a signal rank 1 never sends


def _silent_peer_rank(ctx):
    import torch

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    torch.cuda.set_device(ctx.device)
    mine = torch.zeros(16, dtype=torch.int32, device="cuda")
    rma = ctran.DeviceRma(group, ctx.device, mine.data_ptr(), mine.numel() * 4)
    stream = torch.cuda.current_stream().cuda_stream
    problems = []
    if ctx.rank == 0:
        rma.check_failed()  # nothing timed out yet
        start = time.monotonic()
        rma.wait_signal(1, stream, SILENT_TIMEOUT_MS)
        # Enqueued before the first one ran out: the abort word ends it at once, not in 60 s.
        rma.wait_signal(1, stream, 60000)
        torch.cuda.synchronize()  # returns: the kernels ended, no trap
        drained = time.monotonic() - start
        if not SILENT_TIMEOUT_MS / 1000 * 0.8 < drained < SILENT_TIMEOUT_MS / 1000 + 5:
            problems.append(f"the stream drained after {drained:.2f} s")
        words = ("rank 0's wait_signal timed out after 300 ms", "from rank 1")
        words += ("expected signal 1, saw 0", "RCCLX_TIMEOUT_MS")
        for name, call in (
            ("check_failed", rma.check_failed),
            ("put", lambda: rma.put(1, 0, mine.data_ptr(), 4, stream)),
            ("signal", lambda: rma.signal(1, stream)),
            ("wait_signal", lambda: rma.wait_signal(1, stream, 1000)),
            ("peerData", lambda: rma.peer_ptr(1)),
            ("check_failed", rma.check_failed),  # sticky
        ):
            try:
                call()
                problems.append(f"{name}: no error")
            except ctran.TimeoutError as e:
                missing = [w for w in (f"window {name}: ", *words) if w not in str(e)]
                if missing:
                    problems.append(f"{name}: {e} (missing {missing})")
        total = float(torch.ones(1000, device="cuda").sum().item())  # the GPU computes
        if total != 1000.0:
            problems.append(f"a sum on the GPU gave {total}")
    ctx.barrier("rank 0 done")
    rma.destroy()  # collective, failed window or not
    if not rma.destroyed:
        problems.append("not destroyed")
    group.destroy()
    return problems


@pytest.mark.gpu
def test_a_wait_past_its_timeout_fails_the_window_not_the_gpu():
    if gpu_count() == 0:
        pytest.skip("needs a GPU")
    pytest.importorskip("torch")
    for rank, problems in enumerate(values(launch(_silent_peer_rank, 2, timeout=90))):
        assert problems == [], f"rank {rank}: {problems}"
