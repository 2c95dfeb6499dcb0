#!/usr/bin/env bash
# wait_policy.sh - which OMP_WAIT_POLICY should a measurement run under? The
# same build swept three times on uniform up to n = 20,000 (the sizes where
# waking threads is a visible share of a search), with the idle OpenMP
# threads spinning (active), sleeping (passive) and as the runtime leaves
# them (default: libgomp spins a while, then sleeps), then compared with
# harness/compare.py: passive against active and default against active, per
# configuration, 1 thread and all cores.
#
#   harness/wait_policy.sh [OUT]      (default OUT: results/wait_policy/<UTC timestamp>)
#
# About 6 minutes on 2 cores. Nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/wait_policy/$(date -u +%Y%m%dT%H%M%SZ)}
. harness/python.sh
mkdir -p "$out"
cmake --build build/release --target nsearch_bench >/dev/null
for policy in active passive default; do
    "$PY" harness/sweep.py --bench build/release/nsearch-bench --results "$out/$policy" \
        --kernels naive_omp,hash_parallel,grid_sorted,bound --workloads uniform --max-n 20000 \
        --rounds 3 --repetitions 3 --min-time 0.05 --wait-policy "$policy" \
        --dir-file "$out/$policy.dir"
done
for policy in passive default; do
    "$PY" harness/compare.py "$(cat "$out/active.dir")/bench.json" \
        "$(cat "$out/$policy.dir")/bench.json" --out "$out/$policy-vs-active"
done
echo "wait_policy.sh: the comparisons are in $out/{passive,default}-vs-active/compare.txt"
