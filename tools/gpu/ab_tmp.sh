set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RCCLX_TIMEOUT_MS=5000
RCCLX_GPU_BUILD_DIR=$PWD/build/gpu OUT=/tmp/o bash tools/gpu_check.sh --no-check --no-tests --no-bench 2>&1 | tail -1
export PYTHONPATH=$PWD/build/gpu/site:$PWD/tests
i=0
for t in tree_stagger_blocks=24 tree_stagger_blocks=32 tree_stagger_blocks=48 tree_stagger_blocks=40 tree_stagger_blocks=32; do
  i=$((i+1))
  s=$SECONDS
  timeout 100 python3 tools/gpu/allreduce_bench.py --min-bytes 8388608 --max-bytes 16777216 --tuning "$t" --out /tmp/o/ab_$i.json > /tmp/o/ab_$i.log 2>&1 || { echo "pass $i FAILED after $((SECONDS-s)) s"; grep -v "^\s*$" /tmp/o/ab_$i.log | grep -iv "warn" | tail -12; }
  python3 -c "
import json,sys
r=json.load(open('/tmp/o/ab_$i.json'))['rank_rows'][0]
print('$i', '$t'.ljust(44), ' | '.join(f\"{x['bytes']>>20}M tr {x['dda_tree']} sym {x.get('dda_tree[sym]',0)} reg {x.get('dda_tree[reg]',0)} stg {x.get('dda_tree[staged]',0)} peer {min(x['nccl'],x.get('symm_two_shot',1e9),x.get('symm_one_shot',1e9)):.1f}\" for x in r))" 2>&1 | tail -1
done
