#!/usr/bin/env bash
# Device check, in one call on a machine with GPUs (2 for the collectives): builds ctran and
# rcclx_core with this machine's python3, runs the GPU correctness checks
# (tools/gpu/allreduce_check.py, tools/gpu/collectives_check.py, tools/gpu/lp_check.py: one
# rank per GPU, then one rank more than GPUs, ranks sharing GPUs), the GPU tests (tests/gpu,
# marker gpu), then the benchmarks against NCCL (tools/gpu/allreduce_bench.py, also against
# torch symmetric memory; tools/gpu/collectives_bench.py: all_gather, reduce_scatter,
# all_to_all), and prints the benchmark tables last. Logs and JSON go to $OUT (default
# /tmp/rcclx_gpu_out).
#
#   tools/gpu_check.sh [--no-build] [--no-check] [--no-tests] [--no-bench] [--sweep] [--quick]
#                      [--no-allreduce] [--no-collectives] [--no-lp]
#
# --no-allreduce / --no-collectives / --no-lp leave out that part's check, tests and benchmark
# (lp: the low-precision collectives, tools/gpu/lp_check.py and tools/gpu/lp_bench.py).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1): the
# machines here require it. In-kernel waits give up after RCCLX_TIMEOUT_MS (20 s here).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RCCLX_TIMEOUT_MS="${RCCLX_TIMEOUT_MS:-20000}" PYTHONUNBUFFERED=1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-/tmp/rcclx_gpu_out}"
BUILD="${RCCLX_GPU_BUILD_DIR:-/tmp/rcclx_gpu_build}"
SITE="$BUILD/site"
PY="${PYTHON:-python3}"
build=1 check=1 tests=1 bench=1 sweep="" quick="" allreduce=1 collectives=1 lp=1
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;; --no-check) check=0 ;; --no-tests) tests=0 ;; --no-bench) bench=0 ;;
    --sweep) sweep="--sweep" ;; --quick) quick=1 ;;
    --no-allreduce) allreduce=0 ;; --no-collectives) collectives=0 ;; --no-lp) lp=0 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
status=0
step() { echo; echo "=== $* ($(date +%T))"; }

step "machine"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
nvidia-smi topo -m 2>/dev/null | head -5 || true
"$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
if [ "$build" = 1 ]; then
  step "build (cmake, $(nproc) jobs)"
  t0=$SECONDS
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRCCLX_PACKAGE=rcclx_core \
    -DPython_EXECUTABLE="$(command -v "$PY")" -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" \
    -DRCCLX_CUDA_ARCHITECTURES="${RCCLX_CUDA_ARCHITECTURES:-90}" >"$OUT/cmake.log" 2>&1 \
    || { tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build "$BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -B2 -A12 -m5 "error" "$OUT/build.log" | head -80; exit 1; }
  rm -rf "$SITE" && mkdir -p "$SITE"
  cp -r "$ROOT/ctran/python/ctran" "$ROOT/rcclx_core/python/rcclx_core" "$SITE/"
  cp "$BUILD"/ctran/_C*.so "$SITE/ctran/" && cp "$BUILD"/rcclx_core/_C*.so "$SITE/rcclx_core/" || exit 1
  echo "built in $((SECONDS - t0)) s"
fi
export PYTHONPATH="$SITE:$ROOT/tests${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import ctran, rcclx_core, sys; print("ctran built with CUDA:", ctran.built_with_cuda(), "GPUs:", ctran.cuda_device_count()); sys.exit(0 if ctran.built_with_cuda() else 1)' || { echo "no GPU code in the build (nvcc not found?)"; exit 1; }
ngpu=$("$PY" -c 'import ctran; print(ctran.cuda_device_count()[0])')
# The checks run one rank per GPU (at most 8, the device windows' limit; from 2 GPUs), then one
# rank more than there are GPUs (ranks sharing GPUs: every kernel's n-rank paths, e.g. 3 ranks on
# 2 GPUs; on a machine with one GPU, 2 ranks on it).
nranks=$((ngpu < 8 ? ngpu : 8))
shared=$((ngpu + 1))

if [ "$check" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$allreduce" = 1 ]; then
  step "GPU correctness (tools/gpu/allreduce_check.py)"
  RCCLX_TIMEOUT_MS="${RCCLX_CHECK_TIMEOUT_MS:-10000}" timeout 300 "$PY" "$ROOT/tools/gpu/allreduce_check.py" --nranks "$nranks" --out "$OUT/check.json" 2>&1 | tee "$OUT/check.log" | grep -v "^\s*$" | tail -40
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$check" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$collectives" = 1 ]; then
  step "GPU correctness (tools/gpu/collectives_check.py)"
  RCCLX_TIMEOUT_MS="${RCCLX_CHECK_TIMEOUT_MS:-10000}" timeout 300 "$PY" "$ROOT/tools/gpu/collectives_check.py" --nranks "$nranks" --out "$OUT/coll_check.json" 2>&1 | tee "$OUT/coll_check.log" | grep -v "^\s*$" | tail -40
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$check" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$lp" = 1 ]; then
  step "GPU correctness (tools/gpu/lp_check.py)"
  q=""
  [ -n "$quick" ] && q="--quick"
  RCCLX_TIMEOUT_MS="${RCCLX_CHECK_TIMEOUT_MS:-10000}" timeout 400 "$PY" "$ROOT/tools/gpu/lp_check.py" $q --nranks "$nranks" --out "$OUT/lp_check.json" 2>&1 | tee "$OUT/lp_check.log" | grep -v "^\s*$" | tail -40
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$check" = 1 ] && [ "$ngpu" -ge 1 ] && [ "$shared" -le 8 ]; then
  for part in allreduce collectives lp; do
    [ "$part" = allreduce ] && [ "$allreduce" = 0 ] && continue
    [ "$part" = collectives ] && [ "$collectives" = 0 ] && continue
    [ "$part" = lp ] && [ "$lp" = 0 ] && continue
    nostall="--skip-stall"
    [ "$part" = lp ] && nostall=""  # lp_check has no stalled-peer check
    step "GPU correctness, $shared ranks on $ngpu GPU(s) (tools/gpu/${part}_check.py)"
    RCCLX_TIMEOUT_MS="${RCCLX_CHECK_TIMEOUT_MS:-10000}" timeout 300 "$PY" "$ROOT/tools/gpu/${part}_check.py" --nranks "$shared" $nostall --out "$OUT/${part}_shared_check.json" 2>&1 | tee "$OUT/${part}_shared_check.log" | grep -v "^\s*$" | grep -v "Graph is empty\|capture_end" | tail -20
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
fi

if [ "$tests" = 1 ]; then
  step "GPU tests (pytest -m gpu tests/gpu)"
  files=""
  [ "$allreduce" = 1 ] && files="$files tests/gpu/test_gpu_all_reduce.py"
  [ "$collectives" = 1 ] && files="$files tests/gpu/test_gpu_collectives.py"
  [ "$lp" = 1 ] && files="$files tests/gpu/test_gpu_low_precision.py"
  files="$files tests/gpu/test_gpu_one_process.py"
  (cd "$ROOT" && timeout 300 "$PY" -m pytest -q -m gpu -p no:cacheprovider $files 2>&1 | tee "$OUT/pytest.log" | tail -15)
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$bench" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$collectives" = 1 ]; then
  step "benchmark (tools/gpu/collectives_bench.py)"
  max=""
  [ -n "$quick" ] && max="--max-bytes 16777216"
  timeout 420 "$PY" "$ROOT/tools/gpu/collectives_bench.py" $max --out "$OUT/coll_bench.json" 2>&1 | tee "$OUT/coll_bench.log" | tail -14
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$bench" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$allreduce" = 1 ]; then
  step "benchmark (tools/gpu/allreduce_bench.py)"
  max=""
  [ -n "$quick" ] && max="--max-bytes 16777216"
  timeout 420 "$PY" "$ROOT/tools/gpu/allreduce_bench.py" $sweep $max --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -45
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$bench" = 1 ] && [ "$ngpu" -ge 2 ] && [ "$lp" = 1 ]; then
  step "benchmark (tools/gpu/lp_bench.py)"
  max=""
  [ -n "$quick" ] && max="--max-bytes 67108864"
  timeout 480 "$PY" "$ROOT/tools/gpu/lp_bench.py" $max --out "$OUT/lp_bench.json" 2>&1 | tee "$OUT/lp_bench.log" | tail -45
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit $status
