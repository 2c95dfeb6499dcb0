#!/usr/bin/env bash
# add_kernel_test.sh SOURCE SCRATCH: adding a kernel is one file and one line.
#
# Copies the source tree to SCRATCH, adds tests/extend/sweep_x.c as
# kernels/sweep_x.c and one NS_KERNEL line to kernels/kernel_list.h - exactly
# docs/testing.md's "Adding a kernel" - builds it (Debug: quick to compile), and
# checks that the new kernel is then in the CLI (listed, exact under --check),
# in the differential, layout and allocation tests (discovered from the
# tables, and passing), in nsearch-bench's sweep (validated, timed) and in the
# summary and the figures' data.
set -euo pipefail
src=$(cd "$1" && pwd)
scratch=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch/tree"
tar -C "$src" --exclude=./build --exclude=./results --exclude=./.git -cf - . |
    tar -C "$scratch/tree" -xf -

# the two steps of "Adding a kernel"
cp "$src/tests/extend/sweep_x.c" "$scratch/tree/kernels/sweep_x.c"
printf '%s\n' 'NS_KERNEL(sweep_x, "sort-and-sweep along x, serial (a test kernel)", .stable_order = true)' \
    >>"$scratch/tree/kernels/kernel_list.h"

cd "$scratch"
cmake -S tree -B build -DCMAKE_BUILD_TYPE=Debug -DNS_LAYER_CHECK=OFF >build.log 2>&1 ||
    { cat build.log; fail "configure"; }
cmake --build build -j 2 --target nsearch_cli nsearch_bench test_diff test_layouts test_alloc \
    >>build.log 2>&1 || { tail -30 build.log; fail "build"; }

# the CLI
build/nsearch kernels | grep -q '^sweep_x ' || fail "nsearch kernels does not list sweep_x"
build/nsearch gen --workload clusters --n 3000 --seed 3 --output clusters.csv
build/nsearch pairs --kernel sweep_x --input clusters.csv --check --output /dev/null 2>check.err ||
    { cat check.err; fail "nsearch pairs --kernel sweep_x --check"; }
grep -q '^VALID' check.err || fail "no VALID from --check: $(cat check.err)"

# the tests, discovered from the tables
ctest --test-dir build -N >list.txt
for t in diff/sweep_x/uniform/t1 diff/sweep_x/settled/t2 layout/far_particles/sweep_x \
    layout/crowded_one_cell/sweep_x layout/uniform_radius/sweep_x alloc/sweep_x; do
    grep -q ": $t\$" list.txt || fail "ctest does not list $t"
done
grep -q 'order/.*/sweep_x' list.txt && fail "order/*/sweep_x listed for a serial kernel"
grep -q 'diff/sweep_x/.*/t[38]$' list.txt && fail "a serial kernel's differential tests at 3 or 8 threads"
ctest --test-dir build --output-on-failure -j 2 \
    -R '^(diff/sweep_x/(uniform|clusters|settled)/t2|layout/(far_particles|straddle_zero|crowded_one_cell)/sweep_x|alloc/sweep_x)$' \
    >ctest.log 2>&1 || { tail -40 ctest.log; fail "the new kernel's tests"; }
grep -q '100% tests passed, 0 tests failed out of 7' ctest.log || { cat ctest.log; fail "not 7 tests run"; }

# the sweep and the reports
build/nsearch-bench --kernels sweep_x,grid_sorted --workloads uniform --max-n 2000 --threads 1 \
    --out run --benchmark_min_time=0.001 --benchmark_repetitions=2 >bench.out 2>bench.err ||
    { tail -20 bench.err; fail "nsearch-bench"; }
grep -q 'sweep_x/uniform/n:2000/threads:1' bench.out || fail "nsearch-bench did not time sweep_x"
. "$src/harness/python.sh"
"$PY" "$src/harness/results.py" summary run/bench.json >summary.txt ||
    { cat summary.txt; fail "results.py summary"; }
grep -q '^sweep_x .*VALID vs naive' summary.txt || { cat summary.txt; fail "sweep_x not VALID in the summary"; }
"$PY" "$src/harness/results.py" plotdata run/bench.json --out plot >/dev/null ||
    fail "results.py plotdata"
grep -q '^"sweep_x' plot/scaling.dat || fail "sweep_x is not a line of the scaling figure's data"
echo "add_kernel: sweep_x listed, exact, tested ($(grep -c 'sweep_x' list.txt) ctests), swept and plotted"
