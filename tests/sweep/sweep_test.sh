#!/usr/bin/env bash
# harness/sweep.py with the real nsearch-bench on tiny configurations:
#   sweep_test.sh ROOT BENCH SCRATCH CASE
# rounds: every configuration measured in every round, each round in its own
#   process per (workload, n, threads), parts and contexts tagged, 1-thread
#   processes apart from the all-core ones; the naive reference of a (workload, n)
#   found by one process and read by the others, its folder gone after the merge;
#   each progress line gives the process's median in ms with its interval;
# resume: an interrupted run continues where it stopped and measures nothing twice;
# resume_refused: a run made on another CPU model, at another commit or with other
#   options is not continued (exit 2, the field named); an option nsearch-bench
#   refuses leaves no run folder, so the interrupted run is still the one resumed;
# wait_policy: OMP_WAIT_POLICY per process as --wait-policy says (auto: passive
#   for 1 thread, active for more; default: unset), recorded in each context;
# quick: --quick measures the peers on uniform at n = 1,000 and 10,000 alone, the
#   suite's kernels everywhere (nsearch-bench's --peer-workloads, --peer-sizes);
# machine_label: the results folder's name from the CPU model (with its family and model where
#   the name has no model number), vector ISA and logical CPUs.
set -u
ROOT=$1 BENCH=$2 SCRATCH=$3 CASE=$4
. "$ROOT/harness/python.sh"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" || exit 1
. "$ROOT/tests/sweep/lib.sh"

SMALL=(--kernels naive,hash_parallel --workloads uniform,sheet --max-n 200 --threads 1,2
       --repetitions 2 --min-time 0.001)
# fewer processes (2 a round), each of a second or so: a signal finds one measuring
FEW=(--workloads uniform --max-n 100 --rounds 2 --min-time 0.3)

sweep() { "$PY" "$ROOT/harness/sweep.py" --bench "$BENCH" --results "$SCRATCH/runs" "${SMALL[@]}" "$@"; }
# sweep_bg ARGS...: the same in the background, PID its process (not a subshell's)
sweep_bg() {
    "$PY" "$ROOT/harness/sweep.py" --bench "$BENCH" --results "$SCRATCH/runs" "${SMALL[@]}" "$@" &
    PID=$!
}

# check_merged FILE ROUNDS: every configuration has repetitions in every round,
# each part holds one thread count, contexts are kept per part.
check_merged() {
    "$PY" - "$1" "$2" <<'PY' || fail "merged results: see above"
import json, sys
from collections import defaultdict
data = json.load(open(sys.argv[1]))
rounds = int(sys.argv[2])
bad = []
reps = defaultdict(set)
threads_of_part = defaultdict(set)
for b in data["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    name = b["run_name"].removesuffix("/manual_time")
    reps[name].add(b["round"])
    threads_of_part[b["part"]].add(name.split("threads:")[1])
for name, rs in reps.items():
    if rs != set(range(1, rounds + 1)):
        bad.append(f"{name}: rounds {sorted(rs)}")
for part, ts in threads_of_part.items():
    if len(ts) != 1:
        bad.append(f"part {part} mixes thread counts {sorted(ts)}")
if data["context"].get("rounds") != rounds:
    bad.append(f"context rounds {data['context'].get('rounds')}")
parts = {c["part"] for c in data["contexts"]}
if parts != set(threads_of_part):
    bad.append("a part without its context")
if not reps:
    bad.append("no repetitions")
# every process timed the witness on each of its threads
for c in data["contexts"]:
    ts = threads_of_part.get(c["part"], {"?"})
    times = str(c.get("witness_ms", "")).split()
    try:
        ok = len(times) == int(next(iter(ts))) and all(float(x) > 0 for x in times)
    except ValueError:
        ok = False
    if not ok or not c.get("witness", "").startswith("v1:"):
        bad.append(f"part {c['part']} ({sorted(ts)} threads): witness {c.get('witness')!r}, "
                   f"witness_ms {c.get('witness_ms')!r}")
# every repetition probed memory after its timed loop
unprobed = [b["name"] for b in data["benchmarks"] if b.get("run_type") == "iteration"
            and not (isinstance(b.get("mem_probe_ms"), (int, float)) and b["mem_probe_ms"] > 0)]
if unprobed:
    bad.append(f"{len(unprobed)} repetitions without a memory probe, e.g. {unprobed[0]}")
bad += [f"part {c['part']}: mem_probe {c.get('mem_probe')!r}" for c in data["contexts"]
        if not str(c.get("mem_probe", "")).startswith("v1:")]
# every process names its code paths' own compile options
bad += [f"part {c['part']}: path_flags {c.get('path_flags')!r}" for c in data["contexts"]
        if "generic:" not in str(c.get("path_flags", "")) and "native:" not in str(c.get("path_flags", ""))]
for line in bad:
    print("  " + line)
sys.exit(1 if bad else 0)
PY
}

case_rounds() {
    sweep --rounds 3 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 || { fail "sweep exit $?"; tail -5 "$SCRATCH/log"; }
    local dir
    dir=$(cat "$SCRATCH/dir")
    check_merged "$dir/bench.json" 3
    # the rounds run their groups in different orders
    local orders
    orders=$(grep -o '^\[[0-9]*/[0-9]*\] [^ ]*' "$SCRATCH/log" | awk '{ print $2 }' | awk -v per="$(($(grep -c '^\[' "$SCRATCH/log") / 3))" '
        { o[int((NR - 1) / per)] = o[int((NR - 1) / per)] " " $1 } END { for (r in o) print o[r] }' | sort -u | wc -l)
    [ "$orders" -gt 1 ] || fail "every round ran its processes in the same order"
    # 3 rounds x 2 thread counts per (workload, n): the first process computes
    # each reference, the other five read it (uniform 100 and 200, sheet 200)
    local found read
    read=$(cat "$dir"/parts/*.log | grep -c 'read from')
    found=$(cat "$dir"/parts/*.log | grep 'contacts by naive' | grep -vc 'read from')
    [ "$found" -eq 3 ] || fail "$found naive references computed, expected 3 (one per workload and n)"
    [ "$read" -eq 15 ] || fail "$read naive references read, expected 15"
    [ ! -e "$dir/reference" ] || fail "the reference folder outlived the run"
    # each progress line: the process's median in ms with its 95 % interval
    local figure='\.\.\. [0-9.e+-]+ \[[0-9.e+-]+, [0-9.e+-]+\] ms \(elapsed' bare
    bare=$(grep '^\[' "$SCRATCH/log" | grep -Ev "$figure")
    [ -z "$bare" ] || fail "progress lines without a median [low, high] in ms, e.g. ${bare%%$'\n'*}"
}

case_resume() {
    sweep --rounds 2 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 || fail "first sweep failed"
    local dir
    dir=$(cat "$SCRATCH/dir")
    # interrupt: drop the merged file and the last two parts
    rm -f "$dir/bench.json"
    local gone
    gone=$(ls "$dir"/parts/*.json | tail -2)
    rm -f $gone
    local before
    before=$(ls "$dir"/parts/*.json | wc -l)
    sweep --rounds 2 --resume --dir-file "$SCRATCH/dir2" >"$SCRATCH/log2" 2>&1 || { fail "resume failed"; tail -5 "$SCRATCH/log2"; }
    [ "$(cat "$SCRATCH/dir2")" = "$dir" ] || fail "resume wrote another folder"
    local ran
    ran=$(grep -c '^\[' "$SCRATCH/log2")
    local measured
    measured=$(grep -c 'ms (elapsed' "$SCRATCH/log2")
    [ "$(ls "$dir"/parts/*.json | wc -l)" -eq $((before + 2)) ] || fail "resume did not make exactly the two missing parts"
    grep -q "resuming" "$SCRATCH/log2" || fail "resume did not say so"
    check_merged "$dir/bench.json" 2
    echo "  resumed: $ran progress lines"
}

case_resume_refused() {
    sweep --rounds 2 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 || fail "first sweep failed"
    local dir
    dir=$(cat "$SCRATCH/dir")
    rm -f "$dir/bench.json"
    cp "$dir/run.json" "$SCRATCH/run.json"
    local field value rc
    for field in cpu_model commit; do
        "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); d[sys.argv[2]]='another'; json.dump(d, open(sys.argv[3], 'w'))" \
            "$SCRATCH/run.json" "$field" "$dir/run.json"
        sweep --rounds 2 --resume >"$SCRATCH/log2" 2>&1
        rc=$?
        [ "$rc" -eq 2 ] || fail "resume of a run with another $field: exit $rc, want 2"
        grep -qi "${field/_/ }" "$SCRATCH/log2" || fail "the refusal does not name the $field: $(tail -1 "$SCRATCH/log2")"
    done
    cp "$SCRATCH/run.json" "$dir/run.json"
    sweep --rounds 3 --resume >"$SCRATCH/log2" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "resume with other options: exit $rc, want 2"
    grep -q "options" "$SCRATCH/log2" || fail "the refusal does not name the options"
    sweep --rounds 0 >"$SCRATCH/log3" 2>&1
    [ $? -eq 2 ] || fail "--rounds 0 is not a usage error"
    # an option nsearch-bench refuses leaves no run folder: the interrupted
    # run above is still the one --resume continues
    local runs_before
    runs_before=$(ls "$SCRATCH/runs" | wc -l)
    "$PY" "$ROOT/harness/sweep.py" --bench "$BENCH" --results "$SCRATCH/runs" --kernels grid_sortd \
        --max-n 200 >"$SCRATCH/log4" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "an unknown kernel: exit $rc, want 2"
    [ "$(ls "$SCRATCH/runs" | wc -l)" -eq "$runs_before" ] || fail "a refused option left a run folder"
    sweep --rounds 2 --resume --dir-file "$SCRATCH/dir5" >"$SCRATCH/log5" 2>&1 ||
        fail "resume after a refused option failed: $(tail -1 "$SCRATCH/log5")"
    [ "$(cat "$SCRATCH/dir5" 2>/dev/null)" = "$dir" ] || fail "resume after a refused option took another folder"
}

# check_policy FILE T=POLICY...: the OMP_WAIT_POLICY of every part with T threads
check_policy() {
    "$PY" - "$@" <<'PY' || fail "wait policies: see above"
import json, sys
data = json.load(open(sys.argv[1]))
want = dict(a.split("=") for a in sys.argv[2:])
bad = []
for c in data["contexts"]:
    t = c["part"].rsplit("-t", 1)[1]
    if c.get("OMP_WAIT_POLICY") != want[t]:
        bad.append(f"part {c['part']}: OMP_WAIT_POLICY {c.get('OMP_WAIT_POLICY')!r}, want {want[t]!r}")
for line in bad:
    print("  " + line)
sys.exit(1 if bad else 0)
PY
}

case_wait_policy() {
    local policy
    for policy in auto passive active default; do
        sweep --rounds 1 --workloads uniform --max-n 100 --wait-policy "$policy" \
            --dir-file "$SCRATCH/dir" >"$SCRATCH/log-$policy" 2>&1 || { fail "sweep --wait-policy $policy failed"; continue; }
        case $policy in
            auto) check_policy "$(cat "$SCRATCH/dir")/bench.json" 1=passive 2=active ;;
            default) check_policy "$(cat "$SCRATCH/dir")/bench.json" 1=unset 2=unset ;;
            *) check_policy "$(cat "$SCRATCH/dir")/bench.json" 1=$policy 2=$policy ;;
        esac
        sleep 1 # the next run's folder, named by the second, must differ
    done
    sweep --wait-policy sometimes >"$SCRATCH/log-bad" 2>&1
    [ $? -eq 2 ] || fail "--wait-policy sometimes is not a usage error"
}

case_quick() {
    local peer
    peer=$("$BENCH" --kernels nanoflann_kdtree,boost_rtree,cgal_box_intersection --max-n 100 \
        --workloads uniform --threads 1 --benchmark_list_tests 2>/dev/null | head -1 | cut -d/ -f1)
    [ -n "$peer" ] || { echo "  no peer built in: skipped"; exit 77; }
    sweep --quick --kernels "naive,$peer" --workloads uniform,sheet --max-n 1000 --threads 1 \
        --min-time 0.001 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 || { fail "sweep --quick failed"; tail -5 "$SCRATCH/log"; return; }
    "$PY" - "$(cat "$SCRATCH/dir")/bench.json" "$peer" <<'PY' || fail "--quick measured the wrong configurations"
import json, sys
peer = sys.argv[2]
names = {b["run_name"].removesuffix("/manual_time") for b in json.load(open(sys.argv[1]))["benchmarks"]}
peers = sorted(x for x in names if x.startswith(peer + "/"))
naive = sorted(x for x in names if x.startswith("naive/"))
want = [f"{peer}/uniform/n:1000/threads:1"]
if peers != want or not {"naive/sheet/n:1000/threads:1", "naive/uniform/n:100/threads:1"} <= set(naive):
    print(f"  peers {peers} (want {want}); naive {naive}")
    sys.exit(1)
PY
    "$BENCH" --peer-sizes 1000,,10 --benchmark_list_tests >/dev/null 2>"$SCRATCH/err"
    [ $? -eq 2 ] && grep -q -- "--peer-sizes" "$SCRATCH/err" || fail "--peer-sizes 1000,,10 is not refused in one line"
    "$BENCH" --peer-workloads nowhere --benchmark_list_tests >/dev/null 2>"$SCRATCH/err"
    [ $? -eq 2 ] && grep -q "unknown workload 'nowhere' in --peer-workloads" "$SCRATCH/err" ||
        fail "--peer-workloads nowhere: $(cat "$SCRATCH/err")"
}

case_machine_label() {
    local label
    label=$("$PY" "$ROOT/harness/sweep.py" --machine-label) || fail "--machine-label failed"
    [[ $label =~ ^[a-z0-9]+(-[a-z0-9]+)*-[0-9]+cpu$ ]] || fail "machine label '$label'"
    (cd "$ROOT/harness" && "$PY" - <<'PY') || fail "the identity a resume checks lacks the CPU's family and vector ISA"
import sweep
info = {"model name": "AMD EPYC", "cpu family": "25", "model": "1", "stepping": "1", "flags": "fpu avx2 fma"}
zen4 = dict(info, model="17", flags="fpu avx2 avx512f")
a, b = sweep.cpu_identity(info), sweep.cpu_identity(zen4)
raise SystemExit(0 if a != b and "avx2" in a and "avx512" in b and "family 25" in a else 1)
PY
    (cd "$ROOT/harness" && "$PY" - <<'PY') || fail "machine labels: see above"
import sweep
cases = {("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 2, "avx512"): "intel-xeon-platinum-8375c-avx512-2cpu",
         ("AMD EPYC 9R14 96-Core Processor", 4, "avx512"): "amd-epyc-9r14-avx512-4cpu",
         ("AMD EPYC", 2, "avx512"): "amd-epyc-avx512-2cpu",
         ("AMD EPYC", 2, "avx2"): "amd-epyc-avx2-2cpu",
         ("AMD EPYC", 2, "avx512", "family26-model2"): "amd-epyc-family26-model2-avx512-2cpu",
         ("AMD EPYC", 2, "avx512", "family25-model17"): "amd-epyc-family25-model17-avx512-2cpu",
         ("Intel(R) Xeon(R) Processor", 2, "avx512", "family6-model167"):
             "intel-xeon-family6-model167-avx512-2cpu",
         ("AMD EPYC 9R14 96-Core Processor", 4, "avx512", "family25-model17"): "amd-epyc-9r14-avx512-4cpu",
         ("Neoverse-N1", 8, "neon"): "neoverse-n1-neon-8cpu",
         ("", 1, ""): "unknown-1cpu"}
bad = [(k, sweep.machine_label(*k), v) for k, v in cases.items() if sweep.machine_label(*k) != v]
for k, got, want in bad:
    print(f"  {k}: {got!r}, want {want!r}")
generations = [sweep.cpu_generation({"cpu family": "26", "model": "2"}),
               sweep.cpu_generation({"CPU implementer": "0x41", "CPU part": "0xd0c"})]
if generations != ["family26-model2", ""]:
    print(f"  cpu_generation: {generations}")
    bad.append(generations)
raise SystemExit(1 if bad else 0)
PY
}

# A stand-in for nsearch-bench that runs it, then, on the processes MODE picks,
# cuts its results file in half and dies by SIGKILL, as a crash or the OOM
# killer would leave it: fake_bench FILE MODE, MODE 'once' (the first timed
# process only) or 'sheet' (every process of the sheet workload).
fake_bench() {
    cat >"$1" <<FAKE
#!/usr/bin/env bash
out=""
for arg; do case \$arg in --benchmark_out=*) out=\${arg#--benchmark_out=} ;; esac; done
"$BENCH" "\$@"
rc=\$?
[ -n "\$out" ] || exit \$rc
case $2 in
    once) [ -e "$SCRATCH/crashed" ] && exit \$rc; touch "$SCRATCH/crashed" ;;
    sheet) case "\$*" in *"/sheet/"*) ;; *) exit \$rc ;; esac ;;
esac
head -c \$((\$(stat -c %s "\$out") / 2)) "\$out" >"\$out.cut" && mv "\$out.cut" "\$out"
kill -KILL \$\$
FAKE
    chmod +x "$1"
}


case_crashed_part() { # label: survival
    fake_bench "$SCRATCH/once" once
    BENCH="$SCRATCH/once" sweep --rounds 2 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 ||
        fail "a sweep with one crashed process failed: $(tail -2 "$SCRATCH/log")"
    no_traceback "$SCRATCH/log"
    grep -q "was killed by SIGKILL; measured again at the end" "$SCRATCH/log" ||
        fail "the crashed process is not named: $(grep -m1 killed "$SCRATCH/log")"
    grep -q "measuring again the 1 process" "$SCRATCH/log" || fail "no second attempt"
    [ -f "$(cat "$SCRATCH/dir" 2>/dev/null)/bench.json" ] && check_merged "$(cat "$SCRATCH/dir")/bench.json" 2
    # a process that dies every time: the run stops resumable, each failed part in a line
    fake_bench "$SCRATCH/sheet" sheet
    rm -f "$SCRATCH/dir"
    BENCH="$SCRATCH/sheet" sweep --rounds 2 --dir-file "$SCRATCH/dir" >"$SCRATCH/log2" 2>&1
    local rc=$?
    [ $rc -eq 1 ] || fail "a sweep whose sheet processes always crash: exit $rc, want 1"
    no_traceback "$SCRATCH/log2"
    [ ! -e "$SCRATCH/dir" ] || fail "a run with parts missing gave a run folder to finish"
    local lost
    lost=$(grep -c "its part was discarded" "$SCRATCH/log2")
    [ "$lost" -eq 4 ] || fail "$lost discarded parts named, want 4 (sheet n=200 x 2 threads x 2 rounds)"
    grep -q "did not complete, twice: ./run_all.sh --resume measures them again" "$SCRATCH/log2" ||
        fail "no line saying how to continue: $(tail -1 "$SCRATCH/log2")"
    local dir
    dir=$(ls -d "$SCRATCH"/runs/*/ | tail -1)
    dir=${dir%/}
    [ -z "$(ls "$dir"/parts/ | grep -v -e '\.json$' -e '\.log$')" ] || fail "leftovers in parts/: $(ls "$dir"/parts)"
    sweep --rounds 2 --resume --dir-file "$SCRATCH/dir" >"$SCRATCH/log3" 2>&1 ||
        fail "resume after the crashes failed: $(tail -2 "$SCRATCH/log3")"
    local again
    again=$(grep -c '^\[' "$SCRATCH/log3")
    # the lost parts' configurations: naive and hash_parallel with 1 thread, hash_parallel with 2
    [ "$again" -eq 6 ] || fail "resume measured $again configurations, want the 6 of the lost parts"
    check_merged "$dir/bench.json" 2
}

case_damaged_run_json() { # label: survival
    sweep --rounds 1 --dir-file "$SCRATCH/dir" >"$SCRATCH/log" 2>&1 || fail "first sweep failed"
    local dir rc what
    dir=$(cat "$SCRATCH/dir")
    rm -f "$dir/bench.json"
    cp "$dir/run.json" "$SCRATCH/run.json"
    [ -z "$(ls -A "$dir" | grep tmp)" ] || fail "a temporary beside run.json"
    for what in truncated list options_string empty; do
        case $what in
            truncated) head -c 40 "$SCRATCH/run.json" >"$dir/run.json" ;;
            list) echo '[1, 2]' >"$dir/run.json" ;;
            options_string) sed 's/"options": {/"options": "x", "o": {/' "$SCRATCH/run.json" >"$dir/run.json" ;;
            empty) : >"$dir/run.json" ;;
        esac
        sweep --rounds 1 --resume >"$SCRATCH/log-$what" 2>&1
        rc=$?
        [ $rc -eq 2 ] || fail "resume of a $what run.json: exit $rc, want 2"
        no_traceback "$SCRATCH/log-$what"
        [ "$(wc -l <"$SCRATCH/log-$what")" -eq 1 ] ||
            fail "resume of a $what run.json: $(wc -l <"$SCRATCH/log-$what") lines, want 1"
        grep -q "run.json.*move it aside" "$SCRATCH/log-$what" || fail "$what: $(cat "$SCRATCH/log-$what")"
    done
}



case_interrupted() { # label: survival
    local sig rc dir pid
    set -m # background jobs in groups of their own, SIGINT not ignored (as from a terminal)
    for sig in INT TERM; do
        rm -rf "$SCRATCH/runs" "$SCRATCH/dir"
        # processes of a second or more, so the signal finds one measuring
        sweep_bg "${FEW[@]}" --dir-file "$SCRATCH/dir" >"$SCRATCH/log-$sig" 2>&1
        pid=$PID
        wait_for "$SCRATCH/runs/*/parts/r*.log" 20 || fail "$sig: no process started"
        sleep 0.3
        kill -s $sig $pid
        wait $pid
        rc=$?
        case $sig in INT) [ $rc -eq 130 ] ;; TERM) [ $rc -eq 143 ] ;; esac || fail "SIG$sig: exit $rc"
        no_traceback "$SCRATCH/log-$sig"
        grep -q "stopped by SIG$sig: the [0-9]* processes measured are kept in .*; ./run_all.sh --resume continues the run" \
            "$SCRATCH/log-$sig" || fail "SIG$sig: $(tail -1 "$SCRATCH/log-$sig")"
        no_orphans "SIG$sig" "$SCRATCH/"
        dir=$(ls -d "$SCRATCH"/runs/*/ | tail -1)
        dir=${dir%/}
        [ -z "$(find "$dir" -name '*.tmp')" ] || fail "SIG$sig: temporaries left: $(find "$dir" -name '*.tmp')"
        sweep "${FEW[@]}" --resume --dir-file "$SCRATCH/dir" >"$SCRATCH/log2-$sig" 2>&1 ||
            fail "SIG$sig: resume failed: $(tail -1 "$SCRATCH/log2-$sig")"
        check_merged "$dir/bench.json" 2
    done
    # merged, not finished: --resume goes on after the merge; finished: not resumed
    sweep "${FEW[@]}" --resume --dir-file "$SCRATCH/dir2" >"$SCRATCH/log3" 2>&1 ||
        fail "resume of a merged run failed: $(tail -1 "$SCRATCH/log3")"
    grep -q "measured and merged" "$SCRATCH/log3" || fail "merged run: $(tail -1 "$SCRATCH/log3")"
    [ "$(cat "$SCRATCH/dir2")" = "$(cat "$SCRATCH/dir")" ] || fail "merged run: another folder"
    "$PY" "$ROOT/harness/sweep.py" --finish "$(cat "$SCRATCH/dir")" || fail "--finish failed"
    sweep "${FEW[@]}" --resume >"$SCRATCH/log4" 2>&1
    rc=$?
    { [ $rc -eq 2 ] && grep -q "no unfinished run" "$SCRATCH/log4"; } || fail "a finished run was resumed (exit $rc)"
}

case_two_runs() { # label: survival
    sweep --rounds 1 --workloads uniform --max-n 100 --dir-file "$SCRATCH/d1" >"$SCRATCH/log1" 2>&1 &
    local p1=$!
    sweep --rounds 1 --workloads uniform --max-n 100 --dir-file "$SCRATCH/d2" >"$SCRATCH/log2" 2>&1 &
    local p2=$!
    wait $p1 || fail "first of two runs failed: $(tail -1 "$SCRATCH/log1")"
    wait $p2 || fail "second of two runs failed: $(tail -1 "$SCRATCH/log2")"
    [ "$(cat "$SCRATCH/d1")" != "$(cat "$SCRATCH/d2")" ] || fail "two runs in one folder"
    [ "$(ls "$SCRATCH/runs" | wc -l)" -eq 2 ] || fail "$(ls "$SCRATCH/runs" | wc -l) run folders"
    # a run being measured is not taken over by --resume
    rm -rf "$SCRATCH/runs"
    sweep "${FEW[@]}" >"$SCRATCH/log3" 2>&1 &
    local p3=$!
    wait_for "$SCRATCH/runs/*/parts/r*.log" 20 || fail "no process started"
    sweep "${FEW[@]}" --resume >"$SCRATCH/log4" 2>&1
    local rc=$?
    [ $rc -eq 2 ] || fail "resume of a run being measured: exit $rc, want 2"
    grep -q "is being measured now (pid [0-9]*); wait for it to end" "$SCRATCH/log4" ||
        fail "the refusal: $(cat "$SCRATCH/log4")"
    wait $p3 || fail "the run measured beside a refused resume failed"
}

# disk_sweep FREE_KB LOG [SWEEP OPTIONS]: the sweep into SCRATCH/keep/r, run in
# a mount namespace of its own where it is a small file system filled to leave
# FREE_KB (the folder copied in before and out after). Exit 77: no tmpfs here.
disk_sweep() {
    local free=$1 log=$2
    shift 2
    mkdir -p "$SCRATCH/keep" "$SCRATCH/fs"
    unshare -m bash -c '
        s=$1 free=$2
        shift 2
        mount -t tmpfs -o size=16m tmpfs "$s/fs" || exit 77
        cp -a "$s/keep/." "$s/fs/"
        avail=$(df -Pk "$s/fs" | awk "NR == 2 { print \$4 }")
        [ "$avail" -le "$free" ] || head -c $(((avail - free) * 1024)) /dev/zero >"$s/fs/filler"
        "$@"
        rc=$?
        rm -f "$s/fs/filler"
        rm -rf "$s/keep" && cp -a "$s/fs/." "$s/keep/"
        exit $rc' _ "$SCRATCH" "$free" "$PY" "$ROOT/harness/sweep.py" --bench "$BENCH" \
        --results "$SCRATCH/fs/r" "${SMALL[@]}" "$@" >"$log" 2>&1
}

case_disk_full() { # label: survival
    [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null || { echo "no mount namespace here: skipped"; exit 77; }
    local rc
    # full at the start: before the first part
    disk_sweep 20 "$SCRATCH/log1" --rounds 1
    rc=$?
    [ $rc -ne 77 ] || { echo "cannot mount a tmpfs here: skipped"; exit 77; }
    [ $rc -eq 1 ] || fail "a full disk at the start: exit $rc, want 1"
    no_traceback "$SCRATCH/log1"
    grep -q "cannot write .*/parts/r1-g[0-9]*-t[12].json: the disk is full (.* free there, about .* needed); free some space, then ./run_all.sh --resume continues the run" \
        "$SCRATCH/log1" || fail "full at the start: $(tail -2 "$SCRATCH/log1")"
    # freed: --resume completes it
    disk_sweep 14000 "$SCRATCH/log2" --rounds 1 --resume --dir-file "$SCRATCH/dir" ||
        fail "resume after freeing space failed: $(tail -1 "$SCRATCH/log2")"
    local run
    run=$SCRATCH/keep/r/$(basename "$(cat "$SCRATCH/dir")")
    [ -f "$run/bench.json" ] || fail "no bench.json after the resume"
    # full at the merge: every part measured, no room for bench.json
    local merged_kb
    merged_kb=$(du -k "$run/bench.json" | cut -f1)
    rm -f "$run/bench.json"
    disk_sweep $((merged_kb / 2)) "$SCRATCH/log3" --rounds 1 --resume
    rc=$?
    [ $rc -eq 1 ] || fail "a full disk at the merge: exit $rc, want 1 ($(tail -1 "$SCRATCH/log3"))"
    no_traceback "$SCRATCH/log3"
    grep -q "cannot write .*bench.json: the disk is full (.* free there, about .* needed); free some space, then ./run_all.sh --resume merges the run" \
        "$SCRATCH/log3" || fail "full at the merge: $(tail -2 "$SCRATCH/log3")"
    [ ! -e "$run/bench.json" ] && [ -z "$(find "$run" -name '*.tmp')" ] || fail "a half-written merge left behind"
    disk_sweep 14000 "$SCRATCH/log4" --rounds 1 --resume ||
        fail "resume after the merge's full disk failed: $(tail -1 "$SCRATCH/log4")"
    [ -f "$run/bench.json" ] || fail "no bench.json after the second resume"
    check_merged "$run/bench.json" 1
}

"case_$CASE"
[ "$FAILS" -eq 0 ] && echo "$CASE: passed" && exit 0
echo "$CASE: $FAILS check(s) failed"
exit 1
