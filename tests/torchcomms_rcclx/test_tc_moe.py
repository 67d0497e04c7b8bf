"""TorchCommRCCLX.alltoallv_dynamic and the MoE layer (torchcomms_rcclx.moe) on host tensors:
dispatch -> identity expert -> combine gives back the tokens exactly (top-1) or k times them
(top-k, unweighted); with weights and experts that scale their rows it equals the float64
reference; the expert-major layout (counts, aligned offsets, row order) is checked row by row;
top-1 to top-3, 1 to 16 experts per rank, major_align 1 and 4, zero tokens, 2 to 4 ranks.
Values are multiples of 1/8 and weights of 1/4, so every result is exact in float32."""

from __future__ import annotations

import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")

# (tokens per rank, top-k, experts per rank, major_align, hidden)
CONFIGS = [
    (7, 1, 1, None, 4),
    (9, 2, 3, 4, 3),
    (5, 3, 16, None, 8),
    (12, 2, 16, 4, 1),
    (0, 2, 2, None, 4),
    (16, 1, 4, 8, 2),
]


def _routing(rank, seed, tokens, k, num_experts, hidden):
    g = torch.Generator().manual_seed(seed * 100 + rank)
    x = torch.randint(-40, 40, (tokens, hidden), generator=g).float() / 8
    # Each rank skews its routing toward different experts; some experts get nothing.
    ids = torch.randint(0, num_experts, (tokens, k), generator=g)
    ids = torch.where(ids % 3 == 0, (ids + rank) % num_experts, ids)
    w = torch.randint(-4, 5, (tokens, k), generator=g).float() / 4
    return x, ids, w


def _expected_layout(me, world, local, seed, cfg):
    """The rows of each local expert of rank `me`: from rank 0, 1, ...; within a rank in
    (token, slot) order."""
    tokens, k, _, _, hidden = cfg
    blocks = [[] for _ in range(local)]
    for s in range(world):
        x, ids, _ = _routing(s, seed, tokens, k, local * world, hidden)
        for t in range(tokens):
            for j in range(k):
                e = int(ids[t, j])
                if e // local == me:
                    blocks[e % local].append(x[t])
    return [torch.stack(b) if b else torch.zeros(0, hidden) for b in blocks]


def _moe_case(comm, seed, cfg) -> str | None:
    from torchcomms_rcclx import moe

    tokens, k, local, align, hidden = cfg
    world, me = comm.get_size(), comm.get_rank()
    num_experts = local * world
    x, ids, w = _routing(me, seed, tokens, k, num_experts, hidden)
    routed = ids[:, 0] if k == 1 else ids
    out, counts, offsets, handle = moe.dispatch(comm, x, routed, num_experts, major_align=align)
    label = f"seed={seed} cfg={cfg}"
    want = _expected_layout(me, world, local, seed, cfg)
    if counts.tolist() != [b.shape[0] for b in want]:
        return f"{label}: expert_counts {counts.tolist()} != {[b.shape[0] for b in want]}"
    a = align or 1
    at = 0
    for ex, block in enumerate(want):
        if int(offsets[ex]) != at:
            return f"{label}: expert_offsets[{ex}]={int(offsets[ex])}, want {at}"
        if not torch.equal(out[at : at + block.shape[0]], block):
            return f"{label}: rows of local expert {ex} differ"
        at += -(-block.shape[0] // a) * a
    back = moe.combine(comm, out, handle)
    if not torch.equal(back, x * k):
        return f"{label}: identity combine differs from {k} x tokens"
    # Expert e scales its rows by (e + 1) / 2; the combine weights each slot.
    scale = torch.zeros(out.shape[0])
    for ex in range(local):
        o, c = int(offsets[ex]), int(counts[ex])
        scale[o : o + c] = (me * local + ex + 1) / 2
    got = moe.combine(comm, out * scale[:, None], handle, weights=w)
    ref = (x.double()[:, None, :] * ((ids.double() + 1) / 2)[..., None]) * w.double()[..., None]
    ref = ref.sum(1).float()
    if not torch.equal(got, ref):
        return f"{label}: weighted combine differs from the float64 reference"
    return None


def _dynamic_case(comm) -> str | None:
    """The torch method itself: 2-D rows, counts tensors, offsets, async."""
    world, me = comm.get_size(), comm.get_rank()
    splits = torch.tensor([(me + p) % 3 for p in range(world)], dtype=torch.int64)
    x = torch.arange(int(splits.sum()) * 5, dtype=torch.float32).view(-1, 5) + 100 * me
    want_counts = torch.tensor([(s + me) % 3 for s in range(world)], dtype=torch.int64)
    out = torch.full((int(want_counts.sum()) + 2, 5), -1.0)
    got_counts = torch.zeros(world, dtype=torch.int64)
    got_offsets = torch.zeros(world, dtype=torch.int64)
    work = comm.alltoallv_dynamic(
        out, x, splits, got_counts, output_offsets=got_offsets, async_op=True
    )
    work.wait()
    want = []
    for s in range(world):
        sp = [(s + p) % 3 for p in range(world)]
        start = sum(sp[:me])
        xs = torch.arange(sum(sp) * 5, dtype=torch.float32).view(-1, 5) + 100 * s
        want.append(xs[start : start + sp[me]])
    want = torch.cat(want)
    if not torch.equal(got_counts, want_counts):
        return f"output_split_sizes {got_counts.tolist()} != {want_counts.tolist()}"
    if not torch.equal(got_offsets, torch.cumsum(want_counts, 0) - want_counts):
        return f"output_offsets {got_offsets.tolist()}"
    if not torch.equal(out[: want.shape[0]], want) or not bool((out[want.shape[0] :] == -1).all()):
        return "alltoallv_dynamic rows differ"
    try:
        comm.alltoallv_dynamic(out, x, splits.int(), got_counts)
        return "int32 input_split_sizes was accepted"
    except Exception as e:  # noqa: BLE001 - the type is checked below
        if "input_split_sizes is int32 but must be int64" not in str(e):
            return f"int32 input_split_sizes: {e}"
    return None


def _overflow_case(comm) -> str | None:
    """A capacity too small for what every rank receives: the dispatch fails naming it."""
    from torchcomms_rcclx import moe

    world = comm.get_size()
    ids = torch.arange(4 * world) % (2 * world)  # every rank receives 4 rows from each rank
    x = torch.ones(4 * world, 3)
    try:
        moe.dispatch(comm, x, ids, 2 * world, capacity=4 * world - 1)
        return "an overflowing dispatch did not raise"
    except Exception as e:  # noqa: BLE001 - the text is checked
        want = f"output overflow on rank {comm.get_rank()}: rank {world - 1} sent 4 rows"
        if want not in str(e):
            return f"overflowing dispatch: {e}"
    # checked=True on host tensors: the same error, from work.wait() of an async call.
    splits = torch.full((world,), 4, dtype=torch.int64)
    counts = torch.zeros(world, dtype=torch.int64)
    short = torch.zeros(4 * world - 1, 3)
    work = comm.alltoallv_dynamic(short, x, splits, counts, checked=True, async_op=True)
    try:
        work.wait()
        return "checked async alltoallv_dynamic: wait() did not raise the overflow"
    except Exception as e:  # noqa: BLE001 - the text is checked
        return None if want in str(e) else f"checked async alltoallv_dynamic: {e}"


def _moe_rank(ctx):
    comm = H.backend_of(ctx)
    problems = [_dynamic_case(comm), _overflow_case(comm)]
    for seed, cfg in enumerate(CONFIGS):
        problems.append(_moe_case(comm, seed, cfg))
    comm.finalize()
    return [p for p in problems if p]


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_moe_dispatch_combine(nranks):
    for res in launch(_moe_rank, nranks, timeout=120):
        assert res.value == [], res.value
