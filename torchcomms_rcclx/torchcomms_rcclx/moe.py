"""Mixture-of-experts token dispatch and combine on ``alltoallv_dynamic``, with no
device-to-host sync: every size the host sees is static (the token count, the top-k, the
output capacity), every count and offset stays a tensor on the communicator's device, so a
whole MoE layer can be captured in a CUDA graph and replayed with new routings.

Experts are split evenly: with ``num_experts`` E over W ranks, rank r owns experts
``r * E // W`` to ``(r + 1) * E // W - 1`` (E // W local experts each).

``dispatch`` sends each (token, slot) of ``expert_ids`` to the owner of that expert and returns
the received rows **expert-major**: local expert 0's rows (from rank 0, then rank 1, ...), then
expert 1's, each expert's block starting at a multiple of ``major_align``, with per-expert
counts and offsets as device tensors (shaped for a grouped GEMM, as torch's
``all_to_all_vdev_2d`` returns them). ``combine`` sends the experts' outputs back and sums each
token's k rows (weighted by ``weights`` when given) in the original token order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import rcclx_core


@dataclass
class DispatchHandle:
    """What combine needs to send rows back; every tensor stays on the device."""

    num_tokens: int
    top_k: int
    hidden: int
    order: torch.Tensor  # (T*k,): position i of the sorted send rows is flat slot order[i]
    send_splits: torch.Tensor  # (W,): rows sent to each rank
    recv_splits: torch.Tensor  # (W,): rows received from each rank
    recv_position: torch.Tensor  # (capacity,): row of the expert-major output of each received row
    recv_rows: int  # the rank-major receive capacity
    out_rows: int  # rows of the expert-major layout


def _experts_per_rank(what: str, num_experts: int, world: int) -> int:
    if isinstance(num_experts, bool) or not isinstance(num_experts, int) or num_experts < 1:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: num_experts must be a positive integer, got {num_experts!r}"
        )
    if num_experts % world:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: num_experts {num_experts} is not a multiple of the {world} ranks"
        )
    return num_experts // world


def _check_tokens(comm, what: str, tokens, expert_ids):
    comm._check(what, "tokens", tokens)
    if tokens.dim() != 2:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: tokens must be (num_tokens, hidden), got shape {tuple(tokens.shape)}"
        )
    if not isinstance(expert_ids, torch.Tensor) or expert_ids.dtype != torch.int64:
        got = expert_ids.dtype if isinstance(expert_ids, torch.Tensor) else type(expert_ids)
        raise rcclx_core.InvalidArgumentError(f"{what}: expert_ids must be int64, got {got}")
    ids = expert_ids.unsqueeze(1) if expert_ids.dim() == 1 else expert_ids
    if expert_ids.dim() not in (1, 2) or ids.shape[0] != tokens.shape[0]:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: expert_ids must be (num_tokens,) or (num_tokens, k) with num_tokens "
            f"{tokens.shape[0]}, got shape {tuple(expert_ids.shape)}"
        )
    comm._check(what, "expert_ids", ids.contiguous())
    return ids.contiguous()


def _exclusive_cumsum(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    return torch.cumsum(x, dim) - x


def _expert_major_positions(recv_counts, rows: int, align: int):
    """For each of `rows` received rows (rank-major: from rank s, local expert l, in that
    order), its row in the expert-major output; rows past the received ones map to the spare
    last row. Also each expert's count and aligned start. All on the device, static sizes."""
    world, local = recv_counts.shape
    per_expert = recv_counts.sum(0)  # (L,)
    padded = (per_expert + (align - 1)) // align * align
    expert_start = _exclusive_cumsum(padded)  # (L,)
    before_src = _exclusive_cumsum(recv_counts, 0)  # (W, L): rows of expert l from ranks < s
    flat = recv_counts.reshape(-1)
    seg_end = torch.cumsum(flat, 0)
    seg_start = seg_end - flat
    r = torch.arange(rows, device=recv_counts.device)
    seg = torch.searchsorted(seg_end, r, right=True).clamp_(max=world * local - 1)
    expert = seg % local
    pos = expert_start[expert] + before_src.reshape(-1)[seg] + (r - seg_start[seg])
    spare = rows + local * (align - 1)
    # Past the received rows, and (on an overflow, which the exchange reports) past the
    # layout: the spare row, so no index leaves the buffer.
    keep = (r < seg_end[-1]) & (pos < spare)
    pos = torch.where(keep, pos, torch.full_like(pos, spare))
    return pos, per_expert, expert_start


def dispatch(
    comm,
    tokens: torch.Tensor,
    expert_ids: torch.Tensor,
    num_experts: int,
    *,
    major_align: int | None = None,
    capacity: int | None = None,
):
    """Sends row t of ``tokens`` (num_tokens, hidden) to the rank owning each expert in
    ``expert_ids[t]`` ((num_tokens,) for top-1 or (num_tokens, k), int64, on the device).

    Returns ``(expert_tokens, expert_counts, expert_offsets, handle)``: ``expert_tokens``
    (rows, hidden), expert-major; ``expert_counts[l]`` rows of local expert l start at
    ``expert_offsets[l]`` (a multiple of ``major_align``, default 1); both int64 on the device.
    ``capacity`` bounds the rows this rank receives (default: every rank's every slot, world *
    num_tokens * k); ``rows`` is capacity + local experts * (major_align - 1). More rows than
    ``capacity`` fail as alltoallv_dynamic's overflow. No device-to-host sync.
    """
    what = "moe.dispatch"
    world = comm.get_size()
    local = _experts_per_rank(what, num_experts, world)
    ids = _check_tokens(comm, what, tokens, expert_ids)
    align = 1 if major_align is None else int(major_align)
    if align < 1:
        raise rcclx_core.InvalidArgumentError(f"{what}: major_align must be >= 1, got {align}")
    num_tokens, hidden = tokens.shape
    k = ids.shape[1]
    rows = world * num_tokens * k if capacity is None else int(capacity)
    dev = tokens.device
    flat = ids.reshape(-1)
    # Sort the (token, slot) pairs by expert: the send buffer is then packed by rank, and
    # within a rank's block by its local expert.
    order = torch.argsort(flat, stable=True)
    send = tokens.index_select(0, torch.div(order, k, rounding_mode="floor"))
    per_expert = torch.zeros(num_experts, dtype=torch.int64, device=dev)
    per_expert.scatter_add_(0, flat, torch.ones_like(flat))
    send_splits = per_expert.view(world, local).sum(1)
    # Counts per (source rank, local expert): a fixed-size exchange.
    recv_counts = torch.empty_like(per_expert)
    comm.all_to_all_single(recv_counts, per_expert)
    recv_counts = recv_counts.view(world, local)
    received = torch.empty(rows, hidden, dtype=tokens.dtype, device=dev)
    recv_splits = torch.empty(world, dtype=torch.int64, device=dev)
    comm.alltoallv_dynamic(received, send, send_splits, recv_splits, row_elems=hidden)
    pos, counts, offsets = _expert_major_positions(recv_counts, rows, align)
    out_rows = rows + local * (align - 1)
    expert_tokens = torch.zeros(out_rows + 1, hidden, dtype=tokens.dtype, device=dev)
    expert_tokens.index_copy_(0, pos, received)
    handle = DispatchHandle(
        num_tokens, k, hidden, order, send_splits, recv_splits, pos, rows, out_rows
    )
    return expert_tokens[:out_rows], counts, offsets, handle


def combine(comm, expert_outputs: torch.Tensor, handle: DispatchHandle, weights=None):
    """Returns (num_tokens, hidden): for each token, the sum over its k slots of the expert
    output rows of ``expert_outputs`` (dispatch's layout), each times ``weights[t, j]`` when
    given ((num_tokens, k) or (num_tokens,)), accumulated in float32 (float64 for float64).
    With k = 1 and no weights it returns the rows themselves. No device-to-host sync."""
    what = "moe.combine"
    comm._check(what, "expert_outputs", expert_outputs)
    t, k = handle.num_tokens, handle.top_k
    if expert_outputs.dim() != 2 or expert_outputs.shape[0] != handle.out_rows:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: expert_outputs must be ({handle.out_rows}, hidden) as dispatch returned "
            f"its rows, got shape {tuple(expert_outputs.shape)}"
        )
    hidden = expert_outputs.shape[1]
    dev = expert_outputs.device
    # Received rows past the real ones point at one spare row past the layout.
    spare = torch.zeros(1, hidden, dtype=expert_outputs.dtype, device=dev)
    back = torch.cat([expert_outputs, spare]).index_select(0, handle.recv_position)
    returned = torch.empty(t * k, hidden, dtype=expert_outputs.dtype, device=dev)
    comm.alltoallv_dynamic(
        returned,
        back,
        handle.recv_splits,
        handle.send_splits,
        row_elems=hidden,
        output_split_sizes_known=True,
    )
    slots = torch.empty_like(returned)
    slots.index_copy_(0, handle.order, returned)
    slots = slots.view(t, k, hidden)
    if weights is None and k == 1:
        return slots.reshape(t, hidden)
    acc = torch.float64 if expert_outputs.dtype == torch.float64 else torch.float32
    x = slots.to(acc)
    if weights is not None:
        if not isinstance(weights, torch.Tensor) or weights.numel() != t * k:
            shape = tuple(weights.shape) if isinstance(weights, torch.Tensor) else weights
            raise rcclx_core.InvalidArgumentError(
                f"{what}: weights must hold num_tokens x k = {t} x {k} values, got {shape}"
            )
        x = x * weights.reshape(t, k, 1).to(acc)
    total = x[:, 0]
    for j in range(1, k):  # a fixed order, so every rank and every replay adds alike
        total = total + x[:, j]
    return total.to(expert_outputs.dtype)
