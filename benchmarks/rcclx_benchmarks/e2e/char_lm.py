"""A small character-level decoder-only transformer language model, its tensor-parallel form,
and a corpus that every machine has: the Python standard library's own source.

Bytes are the vocabulary (256 symbols), so nothing is downloaded or tokenised. The attention's
q, k and v projections are separate layers so that cutting each one column-wise gives every rank
whole heads; ``CharLM.tensor_parallel(group)`` returns a copy whose q/k/v and MLP-up layers are
column-parallel and whose attention-output and MLP-down layers are row-parallel (two all_reduces
per block), everything else replicated.
"""

from __future__ import annotations

import copy
import dataclasses
import pathlib
import sysconfig

import torch
import torch.nn.functional as F

from rcclx_benchmarks.e2e.tensor_parallel import shard_linear

__all__ = ["CharLM", "LmConfig", "stdlib_corpus", "train_batch", "eval_batch"]

VOCAB = 256


@dataclasses.dataclass(frozen=True)
class LmConfig:
    """The model's shape: width, heads, blocks, context length, MLP expansion."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    seq_len: int = 64
    mlp_ratio: int = 4


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, cfg: LmConfig):
        super().__init__()
        self.head_dim = cfg.d_model // cfg.n_heads
        self.q = torch.nn.Linear(cfg.d_model, cfg.d_model)
        self.k = torch.nn.Linear(cfg.d_model, cfg.d_model)
        self.v = torch.nn.Linear(cfg.d_model, cfg.d_model)
        self.out = torch.nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape

        # The number of heads comes from the projection's width: all heads unsharded, this
        # rank's heads when q/k/v are column-parallel.
        def heads(y):
            return y.view(b, t, -1, self.head_dim).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            heads(self.q(x)), heads(self.k(x)), heads(self.v(x)), is_causal=True
        )
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class Block(torch.nn.Module):
    def __init__(self, cfg: LmConfig):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = torch.nn.LayerNorm(cfg.d_model)
        self.up = torch.nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.down = torch.nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class CharLM(torch.nn.Module):
    """Byte embedding plus learned positions, ``n_layers`` pre-norm blocks, a final layer norm
    and an untied head; ``forward(tokens [B, T]) -> logits [B, T, 256]``."""

    def __init__(self, cfg: LmConfig = LmConfig()):
        super().__init__()
        if cfg.d_model % cfg.n_heads != 0:
            raise ValueError(
                f"CharLM: d_model {cfg.d_model} is not a multiple of n_heads {cfg.n_heads}"
            )
        self.cfg = cfg
        self.embed = torch.nn.Embedding(VOCAB, cfg.d_model)
        self.pos = torch.nn.Parameter(torch.zeros(cfg.seq_len, cfg.d_model))
        self.blocks = torch.nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = torch.nn.LayerNorm(cfg.d_model)
        self.head = torch.nn.Linear(cfg.d_model, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def loss(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self(tokens)
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))

    def tensor_parallel(self, group) -> CharLM:
        """A copy of this model with each block's heads and MLP split over ``group``'s ranks
        (this rank's slices of the current weights): its logits equal this model's up to float
        rounding of the partial sums. n_heads and the MLP width must divide by the group size."""
        import torch.distributed as dist

        tp = dist.get_world_size(group)
        if self.cfg.n_heads % tp != 0:
            raise ValueError(
                f"tensor_parallel: n_heads {self.cfg.n_heads} is not a multiple of {tp} ranks"
            )
        sharded = copy.deepcopy(self)
        for block in sharded.blocks:
            attn = block.attn
            attn.q = shard_linear(attn.q, "column", group)
            attn.k = shard_linear(attn.k, "column", group)
            attn.v = shard_linear(attn.v, "column", group)
            attn.out = shard_linear(attn.out, "row", group)
            block.up = shard_linear(block.up, "column", group)
            block.down = shard_linear(block.down, "row", group)
        return sharded


def stdlib_corpus(max_bytes: int = 1 << 20) -> torch.Tensor:
    """The first ``max_bytes`` bytes of the standard library's top-level ``*.py`` files in
    sorted order, as uint8 tokens: text on every machine that runs Python, nothing fetched."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    chunks, total = [], 0
    for path in sorted(root.glob("*.py")):
        data = path.read_bytes()
        chunks.append(data)
        total += len(data)
        if total >= max_bytes:
            break
    data = b"".join(chunks)[:max_bytes]
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def _split(corpus: torch.Tensor) -> int:
    # The last tenth is held out for evaluation.
    return len(corpus) * 9 // 10


def train_batch(corpus: torch.Tensor, batch: int, seq_len: int, seed: int, step: int, rank: int):
    """(inputs, targets) [batch, seq_len] from the training part, a function of (seed, step,
    rank) only: runs that differ in nothing but the collectives see the same data."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    starts = torch.randint(0, _split(corpus) - seq_len - 1, (batch,), generator=g)
    idx = starts[:, None] + torch.arange(seq_len + 1)
    rows = corpus[idx]
    return rows[:, :-1], rows[:, 1:]


def eval_batch(corpus: torch.Tensor, batch: int, seq_len: int):
    """(inputs, targets): ``batch`` consecutive windows from the start of the held-out part, the
    same on every rank and every run."""
    lo = _split(corpus)
    need = batch * (seq_len + 1)
    if lo + need > len(corpus):
        raise ValueError(f"eval_batch: batch {batch} x seq_len {seq_len} exceeds the held-out text")
    rows = corpus[lo : lo + need].view(batch, seq_len + 1)
    return rows[:, :-1], rows[:, 1:]
