#!/usr/bin/env bash
# plots_test.sh ROOT SCRATCH CASE - the figures and the comparison, drawn by
# run_all.sh from small committed result files (tests/plots/*.json), checked
# to be valid PNG and SVG files; paths: any folder name, nothing temporary
# left, a failed drawing leaving the figures there were; options: a mistyped
# sweep option refused before anything runs.
set -euo pipefail
root=$1 scratch=$2 case=$3
rm -rf "$scratch"
mkdir -p "$scratch"
data="$root/tests/plots"
fails=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

# check_png, check_svg
source "$root/tests/plots/checks.sh"

# plots_of_part KEEP WHAT: the figures of a.json's benchmarks for which the
# Python statement KEEP sets keep (from name), into $scratch/figures; run_all.sh
# must succeed (its output in $scratch/out.txt)
plots_of_part() {
    python3 - "$data/a.json" "$scratch/part.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kept = []
for b in d["benchmarks"]:
    name = b["name"]
    exec(sys.argv[3])
    if keep:
        kept.append(b)
assert kept and len(kept) < len(d["benchmarks"]), "the filter keeps all or nothing"
d["benchmarks"] = kept
json.dump(d, open(sys.argv[2], "w"))
PY
    "$root/run_all.sh" --plots "$scratch/part.json" --out "$scratch/figures" \
        >"$scratch/out.txt" 2>&1 || { cat "$scratch/out.txt"; fail "--plots failed $2"; }
}

case $case in
figures)
    "$root/run_all.sh" --plots "$data/a.json" "$data/b.json" --out "$scratch/figures"
    for f in scaling per_particle doubling speedup breakdown workloads bound machines; do
        check_png "$scratch/figures/$f.png"
        check_svg "$scratch/figures/$f.svg"
    done
    # the machine and date are in every figure's subtitle
    grep -q "2026-" "$scratch/figures/scaling.svg" || fail "scaling.svg has no date in its subtitle"
    ;;
single)
    # one file: the six single-machine figures, no machines figure
    "$root/run_all.sh" --plots "$data/a.json" --out "$scratch/figures"
    for f in scaling per_particle doubling speedup breakdown workloads bound; do
        check_png "$scratch/figures/$f.png"
    done
    [ ! -e "$scratch/figures/machines.png" ] || fail "machines.png drawn from one file"
    ;;
no_uniform)
    # results without uniform (e.g. --workloads settled): the figures that need
    # it are skipped with a message, the others drawn, and the exit status is 0
    plots_of_part 'keep = "/uniform/" not in name' "without uniform"
    grep -q "not drawn.*scaling" "$scratch/out.txt" || fail "no message about the figures not drawn"
    [ ! -e "$scratch/figures/scaling.png" ] || fail "scaling.png drawn without uniform results"
    check_png "$scratch/figures/workloads.png"
    ;;
one_thread_count)
    # results at all threads only (e.g. --threads 2): no speed-up to draw, so
    # that figure is skipped with a message, the others drawn, exit status 0
    plots_of_part 'keep = "/threads:1/" not in name or name.startswith("naive/")' \
        "with one thread count"
    grep -q "not drawn.*speedup" "$scratch/out.txt" || fail "no message about the speedup figure"
    [ ! -e "$scratch/figures/speedup.png" ] || fail "speedup.png drawn without 1-thread results"
    check_png "$scratch/figures/scaling.png"
    ;;
compare)
    # the two fixtures come from different builds: refused, then compared on purpose
    "$root/run_all.sh" --compare "$data/a.json" "$data/b.json" --out "$scratch/refused" \
        >"$scratch/out.txt" 2>&1 && fail "--compare of two builds was not refused"
    [ ! -e "$scratch/refused" ] || fail "a refused --compare left its --out folder"
    "$root/run_all.sh" --compare "$data/a.json" "$data/b.json" --out "$scratch/compare" \
        --allow-different-builds >"$scratch/out.txt" 2>&1 ||
        { cat "$scratch/out.txt"; fail "--compare failed"; }
    grep -q "hash_parallel.*uniform.*1000" "$scratch/compare/compare.txt" ||
        fail "compare.txt has no hash_parallel uniform n=1000 row"
    grep -Eq "equivalent|inconclusive|faster|slower" "$scratch/compare/compare.txt" ||
        fail "compare.txt has no verdict"
    check_png "$scratch/compare/compare.png"
    check_svg "$scratch/compare/compare.svg"
    ;;
paths)
    # any folder name reaches gnuplot intact (a quote, a space), and nothing
    # temporary is left behind
    mkdir -p "$scratch/tmp"
    export TMPDIR="$scratch/tmp"
    out="$scratch/it's a folder"
    "$root/run_all.sh" --plots "$data/a.json" --out "$out" >"$scratch/out.txt" 2>&1 ||
        { cat "$scratch/out.txt"; fail "--plots into a folder named with a quote failed"; }
    check_png "$out/scaling.png"
    [ -z "$(ls -A "$scratch/tmp")" ] || fail "temporary files left: $(ls "$scratch/tmp")"
    [ -z "$(find "$out" -name '.run_all.*')" ] || fail "a drawing folder left in $out"
    # gnuplot failing half-way: the figures there were stay as they were
    (cd "$out" && md5sum ./*) >"$scratch/before.md5"
    mkdir -p "$scratch/bin"
    printf '#!/bin/sh\nexit 1\n' >"$scratch/bin/gnuplot"
    chmod +x "$scratch/bin/gnuplot"
    PATH="$scratch/bin:$PATH" "$root/run_all.sh" --plots "$data/a.json" --out "$out" \
        >"$scratch/out.txt" 2>&1 && fail "--plots with a failing gnuplot succeeded"
    (cd "$out" && md5sum ./*) | cmp -s - "$scratch/before.md5" ||
        fail "a failed --plots changed the figures there were"
    [ -z "$(ls -A "$scratch/tmp")" ] || fail "temporary files left after a failure: $(ls "$scratch/tmp")"
    [ -z "$(find "$out" -name '.run_all.*')" ] || fail "a drawing folder left after a failure"
    # --out naming a file: refused in one line, the file untouched
    echo keep >"$scratch/a_file"
    rc=0
    "$root/run_all.sh" --plots "$data/a.json" --out "$scratch/a_file" >"$scratch/out.txt" 2>&1 || rc=$?
    [ $rc -eq 2 ] || fail "--out naming a file: exit $rc, want 2"
    [ "$(wc -l <"$scratch/out.txt")" -eq 1 ] || fail "--out naming a file: $(cat "$scratch/out.txt")"
    [ "$(cat "$scratch/a_file")" = keep ] || fail "--out naming a file changed it"
    ;;
options)
    # a mistyped sweep option: one line and exit 2, before anything is
    # installed or built (nothing on standard output); --help anywhere is the usage
    rc=0
    "$root/run_all.sh" --quick --bogus >"$scratch/out.txt" 2>"$scratch/err.txt" || rc=$?
    [ $rc -eq 2 ] || fail "--bogus: exit $rc, want 2"
    [ ! -s "$scratch/out.txt" ] || fail "--bogus: it ran something first: $(head -3 "$scratch/out.txt")"
    if [ "$(wc -l <"$scratch/err.txt")" -ne 1 ] || ! grep -q -- "--bogus" "$scratch/err.txt"; then
        fail "--bogus: not one line naming it: $(cat "$scratch/err.txt")"
    fi
    rc=0
    "$root/run_all.sh" --kernels >"$scratch/out.txt" 2>"$scratch/err.txt" || rc=$?
    [ $rc -eq 2 ] && [ ! -s "$scratch/out.txt" ] || fail "--kernels without a value: exit $rc"
    "$root/run_all.sh" --quick --help >"$scratch/out.txt" 2>&1 || fail "--quick --help failed"
    grep -q "^Usage:" "$scratch/out.txt" || fail "--quick --help is not the usage"
    # --ab: no revision, an unknown one, an unknown option, each one line and
    # exit 2 before anything is built
    # and --plots: an unknown figure, no file, two simulations, no animation
    sim=$root/results/reference/sim.tsv
    for args in "--ab" "--ab no-such-revision-here" "--ab HEAD --bogus 1" "--ab HEAD --n" \
        "--plots $sim --figures nope" "--plots" "--plots $sim $sim" "--plots $sim --gif-n 0"; do
        rc=0
        # shellcheck disable=SC2086 # the words of args are the arguments
        "$root/run_all.sh" $args >"$scratch/out.txt" 2>"$scratch/err.txt" || rc=$?
        [ $rc -eq 2 ] || fail "$args: exit $rc, want 2"
        [ ! -s "$scratch/out.txt" ] || fail "$args: it ran something first: $(head -3 "$scratch/out.txt")"
        [ "$(wc -l <"$scratch/err.txt")" -eq 1 ] || fail "$args: not one line: $(cat "$scratch/err.txt")"
    done
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS plots/$case" || { echo "FAIL plots/$case: $fails failures"; exit 1; }
