#!/usr/bin/env bash
# Builds and runs tools/gpu/nvlink_probe.cu (NVLink bandwidth between 2 GPUs with both
# directions loaded at once). Arguments go to the probe, e.g. --quick or --sizes 1048576,4194304.
# The binary and its output (nvlink_probe.txt) go to $OUT (default /tmp).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-/tmp}"
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
mkdir -p "$OUT"
cd "$ROOT"
nvcc -O3 -std=c++17 -arch=sm_90 -o "$OUT/nvlink_probe" tools/gpu/nvlink_probe.cu
"$OUT/nvlink_probe" "$@" 2>&1 | tee "$OUT/nvlink_probe.txt"
