"""The benchmark's tensor-parallel transformer block (rcclx_benchmarks.e2e.transformer_block) on
2 CPU processes over "rcclx": its decode and prefill outputs equal, within float32 rounding, an
unsharded float64 reference written here from the ranks' weight shards (rank r's heads and FFN
block, in rank order), and the no-communication variant differs from it (so the all_reduces do
the work the block claims)."""

import importlib.util

import checks
import pytest

from launcher import launch, values

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)


def _block_rank(ctx, port):
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"
    from rcclx_benchmarks.e2e.transformer_block import BlockShape, TransformerBlock

    dist.init_process_group(
        "rcclx", init_method=f"tcp://127.0.0.1:{port}", rank=ctx.rank, world_size=ctx.nranks
    )
    torch.set_grad_enabled(False)
    shape = BlockShape(hidden=32, heads=4, kv_heads=2, ffn=48)
    block = TransformerBlock(shape, dist.group.WORLD, seed=3)
    block.allocate_cache(batch=2, length=5)
    gen = torch.Generator().manual_seed(1)  # the same input on every rank
    x_decode = torch.randn(2, 1, 32, generator=gen)
    x_prefill = torch.randn(2, 6, 32, generator=gen)
    result = {
        "weights": {n: p.clone() for n, p in block.named_parameters()},
        "decode": block.decode(x_decode),
        "cache": tuple(c.clone() for c in block.kv_cache),  # with the new token's slot
        "decode_no_comm": block.decode(x_decode, None),
        "prefill": block.prefill(x_prefill),
        "x_decode": x_decode,
        "x_prefill": x_prefill,
    }
    dist.destroy_process_group()
    # As numpy arrays: a torch tensor would cross to the test process as shared memory that
    # this rank's exit removes.
    return {
        k: {n: t.numpy() for n, t in v.items()}
        if isinstance(v, dict)
        else tuple(t.numpy() for t in v)
        if isinstance(v, tuple)
        else v.numpy()
        for k, v in result.items()
    }


def _rms(x):
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt()


def _reference(x, w, heads, kv_heads, cache=None):
    """The unsharded block in float64; `w` holds the full matrices, `cache` the full (k, v)."""
    import torch

    b, t, hidden = x.shape
    d = hidden // heads
    h = _rms(x)
    q = (h @ w["q"].T).view(b, t, heads, d).transpose(1, 2)
    if cache is None:
        k = (h @ w["k"].T).view(b, t, kv_heads, d).transpose(1, 2)
        v = (h @ w["v"].T).view(b, t, kv_heads, d).transpose(1, 2)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
    else:
        k, v = cache  # the new token's key and value are its last slot
        mask = torch.ones(t, k.shape[2], dtype=torch.bool)
    rep = heads // kv_heads
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    scores = (q @ k.transpose(-1, -2)) / d**0.5
    attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
    h1 = x + attn.transpose(1, 2).reshape(b, t, hidden) @ w["out"].T
    g = _rms(h1)
    return h1 + (torch.nn.functional.silu(g @ w["gate"].T) * (g @ w["up"].T)) @ w["down"].T


def test_sharded_block_matches_unsharded_reference():
    import torch

    ranks = values(launch(_block_rank, 2, checks.free_port(), timeout=120))
    heads, kv_heads, d = 4, 2, 8
    hl, kvl = heads // 2, kv_heads // 2
    parts = {n: [] for n in ("q", "k", "v", "out", "gate", "up", "down")}
    for r in ranks:  # rank r's shards, in rank order, make the full matrices
        w = {n: torch.from_numpy(p).double() for n, p in r["weights"].items()}
        qkv = w["qkv.weight"]
        parts["q"].append(qkv[: hl * d])
        parts["k"].append(qkv[hl * d : (hl + kvl) * d])
        parts["v"].append(qkv[(hl + kvl) * d :])
        gate, up = w["gate_up.weight"].chunk(2, 0)
        parts["gate"].append(gate)
        parts["up"].append(up)
        parts["out"].append(w["out.weight"])
        parts["down"].append(w["down.weight"])
    full = {n: torch.cat(p, 1 if n in ("out", "down") else 0) for n, p in parts.items()}

    def t(a):
        return torch.from_numpy(a).double()

    cache = tuple(torch.cat([t(r["cache"][i]) for r in ranks], 1) for i in range(2))
    ref_decode = _reference(t(ranks[0]["x_decode"]), full, heads, kv_heads, cache)
    ref_prefill = _reference(t(ranks[0]["x_prefill"]), full, heads, kv_heads)
    for r in ranks:
        torch.testing.assert_close(t(r["decode"]), ref_decode, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(t(r["prefill"]), ref_prefill, atol=1e-5, rtol=1e-5)
        gap = (t(r["decode_no_comm"]) - ref_decode).abs().max().item()
        assert gap > 1e-2, f"the block without its all_reduces matches the reference ({gap})"
