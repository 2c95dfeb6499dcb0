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
# machine_label: the results folder's name from the CPU model (with its family and model where
#   the name has no model number), vector ISA and logical CPUs.
set -u
ROOT=$1 BENCH=$2 SCRATCH=$3 CASE=$4
. "$ROOT/harness/python.sh"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" || exit 1
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

SMALL=(--kernels naive,hash_parallel --workloads uniform,sheet --max-n 200 --threads 1,2
       --repetitions 2 --min-time 0.001)

sweep() { "$PY" "$ROOT/harness/sweep.py" --bench "$BENCH" --results "$SCRATCH/runs" "${SMALL[@]}" "$@"; }

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

"case_$CASE"
[ "$FAILS" -eq 0 ] && echo "$CASE: passed" && exit 0
echo "$CASE: $FAILS check(s) failed"
exit 1
