#!/usr/bin/env bash
# power.sh - can the comparison see a real difference? One build, the
# kernels on two code paths (docs/library.md, "Code paths"): NS_ISA=avx512 and
# NS_ISA=avx2. Both sweep grid_sorted and bound on uniform up to
# n = 1,000,000 in independent rounds, back to back, and harness/compare.py
# compares them. On a CPU with full-width AVX-512 the verdict for grid_sorted
# at n >= 100,000 should be "slower" on the avx2 path; bound, which gains
# little from wider vectors, should not move much.
#
#   harness/power.sh [OUT]      (default OUT: results/power/<UTC timestamp>)
#
# About 10 minutes on 2 cores. Nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/power/$(date -u +%Y%m%dT%H%M%SZ)}
. harness/python.sh
mkdir -p "$out"
cmake -S . -B build/power -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF -DNS_NATIVE=OFF >/dev/null
cmake --build build/power -j "$(nproc)" --target nsearch_bench nsearch_cli >/dev/null
for path in avx512 avx2; do
    NS_ISA=$path build/power/nsearch --version | grep -q "code path $path;" || {
        echo "power.sh: this CPU cannot run the $path path: $(NS_ISA=$path build/power/nsearch --version)" >&2
        exit 2
    }
done
for path in avx512 avx2; do
    NS_ISA=$path "$PY" harness/sweep.py --bench build/power/nsearch-bench --results "$out/$path" \
        --kernels grid_sorted,bound --workloads uniform --max-n 1000000 --threads "$(nproc)" \
        --dir-file "$out/$path.dir"
done
"$PY" harness/compare.py "$(cat "$out/avx512.dir")/bench.json" \
    "$(cat "$out/avx2.dir")/bench.json" --out "$out/compare"
echo "power.sh: the comparison is in $out/compare/compare.txt"
