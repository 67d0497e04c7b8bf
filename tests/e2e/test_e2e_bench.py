"""rcclx-e2e on CPU: the tiny preset on 2 ranks runs every phase on rcclx, rcclx-lp and gloo, the
table has every row, and each step's output on rcclx equals gloo's (the same seeds give the
same blocks, so any difference is a bug of the benchmark or of a backend). The MoE rows compare
two different exchanges: the sync-free moe.dispatch / combine (rcclx) with gloo's host-sync
all_to_all_single.

Low precision: the rcclx-lp outputs must differ from gloo's (the per-call hint took effect) by
at most 10% of the output's largest magnitude (FP8 e4m3 blocks carry a few percent of rounding
error per element; two all_reduces per step)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rcclx_benchmarks.e2e import bench

BACKENDS = ["rcclx", "rcclx-lp", "gloo"]
PHASES = ["decode", "prefill", "moe"]
LP_BOUND = 0.10  # max |lp - gloo| / max |gloo| over every output element


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e") / "rows.json"
    cmd = [sys.executable, "-m", "rcclx_benchmarks.e2e.bench", "--ranks", "2", "--steps", "6"]
    cmd += ["--preset", "tiny", "--kv", "64", "--tokens", "32", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(out.read_text())


def test_every_backend_and_phase_has_a_row(run):
    stdout, result = run
    got = {(r["backend"], r["phase"]) for r in result["rows"]}
    assert got == {(b, p) for b in BACKENDS for p in PHASES}
    for b in BACKENDS:
        for p in PHASES:
            assert any(line.split()[:2] == [b, p] for line in stdout.splitlines()), (b, p)
    assert "command: rcclx-e2e --ranks 2 --device cpu --preset tiny" in stdout
    for r in result["rows"]:
        assert r["ms"] > 0 and r["floor_ms"] > 0, r
        assert 0.0 <= r["comm_share"] < 1.0, r
    gloo = {r["phase"]: r for r in result["rows"] if r["backend"] == "gloo"}
    assert all(r["peer_over_this"] == pytest.approx(1.0) for r in gloo.values())


def test_rcclx_outputs_equal_gloo(run):
    _, result = run
    for r in result["rows"]:
        if r["backend"] in ("rcclx", "gloo"):
            # Two ranks: a sum of two floats is the same in either order, so equal bits.
            assert r["max_abs_diff"] == 0.0, r


def test_low_precision_outputs_within_bound(run):
    _, result = run
    lp = {r["phase"]: r for r in result["rows"] if r["backend"] == "rcclx-lp"}
    for phase in ("decode", "prefill"):
        assert 0.0 < lp[phase]["max_rel_diff"] <= LP_BOUND, lp[phase]
    # The MoE exchange moves rows, not sums: no low precision there, so exact.
    assert lp["moe"]["max_abs_diff"] == 0.0


def test_defaults_and_command_follow_the_device():
    cpu = bench._parse([])
    assert (cpu.preset, cpu.backends) == ("tiny", "rcclx,rcclx-lp,gloo")
    cuda = bench._parse(["--device", "cuda", "--preset", "70b", "--graph"])
    assert cuda.backends == "rcclx,rcclx-lp,nccl"
    assert bench.command(cuda).endswith("--graph")
    assert "--preset 70b --moe-preset mixtral" in bench.command(cuda)
    with pytest.raises(SystemExit):
        bench._parse(["--graph"])  # CUDA graphs need --device cuda
