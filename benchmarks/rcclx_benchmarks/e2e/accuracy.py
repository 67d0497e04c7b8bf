"""What low-precision all_reduce (FP8 e4m3 on the wire, FP32 accumulation) costs in accuracy, end
to end, on the "rcclx" torch.distributed backend.

Training: the character-level LM (char_lm) trained with DDP twice from the same seeds on the
same batches, once with the gradient all_reduce in full precision and once in low precision (a
DDP comm hook that all_reduces each bucket through the group's torchcomms communicator with the
``low_precision`` hint "0" or "1"). Reported: both loss curves, the held-out loss of each and
their relative delta, and the steps-to-loss ratio (the steps the low-precision run needs to reach
the full-precision run's final smoothed training loss, over the steps run). With ``seeds`` > 1
the pair of runs is repeated from each further seed (other initial weights, other batches): the
mean of the per-seed deltas and its standard error say what low precision costs beyond the
run-to-run noise, and the full-precision losses' spread over the seeds says how large that
noise is.

Inference: each seed's full-precision-trained model sharded tensor-parallel over the ranks, its
row-parallel all_reduces in full precision (one group) and in low precision (a second group
created with RCCL_LOW_PRECISION_ENABLE=1, RCCLX_LP_MIN_BYTES=0), over a fixed held-out text:
max and mean absolute logits difference, top-1 agreement, and each one's top-1 accuracy on the
held-out text's next characters (what a flipped prediction costs); and the sharded full-precision
logits against the unsharded model's, which checks the tensor-parallel code itself.

``python -m rcclx_benchmarks.e2e.accuracy --ranks 2 --steps 200`` starts its own ranks and
prints the table; ``measure(cfg)`` is the per-rank entry for callers that start ranks
themselves (the tests).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import torch
import torch.distributed as dist

from rcclx_benchmarks.e2e.char_lm import CharLM, LmConfig, eval_batch, stdlib_corpus, train_batch
from rcclx_benchmarks.local_ranks import run_local_ranks

__all__ = ["AccuracyConfig", "measure", "main"]


@dataclasses.dataclass
class AccuracyConfig:
    """The study's sizes: model, steps, per-rank batch, optimiser, corpus and evaluation text."""

    steps: int = 200
    batch: int = 8
    lr: float = 1e-2
    seed: int = 0
    corpus_bytes: int = 1 << 18
    eval_batch: int = 16
    model: LmConfig = dataclasses.field(default_factory=LmConfig)
    device: str = "cpu"  # "cpu", "cuda:N", or "cuda": GPU LOCAL_RANK modulo the GPUs
    seeds: int = 1  # the study from seed, seed + 1, ...: its deltas against run-to-run noise


def _torchcomm(group, device: torch.device):
    """The group's TorchCommRCCLX (``group.comm``), which takes per-call hints."""
    comm = getattr(group, "comm", None)
    if comm is None:
        comm = group._get_backend(device).comm
    return comm


def _gradient_hook(comm, world: int, low_precision: bool, probe: dict):
    """A DDP comm hook averaging each bucket through ``comm`` with the low_precision hint set
    either way (so the two runs differ in the hint only). In the low-precision run the first
    bucket is also reduced in full precision, to record that the hint changed the numbers."""
    hint = {"low_precision": "1" if low_precision else "0"}

    def hook(_state, bucket):
        grads = bucket.buffer()
        if low_precision and "max_abs_diff" not in probe:
            exact = grads.detach().clone()
            comm.all_reduce(exact, hints={"low_precision": "0"})
        comm.all_reduce(grads, hints=hint)
        if low_precision and "max_abs_diff" not in probe:
            probe["max_abs_diff"] = (grads - exact).abs().max().item()
            probe["bucket_bytes"] = grads.numel() * grads.element_size()
        grads.div_(world)
        fut = torch.futures.Future()
        fut.set_result(grads)
        return fut

    return hook


def _smoothed(curve: list[float], window: int) -> list[float]:
    out, acc = [], 0.0
    for i, v in enumerate(curve):
        acc += v
        if i >= window:
            acc -= curve[i - window]
        out.append(acc / min(i + 1, window))
    return out


def _train(cfg: AccuracyConfig, corpus, group, low_precision: bool, device: torch.device):
    """One DDP run; (model, rank-mean loss curve, held-out loss, probe)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    world, rank = dist.get_world_size(group), dist.get_rank(group)
    comm = _torchcomm(group, device)
    torch.manual_seed(cfg.seed)
    model = CharLM(cfg.model).to(device)
    ddp = DDP(model, process_group=group)
    probe: dict = {}
    ddp.register_comm_hook(None, _gradient_hook(comm, world, low_precision, probe))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    losses = []
    for step in range(cfg.steps):
        x, y = train_batch(corpus, cfg.batch, cfg.model.seq_len, cfg.seed, step, rank)
        x, y = x.to(device), y.to(device)
        logits = ddp(x)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    curve = torch.stack(losses).float()
    comm.all_reduce(curve, hints={"low_precision": "0"})
    curve /= world
    with torch.no_grad():
        x, y = eval_batch(corpus, cfg.eval_batch, cfg.model.seq_len)
        held_out = model.loss(x.to(device), y.to(device)).item()
    return model, curve.cpu().tolist(), held_out, probe


def _lp_group(ranks):
    """A group whose communicator is created with low precision on for every all_reduce size
    (the knobs are read when the communicator is made; the first collective makes sure it is)."""
    saved = {k: os.environ.get(k) for k in ("RCCL_LOW_PRECISION_ENABLE", "RCCLX_LP_MIN_BYTES")}
    os.environ.update(RCCL_LOW_PRECISION_ENABLE="1", RCCLX_LP_MIN_BYTES="0")
    try:
        group = dist.new_group(ranks, backend="rcclx")
        dist.barrier(group=group)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return group


def _inference_groups():
    """(full-precision group, low-precision group) over all ranks, for the TP inference."""
    ranks = list(range(dist.get_world_size()))
    full_group = dist.new_group(ranks, backend="rcclx")
    dist.barrier(group=full_group)  # its communicator exists before the LP knobs are set
    return full_group, _lp_group(ranks)


def _inference(cfg: AccuracyConfig, corpus, model: CharLM, groups, device: torch.device) -> dict:
    full_group, lp_group = groups
    x, y = eval_batch(corpus, cfg.eval_batch, cfg.model.seq_len)
    x, y = x.to(device), y.to(device)
    with torch.no_grad():
        ref = model(x)
        tp_full = model.tensor_parallel(full_group)(x)
        tp_lp = model.tensor_parallel(lp_group)(x)
        # The same input through both groups: different sums mean the LP group quantised.
        g = torch.Generator().manual_seed(dist.get_rank())
        probe = torch.randn(1 << 12, generator=g).to(device)
        a, b = probe.clone(), probe.clone()
        dist.all_reduce(a, group=full_group)
        dist.all_reduce(b, group=lp_group)
    diff = (tp_lp - tp_full).abs()

    def ce(logits):
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        ).item()

    return {
        "tp_vs_unsharded_max_abs": (tp_full - ref).abs().max().item(),
        "logits_max_abs": (tp_full).abs().max().item(),
        "lp_max_abs_diff": diff.max().item(),
        "lp_mean_abs_diff": diff.mean().item(),
        "top1_agreement": (tp_lp.argmax(-1) == tp_full.argmax(-1)).float().mean().item(),
        "top1_accuracy_full": (tp_full.argmax(-1) == y).float().mean().item(),
        "top1_accuracy_lp": (tp_lp.argmax(-1) == y).float().mean().item(),
        "tokens": int(y.numel()),
        "eval_loss_full": ce(tp_full),
        "eval_loss_lp": ce(tp_lp),
        "lp_probe_max_abs_diff": (a - b).abs().max().item(),
    }


def _device(name: str) -> torch.device:
    """The device: cpu, cuda:N, or cuda (GPU LOCAL_RANK modulo the GPUs; ranks may share one)."""
    device = torch.device(name)
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise ValueError(f"accuracy: device must be 'cpu' or 'cuda[:N]', got {name!r}")
    if not torch.cuda.is_available():
        raise RuntimeError(f"accuracy: device {name!r} asked for, but torch sees no GPU")
    index = device.index
    if index is None:
        index = int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _one_seed(cfg: AccuracyConfig, corpus, groups, device: torch.device) -> dict:
    """The full-precision and the low-precision run from ``cfg.seed``, and the inference of the
    full-precision model."""
    model, full_curve, full_loss, _ = _train(cfg, corpus, dist.group.WORLD, False, device)
    _, lp_curve, lp_loss, probe = _train(cfg, corpus, dist.group.WORLD, True, device)
    window = max(1, cfg.steps // 10)
    full_s, lp_s = _smoothed(full_curve, window), _smoothed(lp_curve, window)
    reached = next((i + 1 for i, v in enumerate(lp_s) if v <= full_s[-1]), None)
    return {
        "seed": cfg.seed,
        "params": sum(p.numel() for p in model.parameters()),
        "full_curve": full_curve,
        "lp_curve": lp_curve,
        "full_final_loss": full_loss,
        "lp_final_loss": lp_loss,
        "final_loss_rel_delta": (lp_loss - full_loss) / full_loss,
        "full_final_smoothed": full_s[-1],
        "lp_final_smoothed": lp_s[-1],
        "steps_to_loss_ratio": None if reached is None else reached / cfg.steps,
        "lp_grad_max_abs_diff": probe["max_abs_diff"],
        "lp_bucket_bytes": probe["bucket_bytes"],
        **_inference(cfg, corpus, model, groups, device),
    }


def _mean_and_stderr(values: list[float]) -> tuple[float, float | None]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, (var / n) ** 0.5


def _over_seeds(runs: list[dict]) -> dict:
    """What the seeds say together: the mean LP delta with its standard error, and the spread
    of the full-precision held-out loss over the seeds (relative standard deviation)."""
    deltas = [r["final_loss_rel_delta"] for r in runs]
    mean, stderr = _mean_and_stderr(deltas)
    full = [r["full_final_loss"] for r in runs]
    full_mean, full_stderr = _mean_and_stderr(full)
    agreement = [r["top1_agreement"] for r in runs]
    return {
        "mean_final_loss_rel_delta": mean,
        "mean_final_loss_rel_delta_stderr": stderr,
        "full_loss_seed_rel_std": None
        if full_stderr is None
        else full_stderr * len(full) ** 0.5 / full_mean,
        "top1_agreement_min": min(agreement),
        "top1_agreement_mean": sum(agreement) / len(agreement),
    }


def measure(cfg: AccuracyConfig) -> dict:
    """Runs the study in this rank (the default group initialised with the "rcclx" backend, the
    same ``cfg`` on every rank); returns the figures (the same on every rank): those of the
    first seed at the top level, every seed's under ``per_seed``, and the summary over them."""
    from rcclx_core import _testing

    if cfg.seeds < 1:
        raise ValueError(f"accuracy: seeds must be at least 1, got {cfg.seeds}")
    world = dist.get_world_size()
    device = _device(cfg.device)
    corpus = stdlib_corpus(cfg.corpus_bytes)
    groups = _inference_groups()
    runs = [
        _one_seed(dataclasses.replace(cfg, seed=cfg.seed + i), corpus, groups, device)
        for i in range(cfg.seeds)
    ]
    decision = _testing.low_precision_decision(
        "all_reduce", runs[0]["lp_bucket_bytes"], nranks=world, hint=True, gpu=device.type == "cuda"
    )
    per_seed = [{k: v for k, v in r.items() if not k.endswith("_curve")} for r in runs]
    return {
        "ranks": world,
        "device": str(device),
        "steps": cfg.steps,
        **runs[0],
        "lp_decision": list(decision),
        "per_seed": per_seed,
        **_over_seeds(runs),
    }


def _table(r: dict) -> str:
    ratio = r["steps_to_loss_ratio"]
    rows = [
        ("ranks / steps / parameters", f"{r['ranks']} / {r['steps']} / {r['params']}"),
        ("device", r["device"]),
        ("held-out loss, full precision", f"{r['full_final_loss']:.4f}"),
        ("held-out loss, low precision", f"{r['lp_final_loss']:.4f}"),
        ("final loss delta (relative)", f"{r['final_loss_rel_delta']:+.3%}"),
        (
            "training loss (smoothed) full / LP",
            f"{r['full_final_smoothed']:.4f} / {r['lp_final_smoothed']:.4f}",
        ),
        ("steps-to-loss ratio", "not reached" if ratio is None else f"{ratio:.3f}"),
        ("LP gradient max abs change (step 1)", f"{r['lp_grad_max_abs_diff']:.3g}"),
        ("TP vs unsharded logits, max abs", f"{r['tp_vs_unsharded_max_abs']:.3g}"),
        ("LP vs full logits, max abs", f"{r['lp_max_abs_diff']:.3g}"),
        ("LP vs full logits, mean abs", f"{r['lp_mean_abs_diff']:.3g}"),
        ("top-1 agreement", f"{r['top1_agreement']:.2%} of {r['tokens']} tokens"),
        (
            "top-1 accuracy full / LP",
            f"{r['top1_accuracy_full']:.2%} / {r['top1_accuracy_lp']:.2%}",
        ),
        ("TP eval loss full / LP", f"{r['eval_loss_full']:.4f} / {r['eval_loss_lp']:.4f}"),
    ]
    if len(r["per_seed"]) > 1:
        seeds = r["per_seed"]
        stderr = r["mean_final_loss_rel_delta_stderr"]
        rows += [
            ("seeds", ", ".join(str(p["seed"]) for p in seeds)),
            (
                "held-out loss full / LP, per seed",
                ", ".join(f"{p['full_final_loss']:.4f}/{p['lp_final_loss']:.4f}" for p in seeds),
            ),
            ("LP delta per seed", ", ".join(f"{p['final_loss_rel_delta']:+.2%}" for p in seeds)),
            ("LP delta, mean +- s.e.", f"{r['mean_final_loss_rel_delta']:+.3%} +- {stderr:.3%}"),
            ("full precision over seeds (rel. std)", f"{r['full_loss_seed_rel_std']:.3%}"),
            (
                "top-1 agreement, min / mean",
                f"{r['top1_agreement_min']:.2%} / {r['top1_agreement_mean']:.2%}",
            ),
        ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _plot(r: dict, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(r["full_curve"], label="full precision", lw=1)
    ax.plot(r["lp_curve"], label="low precision (fp8 e4m3)", lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (rank mean)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    d, m = AccuracyConfig(), LmConfig()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--batch", type=int, default=d.batch, help="sequences per rank per step")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--corpus-bytes", type=int, default=d.corpus_bytes)
    p.add_argument("--eval-batch", type=int, default=d.eval_batch)
    p.add_argument("--d-model", type=int, default=m.d_model)
    p.add_argument("--heads", type=int, default=m.n_heads)
    p.add_argument("--layers", type=int, default=m.n_layers)
    p.add_argument("--seq-len", type=int, default=m.seq_len)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default=d.device,
        help="cuda: each rank on GPU LOCAL_RANK modulo the GPUs (ranks may share one)",
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=d.seeds,
        help="repeat the study from this many seeds (seed, seed + 1, ...): the mean LP delta "
        "and the run-to-run spread",
    )
    p.add_argument("--json", help="write the figures and curves here")
    p.add_argument("--plot", help="write the loss curves here (needs matplotlib)")
    return p


def _rank_main(args) -> None:
    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    torch.set_num_threads(args.threads)
    dist.init_process_group("rcclx", init_method="env://")
    cfg = AccuracyConfig(
        steps=args.steps,
        batch=args.batch,
        lr=args.lr,
        seed=args.seed,
        corpus_bytes=args.corpus_bytes,
        eval_batch=args.eval_batch,
        model=LmConfig(args.d_model, args.heads, args.layers, args.seq_len),
        device=args.device,
        seeds=args.seeds,
    )
    result = measure(cfg)
    if dist.get_rank() == 0:
        print(_table(result))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        if args.plot:
            print(f"plot: {args.plot}" if _plot(result, args.plot) else "plot: no matplotlib")
    dist.destroy_process_group()


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    if "RANK" in os.environ:
        _rank_main(args)
        return
    argv = sys.argv[1:] if argv is None else list(argv)
    command = [sys.executable, "-m", "rcclx_benchmarks.e2e.accuracy", *argv]
    sys.exit(run_local_ranks(command, args.ranks))


if __name__ == "__main__":
    main()
