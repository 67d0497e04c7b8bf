"""The character-level LM of rcclx_benchmarks.e2e.char_lm: the corpus and the batches are
deterministic functions of their arguments, shapes that do not split are refused naming the
value, and the tensor-parallel copy gives the unsharded model's logits and, in each shard, the
unsharded model's gradient slice, on 3 CPU processes over the "rcclx" backend."""

import importlib.util

import checks
import pytest

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)


def test_corpus_and_batches_are_deterministic():
    import torch

    from rcclx_benchmarks.e2e.char_lm import eval_batch, stdlib_corpus, train_batch

    corpus = stdlib_corpus(1 << 16)
    assert corpus.shape == (1 << 16,) and corpus.dtype == torch.int64
    assert torch.equal(corpus, stdlib_corpus(1 << 16))
    assert 0 <= corpus.min() and corpus.max() < 256
    x, y = train_batch(corpus, 4, 16, seed=1, step=2, rank=0)
    assert x.shape == y.shape == (4, 16) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x, train_batch(corpus, 4, 16, seed=1, step=2, rank=0)[0])
    assert not torch.equal(x, train_batch(corpus, 4, 16, seed=1, step=2, rank=1)[0])
    ex, ey = eval_batch(corpus, 4, 16)
    assert torch.equal(ex, eval_batch(corpus, 4, 16)[0]) and torch.equal(ex[:, 1:], ey[:, :-1])
    with pytest.raises(ValueError, match="batch 1000 x seq_len 16"):
        eval_batch(corpus, 1000, 16)


def test_heads_must_divide_width():
    from rcclx_benchmarks.e2e.char_lm import CharLM, LmConfig

    with pytest.raises(ValueError, match="d_model 30 is not a multiple of n_heads 4"):
        CharLM(LmConfig(d_model=30))


def _tp_lm_rank(ctx, port):
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"
    from rcclx_benchmarks.e2e.char_lm import CharLM, LmConfig

    torch.set_num_threads(1)
    dist.init_process_group(
        "rcclx", init_method=f"tcp://127.0.0.1:{port}", rank=ctx.rank, world_size=ctx.nranks
    )
    out = {}
    torch.manual_seed(0)
    model = CharLM(LmConfig(d_model=24, n_heads=3, n_layers=2, seq_len=16))
    tokens = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    sharded = model.tensor_parallel(dist.group.WORLD)
    ref, got = model(tokens), sharded(tokens)
    err = (got - ref).abs().max().item()
    out["logits"] = ("", None if err <= 1e-4 else f"max abs difference {err:.3g}")
    # Every rank computes the same loss from the same logits: a shard's gradient is the slice
    # of the unsharded model's (the all_reduce's backward passes the gradient through).
    ref.square().sum().backward()
    got.square().sum().backward()
    for name in ("q", "out"):
        full = getattr(model.blocks[0].attn, name).weight.grad
        part = getattr(sharded.blocks[0].attn, name).weight.grad
        lo = 8 * ctx.rank
        want = full[lo : lo + 8] if name == "q" else full[:, lo : lo + 8]
        ok = part is not None and torch.allclose(part, want, rtol=1e-4, atol=1e-4)
        out[f"gradient of {name}"] = ("", None if ok else "differs from the unsharded slice")
    try:
        CharLM(LmConfig(d_model=32, n_heads=4)).tensor_parallel(dist.group.WORLD)
        out["refuses heads"] = ("", "no error")
    except ValueError as e:
        out["refuses heads"] = ("", None if "n_heads 4" in str(e) else f"message {e}")
    dist.destroy_process_group()
    return out


def test_tensor_parallel_lm_matches_unsharded():
    checks.assert_cases(launch(_tp_lm_rank, 3, checks.free_port(), timeout=120))
