#!/usr/bin/env bash
# power.sh - can the comparison see a real difference? The same commit built
# twice: as release builds it (-march=native: the AVX-512 paths where the CPU
# has them) and for x86-64-v3 (AVX2 at most). Both sweep grid_sorted and
# bound on uniform up to n = 1,000,000 in independent rounds, back to back,
# and harness/compare.py compares them (--allow-different-builds: that is the
# point). On a CPU with AVX-512 the verdict for grid_sorted at n >= 100,000
# must be "slower" for the x86-64-v3 build.
#
#   harness/power.sh [OUT]      (default OUT: results/power/<UTC timestamp>)
#
# About 10 minutes on 2 cores. Nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/power/$(date -u +%Y%m%dT%H%M%SZ)}
. harness/python.sh
mkdir -p "$out"
build() { # NAME EXTRA-CMAKE-ARGS...
    local name=$1
    shift
    cmake -S . -B "build/power-$name" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF "$@" >/dev/null
    cmake --build "build/power-$name" -j "$(nproc)" --target nsearch_bench >/dev/null
}
build native -DNS_NATIVE=ON
build x86-64-v3 -DNS_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v3
for name in native x86-64-v3; do
    "$PY" harness/sweep.py --bench "build/power-$name/nsearch-bench" --results "$out/$name" \
        --kernels grid_sorted,bound --workloads uniform --max-n 1000000 --threads "$(nproc)" \
        --dir-file "$out/$name.dir"
done
"$PY" harness/compare.py "$(cat "$out/native.dir")/bench.json" \
    "$(cat "$out/x86-64-v3.dir")/bench.json" --out "$out/compare" --allow-different-builds
echo "power.sh: the comparison is in $out/compare/compare.txt"
