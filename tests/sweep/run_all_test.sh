#!/usr/bin/env bash
# run_all.sh itself, in a scratch copy of the clone whose build is the real
# one's binaries (a cmake on PATH that does nothing, every package installed):
#   run_all_test.sh ROOT BENCH NSEARCH SCRATCH CASE
# stop_alone: SIGTERM, then SIGKILL, to run_all.sh alone while a process
#   measures: no process of the run is left; --resume completes and finishes it;
# stop_group: SIGINT to run_all.sh's process group (Ctrl-C): one line saying how to
#   continue, no traceback; --resume completes it;
# stop_after_merge: a stop while the figures are drawn: --resume finishes the run
#   (bench.tsv, summary.md, figures, run.json finished) without measuring again;
# full_after_merge: a disk full when the table and summary are written: one line with
#   the file and the space; --resume after freeing space finishes the run;
# one_at_a_time: a second run_all.sh beside a running one is refused in one line (exit 2)
#   naming the holder;
# caller_paths: --plots and --compare read and write the paths the caller gave from
#   where they stand, not inside the clone;
# cpus: the build's -j and --sim's threads are the CPUs the process may run on, not
#   OMP_NUM_THREADS, and the simulation records them.
set -u
ROOT=$1 BENCH=$2 NSEARCH=$3 SCRATCH=$4 CASE=$5
. "$ROOT/harness/python.sh"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" || exit 1
. "$ROOT/tests/sweep/lib.sh"

CLONE=$SCRATCH/clone
mkdir -p "$CLONE/build/release" "$SCRATCH/bin"
cp -r "$ROOT/run_all.sh" "$ROOT/harness" "$ROOT/plots" "$CLONE/"
ln -s "$BENCH" "$CLONE/build/release/nsearch-bench"
ln -s "$NSEARCH" "$CLONE/build/release/nsearch"
printf '#!/bin/sh\necho "cmake (stand-in) $*" >>"%s/cmake.log"\n' "$SCRATCH" >"$SCRATCH/bin/cmake"
printf '#!/bin/sh\necho "install ok installed"\n' >"$SCRATCH/bin/dpkg-query"
chmod +x "$SCRATCH/bin/"*
export PATH="$SCRATCH/bin:$PATH"
set -m # background jobs in process groups of their own, as from a terminal

# 3 configurations in 2 processes per round
SMALL=(--kernels naive,hash_parallel --workloads uniform --max-n 100 --threads 1,2
       --repetitions 2 --rounds 2)

# run_bg LOG ARGS...: run_all.sh in the background, PID its process
run_bg() {
    local log=$1
    shift
    "$CLONE/run_all.sh" "$@" >"$log" 2>&1 &
    PID=$!
}




run_dir() { ls -d "$CLONE"/results/*/2*/ 2>/dev/null | tail -1 | sed 's,/$,,'; }

# check_finished DIR: every stage of the run done, every configuration in both rounds
check_finished() {
    local f
    for f in bench.json bench.tsv summary.md; do
        [ -s "$1/$f" ] || fail "no $f in the finished run"
    done
    compgen -G "$1/figures/*.svg" >/dev/null || fail "no figure in the finished run"
    "$PY" - "$1" <<'PY' || fail "the finished run: see above"
import json, os, sys
from collections import defaultdict
d = sys.argv[1]
run = json.load(open(os.path.join(d, "run.json")))
bad = [] if isinstance(run.get("finished"), str) else [f"run.json finished {run.get('finished')!r}"]
rounds = defaultdict(list)
for b in json.load(open(os.path.join(d, "bench.json")))["benchmarks"]:
    if b.get("run_type") == "iteration":
        rounds[b["run_name"]].append(b["round"])
bad += [f"{n}: rounds {sorted(r)}" for n, r in rounds.items() if sorted(set(r)) != [1, 2]
        or len(r) != 4]
rows = open(os.path.join(d, "bench.tsv")).read().splitlines()
if len(rows) != len(rounds) + 1:
    bad.append(f"bench.tsv has {len(rows) - 1} rows for {len(rounds)} configurations")
for line in bad:
    print("  " + line)
sys.exit(1 if bad else 0)
PY
}

# resume_finishes: ./run_all.sh --resume completes the latest run and finishes it
resume_finishes() {
    "$CLONE/run_all.sh" --resume "${SMALL[@]}" "$@" >"$SCRATCH/resume.log" 2>&1 ||
        { fail "--resume failed: $(tail -2 "$SCRATCH/resume.log")"; return; }
    no_traceback "$SCRATCH/resume.log"
    check_finished "$(run_dir)"
}

case_stop_alone() { # label: survival
    local sig rc
    for sig in TERM KILL; do
        rm -rf "$CLONE/results"
        run_bg "$SCRATCH/log-$sig" "${SMALL[@]}" --min-time 0.3
        wait_for "$CLONE/results/*/2*/parts/r*.log" 20 || fail "$sig: no process started"
        sleep 0.3
        kill -s $sig $PID # run_all.sh alone, not its group
        wait $PID
        rc=$?
        no_orphans "SIG$sig" "$CLONE/"
        no_traceback "$SCRATCH/log-$sig"
        if [ $sig = TERM ]; then
            [ $rc -eq 143 ] || fail "SIGTERM: exit $rc, want 143"
            grep -q "stopped by SIGTERM; the run keeps what it measured: ./run_all.sh --resume continues it" "$SCRATCH/log-$sig" ||
                fail "SIGTERM: $(tail -1 "$SCRATCH/log-$sig")"
        fi
        [ -z "$(find "$(run_dir)" -name '*.tmp')" ] || fail "SIG$sig: temporaries left: $(find "$(run_dir)" -name '*.tmp')"
        resume_finishes --min-time 0.3
    done
}

case_stop_group() { # label: survival
    run_bg "$SCRATCH/log" "${SMALL[@]}" --min-time 0.3
    wait_for "$CLONE/results/*/2*/parts/r*.log" 20 || fail "no process started"
    sleep 0.3
    kill -s INT -- -"$PID" # the whole group, as Ctrl-C does
    wait $PID
    local rc=$?
    [ $rc -eq 130 ] || fail "SIGINT to the group: exit $rc, want 130"
    no_orphans "SIGINT to the group" "$CLONE/"
    no_traceback "$SCRATCH/log"
    local said
    said=$(grep -c "stopped" "$SCRATCH/log")
    [ "$said" -eq 1 ] || fail "$said lines say the run stopped, want 1: $(grep stopped "$SCRATCH/log")"
    grep -q "stopped by SIGINT; the run keeps what it measured: ./run_all.sh --resume continues it" "$SCRATCH/log" ||
        fail "SIGINT: $(tail -1 "$SCRATCH/log")"
    resume_finishes --min-time 0.3
}

case_stop_after_merge() { # label: survival
    # a gnuplot that takes its time, so the stop finds the figures being drawn
    printf '#!/bin/sh\ntouch "%s/drawing"\nsleep 30\n' "$SCRATCH" >"$SCRATCH/bin/gnuplot"
    chmod +x "$SCRATCH/bin/gnuplot"
    run_bg "$SCRATCH/log" "${SMALL[@]}" --min-time 0.001
    wait_for "$SCRATCH/drawing" 60 || fail "the figures were never drawn"
    kill -s TERM $PID
    wait $PID
    local rc=$?
    [ $rc -eq 143 ] || fail "SIGTERM while drawing: exit $rc, want 143"
    no_orphans "SIGTERM while drawing" "$CLONE/"
    no_traceback "$SCRATCH/log"
    grep -q "stopped by SIGTERM; the run in .* is measured, not finished: ./run_all.sh --resume finishes it" \
        "$SCRATCH/log" || fail "SIGTERM while drawing: $(tail -1 "$SCRATCH/log")"
    [ -f "$(run_dir)/bench.json" ] || fail "no bench.json before the figures"
    rm "$SCRATCH/bin/gnuplot"
    resume_finishes --min-time 0.001
    grep -q "measured and merged" "$SCRATCH/resume.log" || fail "the resume measured again"
    grep -q '^\[[0-9]' "$SCRATCH/resume.log" && fail "the resume measured again: $(grep -m1 '^\[[0-9]' "$SCRATCH/resume.log")"
    return 0
}

case_full_after_merge() { # label: survival
    [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null || { echo "no mount namespace here: skipped"; exit 77; }
    "$CLONE/run_all.sh" "${SMALL[@]}" --min-time 0.001 >"$SCRATCH/log" 2>&1 || fail "first run failed"
    local dir
    dir=$(run_dir)
    rm -f "$dir/bench.tsv" "$dir/summary.md"
    "$PY" - "$dir/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["finished"] = None; json.dump(d, open(sys.argv[1], "w"))
PY
    # the results folder on a file system with 8 KB free
    unshare -m bash -c '
        mkdir -p "$1/keep" && cp -a "$2/results/." "$1/keep/"
        mount -t tmpfs -o size=16m tmpfs "$2/results" || exit 77
        cp -a "$1/keep/." "$2/results/"
        avail=$(df -Pk "$2/results" | awk "NR == 2 { print \$4 }")
        head -c $(((avail - 8) * 1024)) /dev/zero >"$2/results/filler"
        shift 2
        "$@"' _ "$SCRATCH" "$CLONE" "$CLONE/run_all.sh" --resume "${SMALL[@]}" --min-time 0.001 \
        >"$SCRATCH/full.log" 2>&1
    local rc=$?
    [ $rc -ne 77 ] || { echo "cannot mount a tmpfs here: skipped"; exit 77; }
    [ $rc -eq 1 ] || fail "a full disk after the merge: exit $rc, want 1"
    no_traceback "$SCRATCH/full.log"
    grep -q "cannot write .*/bench.tsv: the disk is full (.* free there, about .* needed); free some space, then ./run_all.sh --resume finishes the run" \
        "$SCRATCH/full.log" || fail "full after the merge: $(tail -2 "$SCRATCH/full.log")"
    [ ! -e "$dir/bench.tsv" ] && [ -z "$(find "$dir" -name '*.tmp')" ] || fail "a half-written file is left"
    resume_finishes --min-time 0.001
}

case_one_at_a_time() { # label: survival
    run_bg "$SCRATCH/log" "${SMALL[@]}" --min-time 0.3
    local first=$PID
    wait_for "$CLONE/results/*/2*/parts/r*.log" 20 || fail "no process started"
    "$CLONE/run_all.sh" "${SMALL[@]}" --min-time 0.3 >"$SCRATCH/second.log" 2>&1
    local rc=$?
    [ $rc -eq 2 ] || fail "a second run beside the first: exit $rc, want 2"
    [ "$(wc -l <"$SCRATCH/second.log")" -eq 1 ] || fail "the refusal is not one line: $(cat "$SCRATCH/second.log")"
    grep -q "another run_all.sh is working in this clone (pid $first, since .*: ./run_all.sh --kernels" \
        "$SCRATCH/second.log" || fail "the refusal: $(cat "$SCRATCH/second.log")"
    "$CLONE/run_all.sh" --resume "${SMALL[@]}" --min-time 0.3 >"$SCRATCH/third.log" 2>&1
    [ $? -eq 2 ] || fail "a --resume beside the running run was not refused"
    wait $first || fail "the first run failed beside the refused ones: $(tail -1 "$SCRATCH/log")"
    [ "$(ls -d "$CLONE"/results/*/2*/ | wc -l)" -eq 1 ] || fail "more than one run folder"
}

case_caller_paths() { # label: survival
    # the clone holds a damaged file of the name the caller gives: it must not be read
    mkdir -p "$CLONE/rel" "$SCRATCH/here/rel"
    echo '{"benchmarks": "damaged"}' >"$CLONE/rel/a.json"
    cp "$ROOT/tests/plots/a.json" "$SCRATCH/here/rel/a.json"
    cp "$ROOT/tests/plots/b.json" "$SCRATCH/here/rel/b.json"
    (cd "$SCRATCH/here" && "$CLONE/run_all.sh" --plots rel/a.json --out figs) >"$SCRATCH/log" 2>&1 ||
        fail "--plots from another folder: $(tail -1 "$SCRATCH/log")"
    [ -s "$SCRATCH/here/figs/scaling.png" ] || fail "--plots --out figs: no figure in the caller's folder"
    [ ! -e "$CLONE/figs" ] || fail "--plots --out figs wrote inside the clone"
    (cd "$SCRATCH/here" && "$CLONE/run_all.sh" --compare rel/a.json rel/b.json --out cmp \
        --allow-different-builds) >"$SCRATCH/log2" 2>&1 || fail "--compare from another folder: $(tail -1 "$SCRATCH/log2")"
    [ -s "$SCRATCH/here/cmp/compare.txt" ] || fail "--compare --out cmp: nothing in the caller's folder"
    (cd "$SCRATCH/here" && "$CLONE/run_all.sh" --plots rel/none.json) >"$SCRATCH/log3" 2>&1
    [ $? -eq 2 ] && grep -q "no such results file: rel/none.json" "$SCRATCH/log3" ||
        fail "a missing file: $(cat "$SCRATCH/log3")"
}

case_cpus() { # label: survival
    local cpus
    cpus=$(env -u OMP_NUM_THREADS nproc)
    OMP_NUM_THREADS=1000 "$CLONE/run_all.sh" --sim --kernels grid_sorted --max-n 100 --runs 1 --gif-n 0 \
        >"$SCRATCH/log" 2>&1 || fail "--sim failed: $(tail -2 "$SCRATCH/log")"
    grep -q "building (-j $cpus)" "$SCRATCH/log" || fail "the build's -j: $(grep building "$SCRATCH/log")"
    grep -q -- "--build --preset release -j $cpus" "$SCRATCH/cmake.log" || fail "cmake was given $(cat "$SCRATCH/cmake.log")"
    local run
    run=$(ls "$CLONE"/results/*/*-sim/sim_run.json 2>/dev/null | tail -1)
    [ -n "$run" ] && "$PY" -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['threads'] != int(sys.argv[2]))" \
        "$run" "$cpus" || fail "sim_run.json threads: $(grep threads "$run" 2>/dev/null), want $cpus"
    awk -F'\t' -v want="$cpus" 'NR > 1 && $2 != want { bad = 1 } END { exit bad }' "$(dirname "$run")/sim.tsv" ||
        fail "sim.tsv's threads are not $cpus"
}

# tool_errors: the error paths of run_all.sh and of every script it runs (bad options,
#   missing, damaged and unwritable files, a stop signal as they start) end in one
#   line and a documented status, never in a Python traceback.
case_tool_errors() { # label: survival
    local h=$CLONE/harness d=$SCRATCH/data out=$SCRATCH/tools.log
    mkdir -p "$d" "$SCRATCH/ro"
    printf '{"benchmarks": [' >"$d/truncated.json"
    echo '[]' >"$d/list.json"
    printf 'kernel\tn\nx\ty\n' >"$d/bad.tsv"
    printf '\xff\xfe' >"$d/binary.json"
    cp "$ROOT/tests/plots/a.json" "$d/a.json"
    : >"$out"
    local -a calls=(
        "$PY $h/results.py"
        "$PY $h/results.py nonsense $d/a.json"
        "$PY $h/results.py summary $d/missing.json"
        "$PY $h/results.py summary $d/truncated.json"
        "$PY $h/results.py flatten $d/list.json"
        "$PY $h/results.py flatten $d/binary.json"
        "$PY $h/results.py report $d/nowhere"
        "$PY $h/results.py plotdata $d/a.json --out /proc/nowhere"
        "$PY $h/compare.py $d/a.json"
        "$PY $h/compare.py $d/a.json $d/truncated.json --out $d/cmp"
        "$PY $h/compare.py $d/a.json $d/a.json --out /proc/nowhere"
        "$PY $h/sim_results.py summary $d/bad.tsv"
        "$PY $h/sim_results.py summary $d/missing.tsv"
        "$PY $h/sim_results.py data $d/bad.tsv --out $d/simdata"
        "$PY $h/sweep.py"
        "$PY $h/sweep.py --bench /nonexistent --results $d/runs"
        "$PY $h/sweep.py --bench $BENCH --results $d/runs --rounds x"
        "$PY $h/sweep.py --bench $BENCH --results $d/runs --resume"
        "$PY $h/sweep.py --bench $BENCH --results /proc/nowhere --max-n 100 --kernels naive"
        "$PY $h/sweep.py --finish $d/nowhere"
        "$PY $h/sweep.py --finish $d"
        "$PY $h/sim_sweep.py --tool /nonexistent --out $d/sim.tsv --max-n 100"
        "$PY $h/ab.py --summary $d/truncated.json"
        "$CLONE/run_all.sh --plots $d/truncated.json --out $d/figs"
        "$CLONE/run_all.sh --compare $d/a.json $d/list.json --out $d/cmp2"
        "$CLONE/run_all.sh --resume --kernels naive --max-n 100"
        "$CLONE/run_all.sh --bogus"
    )
    local call rc
    for call in "${calls[@]}"; do
        $call >"$SCRATCH/one.log" 2>&1
        rc=$?
        { echo "== $call (exit $rc)"; cat "$SCRATCH/one.log"; } >>"$out"
        case $rc in 1|2) ;; *) fail "$call: exit $rc, want 1 or 2: $(tail -1 "$SCRATCH/one.log")" ;; esac
        grep -q Traceback "$SCRATCH/one.log" && fail "$call: a traceback: $(grep -m1 -A4 Traceback "$SCRATCH/one.log")"
    done
    # a stop signal while each script loads its modules (from the moment its
    # handlers are set: program.py loads ctypes next; before, while the interpreter
    # itself starts, SIGINT is Python's own) or works
    local script sig delay k
    for script in results.py compare.py sim_results.py sweep.py sim_sweep.py ab.py; do
        for sig in INT TERM; do
            for delay in 0 0.3; do
                "$PY" "$h/$script" summary "$d/a.json" "$d/a.json" --out "$d/x" >"$SCRATCH/one.log" 2>&1 &
                local pid=$!
                for ((k = 0; k < 200; k++)); do
                    grep -qs _ctypes "/proc/$pid/maps" || ! kill -0 $pid 2>/dev/null && break
                    sleep 0.01
                done
                sleep $delay
                kill -s $sig $pid 2>/dev/null
                { wait $pid; } 2>/dev/null
                grep -q Traceback "$SCRATCH/one.log" &&
                    fail "$script after SIG$sig at +$delay s: $(grep -m1 -A4 Traceback "$SCRATCH/one.log")"
            done
        done
    done
    echo "  $(grep -c '^==' "$out") calls; their output in $out"
}

"case_$CASE"
[ "$FAILS" -eq 0 ] && echo "$CASE: passed" && exit 0
echo "$CASE: $FAILS check(s) failed"
exit 1
