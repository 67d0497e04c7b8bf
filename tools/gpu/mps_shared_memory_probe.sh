#!/usr/bin/env bash
# Runs tools/gpu/mps_shared_memory_probe.py under an MPS daemon of its own (no SM limit): for
# each case a victim client, then a spinner client whose blocks wait 3 s, and the victim's
# kernel times meanwhile. Cases: "CARVEOUT BLOCKS THREADS" (default: one waiting block on every
# SM of a 132-SM GPU with the driver's carveout, the same with the largest shared-memory
# carveout, and blocks on half the SMs). Output also goes to $OUT/mps_shared_memory_probe.txt.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-/tmp}"
PROBE="$ROOT/tools/gpu/mps_shared_memory_probe.py"
READY="$(mktemp -u /tmp/mps_probe_ready.XXXXXX)"
exec > >(tee -a "$OUT/mps_shared_memory_probe.txt") 2>&1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_probe_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_probe_log
unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
CONTROL=/usr/local/nvidia/bin/nvidia-cuda-mps-control
command -v nvidia-cuda-mps-control >/dev/null && CONTROL=nvidia-cuda-mps-control
"$CONTROL" -d
trap 'echo quit | "$CONTROL"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=("-1 132 512" "100 132 512" "-1 66 512")
for c in "${cases[@]}"; do
  read -r carveout blocks threads <<<"$c"
  echo "== spinner: carveout $carveout, $blocks blocks of $threads threads"
  rm -f "$READY" "$READY.warm"
  timeout 40 python3 "$PROBE" victim "$READY" &
  victim=$!
  for _ in $(seq 300); do [ -e "$READY.warm" ] && break; sleep 0.1; done
  timeout 30 python3 "$PROBE" spin "$carveout" "$blocks" "$threads" 3 "$READY"
  wait "$victim"
done
rm -f "$READY" "$READY.warm"
