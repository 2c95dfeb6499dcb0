#!/usr/bin/env bash
# The `nsearch` command-line tool, tested from outside against its contract
# (docs/cli.md: commands, particle and contact file formats, exit codes, limits and
# refusals, output files, nothing lost on failure).
#
#   cli_test.sh NSEARCH SCRATCH CASE
#
# NSEARCH is the built binary, SCRATCH a directory this script empties and
# uses (runs happen in SCRATCH/work, captured stdout/stderr go to SCRATCH/keep),
# CASE one of the case_* functions below without its prefix. Exit 0 = pass,
# 1 = fail (every failed check is printed), 77 = skipped (ctest SKIP_RETURN_CODE).
# Needs bash and coreutils; python3 is optional (extra checks, case `reference`).
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 NSEARCH SCRATCH CASE" >&2
    exit 2
fi
BIN=$1
SCRATCH=$2
CASE=$3
HERE=$(cd "$(dirname "$0")" && pwd)
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac

# Binary contact file (include/nsearch.h): 8-byte magic "NSCONTAC", uint32
# version (1), uint32 record size (24), uint64 record count, then 24-byte records.
BIN_HEADER_SIZE=24
BIN_MAGIC=NSCONTAC
BIN_VERSION=1
BIN_RECORD_SIZE=24

# Known names; the tool may list more kernels (they are all tested), these must be there.
KNOWN_KERNELS="naive naive_omp grid_dense hash_serial hash_parallel"
KNOWN_WORKLOADS="uniform dambreak clusters polydisperse powder sheet"

CSV_HEADER='i,j,overlap,nx,ny,nz'
PRECIOUS='precious: an earlier result that a failed run must not touch'

PYTHON=
if command -v python3 >/dev/null 2>&1; then PYTHON=python3; fi

FAILS=0
fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}
die() {
    echo "FAIL (fatal): $*"
    exit 1
}
note() { echo "  $*"; }

case $SCRATCH in "" | / | "$HOME") echo "refusing scratch directory '$SCRATCH'" >&2; exit 2 ;; esac
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/work" "$SCRATCH/keep" || die "cannot create $SCRATCH"
K=$SCRATCH/keep
cd "$SCRATCH/work" || die "cannot enter $SCRATCH/work"
[ -x "$BIN" ] || die "no executable $BIN"

# ---------------------------------------------------------------- helpers

# run LABEL ARGS...: runs the tool, stdout -> $K/LABEL.out, stderr -> $K/LABEL.err, sets RC.
run() {
    local label=$1
    shift
    "$BIN" "$@" >"$K/$label.out" 2>"$K/$label.err"
    RC=$?
}
# run_env LABEL VAR=VALUE ARGS...: the same with one environment variable set.
run_env() {
    local label=$1 assign=$2
    shift 2
    env "$assign" "$BIN" "$@" >"$K/$label.out" 2>"$K/$label.err"
    RC=$?
}
show_err() { sed 's/^/    stderr: /' "$K/$1.err" | head -5; }

# ok LABEL ARGS...: run, which must exit 0 with nothing on stderr.
ok() {
    local label=$1
    run "$@"
    if [ "$RC" -ne 0 ]; then
        fail "$label: nsearch ${*:2} exited $RC (want 0)"
        show_err "$label"
        return 1
    fi
    if [ -s "$K/$label.err" ]; then
        fail "$label: nsearch ${*:2} wrote to stderr on success"
        show_err "$label"
    fi
    return 0
}
# okv LABEL ARGS...: run, which must exit 0 (stderr allowed: --stats, --check).
okv() {
    local label=$1
    run "$@"
    if [ "$RC" -ne 0 ]; then
        fail "$label: nsearch ${*:2} exited $RC (want 0)"
        show_err "$label"
        return 1
    fi
    return 0
}
ok_env() {
    local label=$1 assign=$2
    run_env "$@"
    if [ "$RC" -ne 0 ]; then
        fail "$label: $assign nsearch ${*:3} exited $RC (want 0)"
        show_err "$label"
        return 1
    fi
    if [ -s "$K/$label.err" ]; then
        fail "$label: $assign nsearch ${*:3} wrote to stderr on success"
        show_err "$label"
    fi
    return 0
}

# same A B WHAT: files byte-identical.
same() {
    if ! cmp -s "$1" "$2"; then
        fail "$3: $(basename "$1") and $(basename "$2") differ"
        diff "$1" "$2" 2>/dev/null | head -6 | sed 's/^/    /'
        return 1
    fi
    return 0
}

# gen W N SEED FILE: a particle file from the tool's generator.
gen() {
    "$BIN" gen --workload "$1" --n "$2" --seed "$3" >"$4" 2>"$K/gen.err" ||
        die "nsearch gen --workload $1 --n $2 --seed $3 failed: $(head -3 "$K/gen.err")"
}

KERNELS=()
load_kernels() {
    mapfile -t KERNELS < <("$BIN" kernels 2>/dev/null | awk 'NF { print $1 }')
    [ ${#KERNELS[@]} -gt 0 ] || die "nsearch kernels lists no kernel"
}

# contact_count FILE: data lines of a contact CSV.
contact_count() { echo $(($(wc -l <"$1") - 1)); }

# check_csv FILE WHAT: the contact CSV format (header, i<j, sorted, no duplicates,
# %g-style numbers, never -0/nan/inf, overlap > 0, unit or zero normal, final newline).
check_csv() {
    local f=$1 what=$2 msg
    if [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ]; then
        fail "$what: no newline at the end of $(basename "$f")"
    fi
    msg=$(awk -F, -v want="$CSV_HEADER" '
        function bad(why) { n++; if (n <= 5) printf "line %d: %s: %s\n", NR, why, $0 }
        NR == 1 { if ($0 != want) bad("header is not " want); next }
        {
            if (NF != 6) { bad("not 6 fields"); next }
            if ($1 !~ /^(0|[1-9][0-9]*)$/ || $2 !~ /^(0|[1-9][0-9]*)$/) bad("index not a plain integer")
            i = $1 + 0; j = $2 + 0
            if (!(i < j)) bad("not i < j")
            if (NR > 2 && !(i > pi || (i == pi && j > pj))) bad("not sorted by i then j (or duplicate)")
            pi = i; pj = j
            for (k = 3; k <= 6; k++) {
                if ($k !~ /^-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$/) bad("field " k " is not a %g number")
                else if ($k ~ /^-0(\.0*)?(e[-+][0-9]+)?$/) bad("negative zero")
                else if ($k ~ /\.[0-9]*0(e|$)/) bad("trailing zero, not %.9g")
            }
            if (!($3 + 0 > 0)) bad("overlap not > 0")
            n2 = $4 * $4 + $5 * $5 + $6 * $6
            if (!($4 == "0" && $5 == "0" && $6 == "0") && (n2 < 0.99999 || n2 > 1.00001)) bad("normal neither unit nor 0,0,0")
        }
        END { if (NR == 0) bad("empty file") }' "$f")
    if [ -n "$msg" ]; then
        fail "$what: $(basename "$f") is not a valid contact CSV"
        echo "$msg" | sed 's/^/    /'
    fi
    if [ -n "$PYTHON" ] && [ "$(wc -l <"$f")" -gt 1 ]; then
        if ! msg=$($PYTHON "$HERE/cli_ref.py" checknum "$f"); then
            fail "$what: numbers in $(basename "$f") are not %.9g of floats"
            echo "$msg" | sed 's/^/    /'
        fi
    fi
}

# bin_to_csv FILE: decodes a binary contact file (records only) to the CSV text,
# with awk computing each float from its bits exactly and printing it as %.9g.
bin_to_csv() {
    echo "$CSV_HEADER"
    od -A n -v -t u4 -w$BIN_RECORD_SIZE -j $BIN_HEADER_SIZE "$1" | awk '
        function f32(u,   s, e, m, v) {
            s = 1
            if (u >= 2147483648) { s = -1; u -= 2147483648 }
            e = int(u / 8388608); m = u - e * 8388608
            if (e == 255) return (m ? "nan" : (s < 0 ? "-inf" : "inf"))
            if (e == 0) v = m * 2 ^ -149
            else v = (1 + m / 8388608) * 2 ^ (e - 127)
            if (v == 0) return (s < 0 ? "-0" : "0")
            return sprintf("%.9g", s * v)
        }
        NF { printf "%.0f,%.0f,%s,%s,%s,%s\n", $1, $2, f32($3), f32($4), f32($5), f32($6) }'
}

# check_bin FILE COUNT WHAT: header fields and size of a binary contact file.
check_bin() {
    local f=$1 count=$2 what=$3 size hdr
    size=$(wc -c <"$f")
    if [ "$size" -ne $((BIN_HEADER_SIZE + BIN_RECORD_SIZE * count)) ]; then
        fail "$what: $(basename "$f") has $size bytes, want $BIN_HEADER_SIZE + $BIN_RECORD_SIZE * $count"
    fi
    if [ "$(head -c 8 "$f")" != "$BIN_MAGIC" ]; then
        fail "$what: $(basename "$f") does not start with the magic $BIN_MAGIC"
    fi
    hdr=$(od -A n -v -t u4 -N $BIN_HEADER_SIZE "$f" | tr -s ' \n' ' ')
    # words: magic magic version record_size count_lo count_hi
    set -- $hdr
    if [ "${3:-}" != "$BIN_VERSION" ] || [ "${4:-}" != "$BIN_RECORD_SIZE" ] ||
        [ "${5:-}" != "$count" ] || [ "${6:-}" != 0 ]; then
        fail "$what: header of $(basename "$f") is (version ${3:-?}, record size ${4:-?}, count ${5:-?} + 2^32*${6:-?}), want ($BIN_VERSION, $BIN_RECORD_SIZE, $count)"
    fi
}

# ls_dir: the work directory's entries, one per line.
ls_dir() { ls -A | LC_ALL=C sort; }

# expect_fail CODE FILE LINE ARGS...: the run exits CODE with exactly one line on
# stderr that starts with "nsearch: ", names FILE (when not empty) and contains
# "FILE:LINE:" (when LINE is not empty); out.csv (pre-filled here) is byte-identical
# afterwards and no file appears or disappears in the directory.
# Sets ERRLINE to the message for extra checks.
expect_fail() {
    local code=$1 file=$2 line=$3
    shift 3
    [ -e out.csv ] || printf '%s\n' "$PRECIOUS" >out.csv
    cp out.csv "$K/out.before"
    ls_dir >"$K/dir.before"
    run fail "$@"
    ERRLINE=$(head -n 1 "$K/fail.err")
    local cmd="nsearch $*"
    if [ "$RC" -ne "$code" ]; then
        fail "$cmd: exit $RC, want $code"
    fi
    if [ "$(wc -l <"$K/fail.err")" -ne 1 ] || [ -n "$(tail -c 1 "$K/fail.err")" ] || [ -z "$ERRLINE" ]; then
        fail "$cmd: stderr is not exactly one line:"
        sed 's/^/    | /' "$K/fail.err" | head -8
    fi
    if ! printf '%s\n' "$ERRLINE" | grep -Eq '^([^ ]*/)?nsearch: '; then
        fail "$cmd: message does not start with 'nsearch: ': $ERRLINE"
    fi
    if [ -n "$file" ] && ! printf '%s\n' "$ERRLINE" | grep -Fq -- "$file"; then
        fail "$cmd: message does not name the file $file: $ERRLINE"
    fi
    if [ -n "$line" ] && ! printf '%s\n' "$ERRLINE" | grep -Fq -- "$file:$line:"; then
        fail "$cmd: message does not contain '$file:$line:': $ERRLINE"
    fi
    if ! cmp -s out.csv "$K/out.before"; then
        fail "$cmd: the existing output file out.csv was modified"
    fi
    ls_dir >"$K/dir.after"
    if ! cmp -s "$K/dir.before" "$K/dir.after"; then
        fail "$cmd: the directory changed (a temporary file left behind?):"
        diff "$K/dir.before" "$K/dir.after" | sed 's/^/    /'
    fi
    [ "$RC" -eq "$code" ] && note "ok ($RC): $ERRLINE"
}

# message_matches REGEX WHAT: ERRLINE (from expect_fail) matches the extended regex, case-insensitively.
message_matches() {
    printf '%s\n' "$ERRLINE" | grep -Eiq -- "$1" || fail "$2: message does not match /$1/: $ERRLINE"
}

# A small valid 4-column input for usage-error cases.
good_input() {
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n' >good.csv
    printf 'x,y,z\n0,0,0\n0.6,0,0\n' >good3.csv
}

# --------------------------------------------------------------- commands

case_kernels_list() {
    ok list kernels || return
    local names
    names=$(awk 'NF { print $1 }' "$K/list.out")
    awk 'NF && NF < 2 { print "    no description: " $0; bad = 1 } END { exit bad }' "$K/list.out" ||
        fail "nsearch kernels: a line without a name and a description"
    [ "$(echo "$names" | sort | uniq -d)" = "" ] || fail "nsearch kernels: duplicate names"
    for k in $KNOWN_KERNELS; do
        echo "$names" | grep -qx "$k" || fail "nsearch kernels does not list $k"
    done
    note "kernels: $(echo $names)"
}

case_workloads_list() {
    ok list workloads || return
    local names
    names=$(awk 'NF { print $1 }' "$K/list.out")
    awk 'NF && NF < 2 { print "    no description: " $0; bad = 1 } END { exit bad }' "$K/list.out" ||
        fail "nsearch workloads: a line without a name and a description"
    for w in $KNOWN_WORKLOADS; do
        echo "$names" | grep -qx "$w" || fail "nsearch workloads does not list $w"
    done
    note "workloads: $(echo $names)"
}

case_help() {
    ok help --help || return
    [ -s "$K/help.out" ] || fail "nsearch --help printed nothing on stdout"
    for word in kernels workloads gen pairs --version; do
        grep -Fq -- "$word" "$K/help.out" || fail "nsearch --help does not mention $word"
    done
    ok pairs_help pairs --help || return
    for opt in --kernel --input --radius --threads --table-size --output --format csv bin --check --stats; do
        grep -Fq -- "$opt" "$K/pairs_help.out" || fail "nsearch pairs --help does not mention $opt"
    done
    ok gen_help gen --help || return
    for opt in --workload --n --seed --output; do
        grep -Fq -- "$opt" "$K/gen_help.out" || fail "nsearch gen --help does not mention $opt"
    done
    ok kernels_help kernels --help
    ok workloads_help workloads --help
    expect_fail 2 "" "" --help extra
}

case_version() {
    ok version --version || return
    grep -Eq '[0-9]+\.[0-9]+(\.[0-9]+)?' "$K/version.out" ||
        fail "nsearch --version prints no version number: $(head -1 "$K/version.out")"
    [ "$(wc -l <"$K/version.out")" -le 3 ] || fail "nsearch --version prints more than a version"
    note "version: $(head -1 "$K/version.out")"
    expect_fail 2 "" "" --version --bogus
}

# ------------------------------------------------- kernels agree byte for byte

# agree INPUT WHAT [pairs options]: every kernel's CSV equals naive's.
agree() {
    local input=$1 what=$2
    shift 2
    ok naive pairs --kernel naive --input "$input" "$@" || return 1
    check_csv "$K/naive.out" "$what naive"
    local c
    c=$(contact_count "$K/naive.out")
    [ "$c" -gt 0 ] || fail "$what: naive finds no contact at all (workload too sparse to test anything)"
    note "$what: $c contacts"
    for k in "${KERNELS[@]}"; do
        [ "$k" = naive ] && continue
        ok "k_$k" pairs --kernel "$k" --input "$input" "$@" && same "$K/naive.out" "$K/k_$k.out" "$what: $k vs naive"
    done
}

agree_workload() {
    load_kernels
    gen "$1" 2000 42 p.csv
    agree p.csv "$1 n=2000"
    # --output FILE holds exactly what stdout gets.
    ok to_file pairs --kernel hash_parallel --input p.csv --output c.csv &&
        same "$K/naive.out" c.csv "$1: --output file vs stdout"
    [ -s "$K/to_file.out" ] && fail "$1: stdout not empty with --output"
}
case_agree_uniform() { agree_workload uniform; }
case_agree_dambreak() { agree_workload dambreak; }
case_agree_clusters() { agree_workload clusters; }
case_agree_polydisperse() { agree_workload polydisperse; }
case_agree_sheet() { agree_workload sheet; }

# A 3-column file: the generated coordinates, one radius for all via --radius.
case_agree_radius() {
    load_kernels
    gen uniform 2000 7 p4.csv
    awk -F, 'NR == 1 { print "x,y,z"; next } { print $1 "," $2 "," $3 }' p4.csv >p3.csv
    local r
    r=$(awk -F, 'NR == 2 { print $4 }' p4.csv)
    agree p3.csv "3 columns --radius $r" --radius "$r"
    # The same particles written with a 4th column equal to r: the same contacts.
    awk -F, -v r="$r" 'NR == 1 { print "x,y,z,r"; next } { print $1 "," $2 "," $3 "," r }' p4.csv >p4r.csv
    ok four pairs --kernel naive --input p4r.csv && same "$K/naive.out" "$K/four.out" "--radius vs a 4th column"
}

# Threads 1, 2, 3, 8 via --threads and via OMP_NUM_THREADS: identical bytes.
case_threads() {
    load_kernels
    gen clusters 3000 5 p.csv
    ok ref pairs --kernel naive --input p.csv || return
    note "$(contact_count "$K/ref.out") contacts"
    for k in "${KERNELS[@]}"; do
        for t in 1 2 3 8; do
            ok_env "opt_${k}_$t" OMP_NUM_THREADS=2 pairs --kernel "$k" --input p.csv --threads "$t" &&
                same "$K/ref.out" "$K/opt_${k}_$t.out" "$k --threads $t"
            ok_env "env_${k}_$t" "OMP_NUM_THREADS=$t" pairs --kernel "$k" --input p.csv &&
                same "$K/ref.out" "$K/env_${k}_$t.out" "$k OMP_NUM_THREADS=$t"
        done
    done
}

# 20,000 particles (some 300,000 contacts to merge and sort): the parallel
# kernels at 1, 2, 3, 8 threads equal hash_serial, and --check (naive) agrees.
case_threads_large() {
    load_kernels
    gen uniform 20000 13 p.csv
    ok ref pairs --kernel hash_serial --input p.csv || return
    check_csv "$K/ref.out" "n=20000 hash_serial"
    note "$(contact_count "$K/ref.out") contacts"
    okv chk pairs --kernel hash_parallel --input p.csv --check --threads 2 && same "$K/ref.out" "$K/chk.out" "hash_parallel --check"
    grep -qw VALID "$K/chk.err" || fail "n=20000 hash_parallel --check: no VALID"
    local k t
    for k in "${KERNELS[@]}"; do
        case $k in naive*) continue ;; esac # O(n^2): covered by --check above and by case threads
        for t in 1 2 3 8; do
            ok "${k}_$t" pairs --kernel "$k" --input p.csv --threads "$t" && same "$K/ref.out" "$K/${k}_$t.out" "n=20000 $k --threads $t"
        done
    done
}

# --table-size 1 and 7 (and a large prime): identical bytes, accepted by every kernel.
case_table_size() {
    load_kernels
    gen dambreak 2000 3 p.csv
    ok ref pairs --kernel naive --input p.csv || return
    for k in "${KERNELS[@]}"; do
        for m in 1 7 1000003; do
            ok "ts_${k}_$m" pairs --kernel "$k" --input p.csv --table-size "$m" --threads 3 &&
                same "$K/ref.out" "$K/ts_${k}_$m.out" "$k --table-size $m"
        done
    done
}

# Each workload, small: naive (and so every kernel) equals docs/design.md's predicate
# recomputed in float32 by python.
case_reference() {
    [ -n "$PYTHON" ] || { echo "SKIP: python3 not found"; exit 77; }
    for w in $KNOWN_WORKLOADS; do
        gen "$w" 300 11 "$w.csv"
        $PYTHON "$HERE/cli_ref.py" contacts "$w.csv" >"$K/$w.ref" || die "cli_ref.py failed"
        ok "$w" pairs --kernel naive --input "$w.csv" && same "$K/$w.ref" "$K/$w.out" "$w n=300: naive vs python reference"
        note "$w: $(contact_count "$K/$w.ref") contacts"
    done
    # 3 columns + --radius
    awk -F, 'NR == 1 { print "x,y,z"; next } { print $1 "," $2 "," $3 }' uniform.csv >u3.csv
    local r
    r=$(awk -F, 'NR == 2 { print $4 }' uniform.csv)
    $PYTHON "$HERE/cli_ref.py" contacts u3.csv "$r" >"$K/u3.ref"
    ok u3 pairs --kernel hash_serial --input u3.csv --radius "$r" && same "$K/u3.ref" "$K/u3.out" "3 columns: hash_serial vs python reference"
}

# ------------------------------------------------------------ --check, --stats

case_check_valid() {
    load_kernels
    gen polydisperse 2000 9 p.csv
    ok ref pairs --kernel naive --input p.csv || return
    for k in "${KERNELS[@]}"; do
        run "chk_$k" pairs --kernel "$k" --input p.csv --check
        if [ "$RC" -ne 0 ]; then
            fail "$k --check: exit $RC, want 0"
            show_err "chk_$k"
            continue
        fi
        grep -qw VALID "$K/chk_$k.err" || fail "$k --check: no VALID on stderr"
        grep -qw INVALID "$K/chk_$k.err" && fail "$k --check: INVALID on stderr"
        same "$K/ref.out" "$K/chk_$k.out" "$k --check: stdout is the contact CSV and nothing else"
    done
    # with --output: the file holds the contacts, stdout stays empty
    run chk_file pairs --kernel hash_parallel --input p.csv --check --output c.csv
    [ "$RC" -eq 0 ] || fail "--check --output: exit $RC, want 0"
    grep -qw VALID "$K/chk_file.err" || fail "--check --output: no VALID on stderr"
    [ -s "$K/chk_file.out" ] && fail "--check --output: stdout not empty"
    same "$K/ref.out" c.csv "--check --output"
    # with --format bin
    run chk_bin pairs --kernel grid_dense --input p.csv --check --format bin --output c.bin
    [ "$RC" -eq 0 ] || fail "--check --format bin: exit $RC, want 0"
    grep -qw VALID "$K/chk_bin.err" || fail "--check --format bin: no VALID on stderr"
}

# has_number FILE N: N appears as a whole number (plain or with thousands commas).
has_number() {
    local grouped
    grouped=$(echo "$2" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')
    grep -Eq "(^|[^0-9.,])($2|$grouped)([^0-9.,]|\$)" "$1"
}

case_stats() {
    gen uniform 2000 4 p.csv
    ok ref pairs --kernel hash_parallel --input p.csv || return
    local c n=2000 cpp
    c=$(contact_count "$K/ref.out")
    cpp=$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.6f", 2 * c / n }')
    note "n=$n contacts=$c contacts/particle=$cpp"
    for k in hash_parallel naive; do
        run "st_$k" pairs --kernel "$k" --input p.csv --stats
        if [ "$RC" -ne 0 ]; then
            fail "$k --stats: exit $RC"
            show_err "st_$k"
            continue
        fi
        local e=$K/st_$k.err
        sed 's/^/    stats: /' "$e"
        same "$K/ref.out" "$K/st_$k.out" "$k --stats: stdout is the contact CSV and nothing else"
        has_number "$e" "$n" || fail "$k --stats: particle count $n not on stderr"
        has_number "$e" "$c" || fail "$k --stats: contact count $c not on stderr"
        grep -Eo '[0-9]+(\.[0-9]+)?' "$e" | awk -v want="$cpp" '
            { d = $1 - want; if (d < 0) d = -d; if (d <= 0.01 * want + 0.005) found = 1 }
            END { exit !found }' || fail "$k --stats: contacts per particle ($cpp = 2*$c/$n) not on stderr"
        for word in read build query write; do
            grep -iq "$word" "$e" || fail "$k --stats: no '$word' time on stderr"
        done
        grep -q 'ms' "$e" || fail "$k --stats: times are not in ms"
        grep -Eiq 'bytes|memory' "$e" || fail "$k --stats: no index memory in bytes"
    done
    # with --output: stdout stays empty, the file is the CSV
    run st_file pairs --kernel grid_dense --input p.csv --stats --output c.csv
    [ "$RC" -eq 0 ] || fail "--stats --output: exit $RC"
    [ -s "$K/st_file.out" ] && fail "--stats --output: stdout not empty"
    [ -s "$K/st_file.err" ] || fail "--stats --output: nothing on stderr"
    same "$K/ref.out" c.csv "--stats --output"
    # grid_sorted names the layout it chose: dense for a uniform cube, blocked
    # for clusters (100,000 particles: the coarse grid of blocks fits)
    run st_gs pairs --kernel grid_sorted --input p.csv --stats
    grep -Eq '^index layout +dense$' "$K/st_gs.err" || fail "grid_sorted --stats: no 'index layout dense'"
    grep -Eq '^index layout +-$' "$K/st_naive.err" || fail "naive --stats: a layout other than '-'"
    gen clusters 100000 1 d.csv
    run st_dam pairs --kernel grid_sorted --input d.csv --stats --output /dev/null
    grep -Eq '^index layout +blocked$' "$K/st_dam.err" || fail "grid_sorted --stats on clusters: not blocked"
    # and the levels of cells it split the radii into: one for equal radii,
    # two for powder's seven halvings; none for a kernel with one grid
    grep -Eq '^index levels +1$' "$K/st_gs.err" || fail "grid_sorted --stats: not 'index levels 1'"
    grep -Eq '^index levels +0$' "$K/st_naive.err" || fail "naive --stats: levels other than 0"
    gen powder 20000 1 w.csv
    run st_pow pairs --kernel grid_sorted --input w.csv --stats --output /dev/null
    grep -Eq '^index levels +2$' "$K/st_pow.err" || fail "grid_sorted --stats on powder: not 2 levels"
}

# ------------------------------------------------------------------- binary

case_binary() {
    load_kernels
    gen dambreak 2000 8 p.csv
    ok ref pairs --kernel naive --input p.csv || return
    local c
    c=$(contact_count "$K/ref.out")
    note "$c contacts, expecting $((BIN_HEADER_SIZE + BIN_RECORD_SIZE * c)) bytes"
    for k in "${KERNELS[@]}"; do
        ok "bin_$k" pairs --kernel "$k" --input p.csv --format bin --output "$k.bin" || continue
        [ -s "$K/bin_$k.out" ] && fail "$k --format bin --output: stdout not empty"
        check_bin "$k.bin" "$c" "$k --format bin"
        bin_to_csv "$k.bin" >"$K/$k.decoded"
        same "$K/ref.out" "$K/$k.decoded" "$k --format bin decoded vs naive's CSV"
    done
    # to stdout: the same bytes
    ok stdout_bin pairs --kernel hash_serial --input p.csv --format bin && same hash_serial.bin "$K/stdout_bin.out" "--format bin to stdout vs --output"
    # --format csv is the default
    ok csv pairs --kernel hash_serial --input p.csv --format csv && same "$K/ref.out" "$K/csv.out" "--format csv vs default"
    # no contacts: the header alone
    printf 'x,y,z,r\n0,0,0,0.5\n5,5,5,0.5\n' >none.csv
    ok none pairs --kernel naive --input none.csv --format bin --output none.bin && check_bin none.bin 0 "no contacts, --format bin"
    # a known small file: hand-checked values survive the binary format
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n0.5,-0,0,0.5\n' >small.csv
    ok small_csv pairs --kernel naive --input small.csv &&
        ok small_bin pairs --kernel hash_parallel --input small.csv --format bin --output small.bin &&
        check_bin small.bin 3 "small --format bin" &&
        bin_to_csv small.bin >"$K/small.decoded" && same "$K/small_csv.out" "$K/small.decoded" "small file: binary vs CSV"
}

# ------------------------------------------------------- input format edges

# expect_output LABEL EXPECTED ARGS...: every kernel prints exactly EXPECTED (printf %b).
expect_output() {
    local label=$1 expected=$2
    shift 2
    printf '%b' "$expected" >"$K/$label.want"
    for k in "${KERNELS[@]}"; do
        ok "${label}_$k" pairs --kernel "$k" "$@" && same "$K/$label.want" "$K/${label}_$k.out" "$label ($k, pairs $*)"
    done
}

# Particles 0-based counting data lines only; values computed by hand / in float32.
INDEX_FILE='# particles for the index test
x,y,z,r

5,5,5,0.25
# a comment between data lines
10,10,10,0.5
-3,2,1,0.5

0,0,0,0.5
20,20,20,0.5
0.6,0,0,0.5
-2.6,2.2,1.4,0.5
'
INDEX_WANT='i,j,overlap,nx,ny,nz\n2,6,0.399999917,0.666666746,0.333333373,0.666666508\n3,5,0.399999976,1,0,0\n'

case_input_indices() {
    load_kernels
    printf '%s' "$INDEX_FILE" >idx.csv
    expect_output idx "$INDEX_WANT" --input idx.csv
}

case_input_headers() {
    load_kernels
    local want='i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n0,2,0.600000024,-1,0,0\n'
    local data='0,0,0\n0.6,0,0\n-0.4,0,0\n'
    printf "x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n-0.4,0,0,0.5\n" >h4.csv
    printf "0,0,0,0.5\n0.6,0,0,0.5\n-0.4,0,0,0.5\n" >n4.csv
    printf "x,y,z\n$data" >h3.csv
    printf "$data" >n3.csv
    printf "# comment before the header\n\nx,y,z\n# after\n$data" >c3.csv
    expect_output h4 "$want" --input h4.csv
    expect_output n4 "$want" --input n4.csv
    expect_output h3 "$want" --input h3.csv --radius 0.5
    expect_output n3 "$want" --input n3.csv --radius 0.5
    expect_output c3 "$want" --input c3.csv --radius 0.5
}

case_input_comments() {
    load_kernels
    # blank lines (also spaces only) and comments anywhere, including at the end
    # and a file without a final newline
    local want='i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n0,2,0.600000024,-1,0,0\n'
    printf '\n# head\n#\n\nx,y,z,r\n\n#x,y,z,r\n0,0,0,0.5\n\n# mid, with commas 1,2,3\n0.6,0,0,0.5\n\n\n# tail\n-0.4,0,0,0.5\n\n#' >cm.csv
    expect_output cm "$want" --input cm.csv
    # a line of spaces only counts as blank
    printf 'x,y,z,r\n0,0,0,0.5\n   \n0.6,0,0,0.5\n-0.4,0,0,0.5\n' >ws.csv
    expect_output spaces_line "$want" --input ws.csv
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5' >nonl.csv
    expect_output nonl 'i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n' --input nonl.csv
}

case_input_crlf() {
    load_kernels
    printf '%s' "$INDEX_FILE" | sed 's/$/\r/' >crlf.csv
    grep -q $'\r' crlf.csv || die "could not make a CRLF file"
    expect_output crlf "$INDEX_WANT" --input crlf.csv
    printf 'x,y,z\r\n0,0,0\r\n0.6,0,0\r\n' >crlf3.csv
    expect_output crlf3 'i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n' --input crlf3.csv --radius 0.5
}

case_input_spaces() {
    load_kernels
    local want='i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n0,2,0.600000024,-1,0,0\n'
    printf 'x,y,z,r\n 0 ,0,  0  ,0.5\n0.6 , 0 , 0 , 0.5   \n  -0.4,0 ,0, 0.5\n' >sp.csv
    expect_output sp "$want" --input sp.csv
    printf ' x , y , z , r \n0,0,0,0.5\n0.6,0,0,0.5\n-0.4,0,0,0.5\n' >sph.csv
    expect_output spaced_header "$want" --input sph.csv
    printf 'x , y , z\r\n 0 , 0 , 0 \r\n 0.6 , 0 , 0 \r\n' >sp3.csv
    expect_output sp3 'i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n' --input sp3.csv --radius 0.5
}

# Numbers are C floating-point literals as strtod reads them.
case_input_literals() {
    load_kernels
    printf 'x,y,z,r\n+0e0,-0.0,.0,5e-1\n6E-1,0.,0x0p0,0x1p-1\n-4.0e-1,0,0,0.50\n' >lit.csv
    expect_output lit 'i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n0,2,0.600000024,-1,0,0\n' --input lit.csv
}

case_input_header_only() {
    load_kernels
    printf 'x,y,z,r\n' >h4.csv
    printf '# nothing yet\nx,y,z,r\n\n# still nothing\n' >h4c.csv
    printf 'x,y,z\n' >h3.csv
    expect_output h4 "$CSV_HEADER\n" --input h4.csv
    expect_output h4c "$CSV_HEADER\n" --input h4c.csv
    expect_output h3 "$CSV_HEADER\n" --input h3.csv --radius 0.5
    ok h4bin pairs --kernel hash_parallel --input h4.csv --format bin --output h4.bin && check_bin h4.bin 0 "header only, --format bin"
    okv h4check pairs --kernel hash_parallel --input h4.csv --check --stats
    grep -qw VALID "$K/h4check.err" || fail "header only --check: no VALID"
    # one particle: no contact
    printf 'x,y,z,r\n1,2,3,4\n' >one.csv
    expect_output one "$CSV_HEADER\n" --input one.csv
    # a file with nothing in it (not covered by the contract): no crash, and
    # either valid and empty or a one-line error naming the file
    : >empty.csv
    for k in "${KERNELS[@]}"; do
        run "empty_$k" pairs --kernel "$k" --input empty.csv --radius 0.5
        case $RC in
        0) printf '%s\n' "$CSV_HEADER" | cmp -s - "$K/empty_$k.out" || fail "empty file, $k: exit 0 but output is not the header line" ;;
        2) grep -q empty.csv "$K/empty_$k.err" || fail "empty file, $k: exit 2 without naming the file" ;;
        *) fail "empty file, $k: exit $RC (want 0 or 2)" ;;
        esac
    done
}

# Exactly touching: no contact (in x, y, z, mixed radii, negative side); the
# largest float below touching: a contact.
case_touching() {
    load_kernels
    printf 'x,y,z,r\n0,0,0,0.5\n1,0,0,0.5\n10,0,0,0.5\n10,1,0,0.5\n20,0,0,0.25\n20,0,1,0.75\n-1.5,-30,0,0.5\n-0.5,-30,0,0.5\n40,0,0,0.5\n40.9999962,0,0,0.5\n' >t.csv
    expect_output touch 'i,j,overlap,nx,ny,nz\n8,9,3.81469727e-06,1,0,0\n' --input t.csv
    # all exactly touching on a lattice: no contact
    awk 'BEGIN { print "x,y,z"; for (i = 0; i < 6; i++) for (j = 0; j < 6; j++) for (k = 0; k < 6; k++) print i "," j "," k }' >lat.csv
    expect_output lattice "$CSV_HEADER\n" --input lat.csv --radius 0.5
}

# Coincident centres: normal 0,0,0; zero radii: never a contact; -0 never printed.
case_coincident() {
    load_kernels
    printf '1,2,3,0.5\n-4,-4,-4,0.25\n1,2,3,0.5\n-4,-4,-4,0.25\n7,7,7,0\n-4,-4,-4,0.25\n7,7,7,0\n0,0,0,0.5\n0.5,-0,0,0.5\n-0,-0,-0,0.5\n' >co.csv
    expect_output coincident 'i,j,overlap,nx,ny,nz\n0,2,1,0,0,0\n1,3,0.5,0,0,0\n1,5,0.5,0,0,0\n3,5,0.5,0,0,0\n7,8,0.5,1,0,0\n7,9,1,0,0,0\n8,9,0.5,-1,0,0\n' --input co.csv
    # 200 particles in one point: every pair, normal 0,0,0
    awk 'BEGIN { print "x,y,z"; for (i = 0; i < 200; i++) print "-1.25,3.5,-7" }' >pile.csv
    awk 'BEGIN { print "i,j,overlap,nx,ny,nz"; for (i = 0; i < 200; i++) for (j = i + 1; j < 200; j++) print i "," j ",0.5,0,0,0" }' >"$K/pile.want"
    for k in "${KERNELS[@]}"; do
        ok "pile_$k" pairs --kernel "$k" --input pile.csv --radius 0.25 && same "$K/pile.want" "$K/pile_$k.out" "200 coincident particles, $k"
    done
    # every radius 0: no contact
    awk 'BEGIN { print "x,y,z"; for (i = 0; i < 50; i++) print i % 3 ",0,0" }' >zero.csv
    expect_output zero "$CSV_HEADER\n" --input zero.csv --radius 0
}

# `--input -` reads standard input (docs/cli.md).
case_input_stdin() {
    load_kernels
    printf '%s' "$INDEX_FILE" >idx.csv
    printf '%b' "$INDEX_WANT" >"$K/want"
    local k
    for k in "${KERNELS[@]}"; do
        "$BIN" pairs --kernel "$k" --input - <idx.csv >"$K/stdin_$k.out" 2>"$K/stdin_$k.err"
        RC=$?
        [ "$RC" -eq 0 ] || { fail "$k --input - : exit $RC"; show_err "stdin_$k"; continue; }
        same "$K/want" "$K/stdin_$k.out" "$k --input -"
    done
}

# docs/cli.md's worked example, exactly.
case_readme_example() {
    printf '# three spheres of radius 0.5, the last one twice\nx,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n0.6,0.8,0,0.5\n0.6,0.8,0,0.5\n' >points.csv
    printf 'i,j,overlap,nx,ny,nz\n0,1,0.399999976,1,0,0\n1,2,0.199999988,0,1,0\n1,3,0.199999988,0,1,0\n2,3,1,0,0,0\n' >"$K/want"
    okv ex pairs --kernel hash_parallel --input points.csv --check --output out.csv || return
    same "$K/want" out.csv "docs/cli.md example"
    grep -qw VALID "$K/ex.err" || fail "docs/cli.md example: no VALID on stderr"
    [ -s "$K/ex.out" ] && fail "docs/cli.md example: stdout not empty"
}

# ------------------------------------------------- refusals (exit 1)

# Coordinates 1e30 with radius 0.001: cell coordinates beyond 2^62, refused by every kernel.
case_too_large() {
    load_kernels
    printf 'x,y,z,r\n0,0,0,0.001\n1e30,0,0,0.001\n0.001,0,0,0.001\n' >huge.csv
    for k in "${KERNELS[@]}"; do
        expect_fail 1 "" "" pairs --kernel "$k" --input huge.csv --output out.csv
        message_matches 'too.?large|too big|exceed|beyond' "$k on 1e30"
        expect_fail 1 "" "" pairs --kernel "$k" --input huge.csv --output out.csv --format bin
        expect_fail 1 "" "" pairs --kernel "$k" --input huge.csv --output out.csv --check
    done
}

# --max-contacts: more contacts than C is exit 1 with a too-many-contacts
# message and no output file, from every kernel; C equal to the count passes.
case_max_contacts() {
    load_kernels
    gen uniform 2000 1 u.csv
    ok ref pairs --kernel naive --input u.csv --output ref.csv
    local n
    n=$(contact_count ref.csv)
    for k in "${KERNELS[@]}"; do
        expect_fail 1 "" "" pairs --kernel "$k" --input u.csv --output out.csv --max-contacts $((n - 1))
        message_matches 'too many contacts' "$k with --max-contacts $((n - 1))"
        ok "max-$k" pairs --kernel "$k" --input u.csv --output "max-$k.csv" --max-contacts "$n"
        same ref.csv "max-$k.csv" "$k with --max-contacts $n (exactly the count)"
    done
    expect_fail 2 "" "" pairs --kernel naive --input u.csv --max-contacts 0
    expect_fail 2 "" "" pairs --kernel naive --input u.csv --max-contacts lots
}

# --order any: every kernel's contacts unsorted, the same set as the sorted
# output; grid_sorted streams them (in several batches at 20,000 particles),
# in the same order at every thread count, in CSV and binary; --max-contacts
# limits the total and a refused run leaves the output as it was.
case_order_any() {
    load_kernels
    gen uniform 20000 3 u.csv
    ok ref pairs --kernel grid_sorted --input u.csv --output ref.csv || return
    local n
    n=$(contact_count ref.csv)
    for k in "${KERNELS[@]}"; do
        [ "$k" = naive ] || [ "$k" = naive_omp ] && continue # quadratic: the agree cases cover them
        ok "any_$k" pairs --kernel "$k" --input u.csv --order any --output "any-$k.csv" || continue
        { head -n 1 "any-$k.csv"; tail -n +2 "any-$k.csv" | LC_ALL=C sort -t, -k1,1n -k2,2n; } >"$K/any-$k.sorted"
        same ref.csv "$K/any-$k.sorted" "$k --order any, sorted afterwards, vs the sorted output"
    done
    ok any_t1 pairs --kernel grid_sorted --input u.csv --order any --threads 1 --output t1.csv &&
        same any-grid_sorted.csv t1.csv "grid_sorted --order any: 1 thread vs the default"
    ok any_bin pairs --kernel grid_sorted --input u.csv --order any --format bin --output any.bin &&
        check_bin any.bin "$n" "grid_sorted --order any --format bin" &&
        bin_to_csv any.bin >"$K/any.decoded" &&
        { head -n 1 "$K/any.decoded"; tail -n +2 "$K/any.decoded" | LC_ALL=C sort -t, -k1,1n -k2,2n; } >"$K/any-bin.sorted" &&
        same ref.csv "$K/any-bin.sorted" "grid_sorted --order any --format bin, decoded and sorted"
    for fmt in csv bin; do
        expect_fail 1 "" "" pairs --kernel grid_sorted --input u.csv --order any --format $fmt --output out.csv --max-contacts $((n - 1))
        message_matches 'too many contacts' "grid_sorted --order any --format $fmt --max-contacts $((n - 1))"
    done
    ok any_max pairs --kernel grid_sorted --input u.csv --order any --max-contacts "$n" --output max.csv &&
        same any-grid_sorted.csv max.csv "--order any --max-contacts $n (exactly the count)"
}

# 100,000 coincident particles (5e9 contacts): grid_sorted counts first and
# refuses within seconds without allocating the contacts (default limit).
case_coincident_100k() {
    python3 -c 'import sys; sys.stdout.write("x,y,z,r\n" + "1,2,3,0.5\n" * 100000)' >same.csv ||
        { note "python3 missing: skipped"; exit 77; }
    local start=$SECONDS
    expect_fail 1 "" "" pairs --kernel grid_sorted --input same.csv --output out.csv
    message_matches 'too many contacts' "grid_sorted on 100,000 coincident particles"
    # how long it took is reported, not asserted (tests make no timing claims;
    # a release build refuses in about a second, docs/cli.md says)
    note "grid_sorted refused in $((SECONDS - start)) s"
}

# NSEARCH_FAIL_ALLOC=k: the library's k-th allocation (and every later one)
# fails. For every k of a whole run (read, search, sort, write) the tool
# exits 1 with an out-of-memory message, leaving out.csv as it was and no
# temporary file; past the run's last allocation it succeeds.
case_alloc_failures() {
    load_kernels
    gen uniform 300 1 u.csv
    ok ref pairs --kernel naive --input u.csv --output ref.csv
    local kernel fmt k
    for kernel in naive grid_sorted hash_parallel; do
        for fmt in csv bin; do
            k=1
            while [ $k -le 200 ]; do
                [ -e out.csv ] || printf '%s\n' "$PRECIOUS" >out.csv
                cp out.csv "$K/out.before"
                ls_dir >"$K/dir.before"
                run_env "alloc-$k" "NSEARCH_FAIL_ALLOC=$k" pairs --kernel "$kernel" --input u.csv \
                    --output out.csv --format "$fmt"
                if [ "$RC" -eq 0 ]; then
                    note "$kernel $fmt: succeeds from k = $k on"
                    printf '%s\n' "$PRECIOUS" >out.csv
                    break
                fi
                [ "$RC" -eq 1 ] || fail "$kernel $fmt, allocation $k fails: exit $RC, want 1"
                grep -Eiq 'memory' "$K/alloc-$k.err" ||
                    fail "$kernel $fmt, allocation $k fails: no out-of-memory message: $(head -1 "$K/alloc-$k.err")"
                cmp -s out.csv "$K/out.before" || fail "$kernel $fmt, allocation $k fails: out.csv modified"
                ls_dir >"$K/dir.after"
                cmp -s "$K/dir.before" "$K/dir.after" ||
                    fail "$kernel $fmt, allocation $k fails: the directory changed"
                k=$((k + 1))
            done
            [ $k -gt 1 ] || fail "$kernel $fmt: no allocation failed (is NSEARCH_FAIL_ALLOC honoured?)"
            [ $k -le 200 ] || fail "$kernel $fmt: still failing after 200 allocations"
        done
    done
}

# grid_dense on a huge sparse bounding box (1e4^3 cells of size 1 > 1 GiB): exit 1;
# the other kernels succeed.
case_grid_dense_cap() {
    load_kernels
    printf 'x,y,z,r\n0,0,0,0.5\n0.5,0,0,0.5\n1e4,1e4,1e4,0.5\n' >sparse.csv
    local want='i,j,overlap,nx,ny,nz\n0,1,0.5,1,0,0\n'
    printf '%b' "$want" >"$K/want"
    for k in "${KERNELS[@]}"; do
        if [ "$k" = grid_dense ]; then
            expect_fail 1 "" "" pairs --kernel grid_dense --input sparse.csv --output out.csv
            message_matches 'memory|bytes|[0-9] ?[KMGTPE]i?B|too.?large' "grid_dense on a huge box"
            expect_fail 1 "" "" pairs --kernel grid_dense --input sparse.csv --output out.csv --check
            continue
        fi
        run "sp_$k" pairs --kernel "$k" --input sparse.csv
        case " $KNOWN_KERNELS " in
        *" $k "*)
            if [ "$RC" -ne 0 ]; then
                fail "$k on a huge sparse box: exit $RC, want 0"
                show_err "sp_$k"
            else
                same "$K/want" "$K/sp_$k.out" "$k on a huge sparse box"
            fi
            ;;
        *) # a kernel this test does not know: may refuse, must not be wrong
            if [ "$RC" -eq 0 ]; then same "$K/want" "$K/sp_$k.out" "$k on a huge sparse box"; elif [ "$RC" -ne 1 ]; then fail "$k on a huge sparse box: exit $RC"; fi ;;
        esac
    done
}

# ----------------------------------------------------------------- gen

case_gen_format() {
    local w
    for w in $KNOWN_WORKLOADS; do
        ok "$w" gen --workload "$w" --n 500 --seed 3 || continue
        local f=$K/$w.out
        [ "$(head -n 1 "$f")" = "x,y,z,r" ] || fail "gen $w: first line is not x,y,z,r"
        [ "$(wc -l <"$f")" -eq 501 ] || fail "gen $w --n 500: $(($(wc -l <"$f") - 1)) data lines"
        awk -F, 'NR > 1 {
                if (NF != 4) { print "    line " NR ": " NF " fields"; bad = 1 }
                for (k = 1; k <= 4; k++) if ($k !~ /^-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$/ || $k ~ /^-0$/) { print "    line " NR ": not %g: " $k; bad = 1 }
                if ($4 < 0) { print "    line " NR ": negative radius"; bad = 1 }
            } END { exit bad }' "$f" | head -5
        [ "${PIPESTATUS[0]}" -eq 0 ] || fail "gen $w: malformed data lines"
        if [ -n "$PYTHON" ]; then
            $PYTHON "$HERE/cli_ref.py" checknum "$f" | sed 's/^/    /'
            [ "${PIPESTATUS[0]}" -eq 0 ] || fail "gen $w: numbers are not %.9g of floats"
        fi
    done
    # n = 1 and n = 0 need not be special: they are files the reader takes
    ok one gen --workload uniform --n 1 --seed 1 && [ "$(wc -l <"$K/one.out")" -eq 2 ] || fail "gen --n 1: not one data line"
}

case_gen_determinism() {
    ok a gen --workload clusters --n 1000 --seed 17 || return
    ok b gen --workload clusters --n 1000 --seed 17 && same "$K/a.out" "$K/b.out" "gen twice with --seed 17"
    ok c gen --workload clusters --n 1000 --seed 18 && cmp -s "$K/a.out" "$K/c.out" && fail "gen --seed 17 and --seed 18 give the same particles"
    ok d gen --workload clusters --n 1000 && ok e gen --workload clusters --n 1000 && same "$K/d.out" "$K/e.out" "gen without --seed, twice"
    for w in $KNOWN_WORKLOADS; do
        ok "s1_$w" gen --workload "$w" --n 300 --seed 1 && ok "s2_$w" gen --workload "$w" --n 300 --seed 2 &&
            cmp -s "$K/s1_$w.out" "$K/s2_$w.out" && fail "gen $w: seeds 1 and 2 give the same particles"
    done
}

case_gen_output() {
    for w in $KNOWN_WORKLOADS; do
        ok "so_$w" gen --workload "$w" --n 700 --seed 5 || continue
        ok "fo_$w" gen --workload "$w" --n 700 --seed 5 --output "$w.csv" || continue
        [ -s "$K/fo_$w.out" ] && fail "gen --output: stdout not empty"
        same "$K/so_$w.out" "$w.csv" "gen $w --output vs stdout"
    done
    # --output replaces an existing file
    printf '%s\n' "$PRECIOUS" >old.csv
    ok over gen --workload uniform --n 700 --seed 5 --output old.csv && same "$K/so_uniform.out" old.csv "gen --output over an existing file"
}

case_gen_roundtrip() {
    load_kernels
    local w
    for w in $KNOWN_WORKLOADS; do
        ok "g_$w" gen --workload "$w" --n 1500 --seed 21 --output "$w.csv" || continue
        okv "s_$w" pairs --kernel hash_parallel --input "$w.csv" --stats --output "$w.contacts" || continue
        has_number "$K/s_$w.err" 1500 || fail "gen $w --n 1500 | pairs --stats: particle count 1500 not reported"
        ok "n_$w" pairs --kernel naive --input "$w.csv" && same "$K/n_$w.out" "$w.contacts" "gen $w -> pairs hash_parallel vs naive"
        check_csv "$w.contacts" "gen $w -> pairs"
    done
}

# ---------------------------------------------------------------- Ctrl-C

# start_bg ARGS...: the tool in the background with every signal at its default
# action (a non-interactive shell starts background jobs with SIGINT and SIGQUIT
# ignored, and the tool leaves an ignored signal ignored; a real Ctrl-C hits a
# foreground process that has it at the default).
start_bg() {
    if env --default-signal true 2>/dev/null; then
        env --default-signal "$BIN" "$@" >"$K/bg.out" 2>"$K/bg.err" &
    else
        set -m
        "$BIN" "$@" >"$K/bg.out" 2>"$K/bg.err" &
        set +m
    fi
    BGPID=$!
}

# wait_bg SECONDS: waits for the background run; sets BGRC (or kills it and fails).
wait_bg() {
    local limit=$1 t=0
    while kill -0 "$BGPID" 2>/dev/null && [ "$t" -lt $((limit * 10)) ]; do
        sleep 0.1
        t=$((t + 1))
    done
    if kill -0 "$BGPID" 2>/dev/null; then
        fail "nsearch still running ${limit}s after SIGINT"
        kill -KILL "$BGPID" 2>/dev/null
    fi
    wait "$BGPID"
    BGRC=$?
}

# SIGINT during the search (naive on 300,000 particles takes far longer than 1.5 s).
case_sigint_search() {
    gen uniform 300000 2 big.csv
    printf '%s\n' "$PRECIOUS" >out.csv
    cp out.csv "$K/out.before"
    ls_dir >"$K/dir.before"
    start_bg pairs --kernel naive --input big.csv --output out.csv
    sleep 1.5
    kill -0 "$BGPID" 2>/dev/null || fail "nsearch pairs --kernel naive on 300000 particles ended within 1.5 s (exit?)"
    kill -INT "$BGPID" 2>/dev/null
    wait_bg 15
    note "exit status after SIGINT: $BGRC; stderr: $(head -c 300 "$K/bg.err")"
    [ "$BGRC" -ne 0 ] || fail "nsearch exited 0 after SIGINT during the search"
    cmp -s out.csv "$K/out.before" || fail "SIGINT: the existing output file was modified ($(wc -c <out.csv) bytes now)"
    ls_dir >"$K/dir.after"
    if ! cmp -s "$K/dir.before" "$K/dir.after"; then
        fail "SIGINT: the directory changed (a temporary file left behind?):"
        diff "$K/dir.before" "$K/dir.after" | sed 's/^/    /'
    fi
    [ "$FAILS" -eq 0 ] && rm -f big.csv
}

# SIGINT while the output is being written: 1200 particles all touching
# (720,000 contacts, tens of MB of CSV). The directory is watched for a new
# (temporary) file or a change to out.csv, and SIGINT is sent as soon as one appears.
case_sigint_write() {
    gen uniform 1200 3 p4.csv
    awk -F, 'NR == 1 { print "x,y,z"; next } { print $1 "," $2 "," $3 }' p4.csv >p.csv
    rm -f p4.csv
    printf '%s\n' "$PRECIOUS" >out.csv
    cp out.csv "$K/out.before"
    ls_dir >"$K/dir.before"
    local n0 seen=0 files
    n0=$(ls -A | wc -l)
    sleep 0.05
    touch "$K/stamp" # newer than out.csv: out.csv -nt stamp means it is being written
    shopt -s nullglob dotglob
    start_bg pairs --kernel hash_serial --input p.csv --radius 1e6 --output out.csv
    local start=$SECONDS
    while kill -0 "$BGPID" 2>/dev/null && [ $((SECONDS - start)) -lt 60 ]; do
        files=(*)
        if [ "${#files[@]}" -ne "$n0" ] || [ out.csv -nt "$K/stamp" ] || [ ! -e out.csv ]; then
            seen=1
            kill -INT "$BGPID" 2>/dev/null
            break
        fi
        sleep 0.002
    done
    shopt -u nullglob dotglob
    wait_bg 15
    note "write seen: $seen; exit status: $BGRC; stderr: $(head -c 300 "$K/bg.err")"
    ls_dir >"$K/dir.after"
    if ! cmp -s "$K/dir.before" "$K/dir.after"; then
        fail "SIGINT while writing: the directory changed (a temporary file left behind?):"
        diff "$K/dir.before" "$K/dir.after" | sed 's/^/    /'
    fi
    if cmp -s out.csv "$K/out.before"; then
        note "out.csv unchanged"
    else
        # Only acceptable if the run had completed (rename) before the signal arrived.
        local lines
        lines=$(wc -l <out.csv)
        if [ "$lines" -eq $((1 + 1200 * 1199 / 2)) ] && [ -z "$(tail -c 1 out.csv)" ]; then
            note "out.csv complete: the rename came before SIGINT"
        else
            fail "SIGINT while writing: out.csv is neither the old content nor the complete output ($lines lines)"
        fi
    fi
    if [ "$seen" -eq 0 ]; then
        note "no write seen before the run ended: the write phase was not interrupted this time"
        [ "$BGRC" -eq 0 ] || fail "uninterrupted run exited $BGRC"
    fi
    rm -f out.csv
}

# ------------------------------------------------- errors: usage (exit 2)

case_err_no_command() { expect_fail 2 "" ""; }
case_err_unknown_command() {
    expect_fail 2 "" "" frobnicate --output out.csv
    message_matches frobnicate "unknown command"
}
case_err_unknown_option() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --output out.csv --frobnicate
    message_matches '--frobnicate' "unknown option"
}
case_err_unknown_kernel() {
    good_input
    expect_fail 2 "" "" pairs --kernel quantum --input good.csv --output out.csv
    message_matches quantum "unknown kernel"
}
case_err_missing_value() {
    good_input
    expect_fail 2 "" "" pairs --input good.csv --output out.csv --kernel
    message_matches '--kernel' "missing value"
}
case_err_missing_kernel() {
    good_input
    expect_fail 2 "" "" pairs --input good.csv --output out.csv
    message_matches 'kernel' "no --kernel"
}
case_err_missing_input_option() {
    expect_fail 2 "" "" pairs --kernel naive --output out.csv
    message_matches 'input' "no --input"
}
case_err_threads_negative() {
    good_input
    expect_fail 2 "" "" pairs --kernel hash_parallel --input good.csv --output out.csv --threads -3
    message_matches 'threads' "--threads -3"
}
case_err_threads_zero() {
    good_input
    expect_fail 2 "" "" pairs --kernel hash_parallel --input good.csv --output out.csv --threads 0
    message_matches 'threads' "--threads 0"
}
case_err_threads_garbage() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive_omp --input good.csv --output out.csv --threads 2x
    expect_fail 2 "" "" pairs --kernel naive_omp --input good.csv --output out.csv --threads ''
    expect_fail 2 "" "" pairs --kernel naive_omp --input good.csv --output out.csv --threads 99999999999999999999
}
case_err_table_size_zero() {
    good_input
    expect_fail 2 "" "" pairs --kernel hash_serial --input good.csv --output out.csv --table-size 0
    message_matches 'table' "--table-size 0"
    expect_fail 2 "" "" pairs --kernel hash_serial --input good.csv --output out.csv --table-size -7
}
case_err_format_xml() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --output out.csv --format xml
    message_matches xml "--format xml"
}
case_err_order_unknown() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --output out.csv --order random
    message_matches random "--order random"
}
case_err_order_check() {
    good_input
    expect_fail 2 "" "" pairs --kernel grid_sorted --input good.csv --output out.csv --order any --check
    message_matches 'not with --order any' "--order any --check"
}
case_err_radius_option() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive --input good3.csv --output out.csv --radius -1
    expect_fail 2 "" "" pairs --kernel naive --input good3.csv --output out.csv --radius abc
    expect_fail 2 "" "" pairs --kernel naive --input good3.csv --output out.csv --radius nan
}
case_err_gen_n_not_number() {
    expect_fail 2 "" "" gen --workload uniform --n abc --output out.csv
    expect_fail 2 "" "" gen --workload uniform --n 12x --output out.csv
    expect_fail 2 "" "" gen --workload uniform --n -5 --output out.csv
}
case_err_gen_unknown_workload() {
    expect_fail 2 "" "" gen --workload tornado --n 100 --output out.csv
    message_matches tornado "unknown workload"
}

# ------------------------------------------ errors: invalid input (exit 2)

case_err_missing_input() {
    expect_fail 2 "no-such-file.csv" "" pairs --kernel naive --input no-such-file.csv --output out.csv
}
case_err_input_directory() {
    mkdir adir
    expect_fail 2 "adir" "" pairs --kernel naive --input adir --output out.csv
}
case_err_not_number() {
    printf '# three columns\nx,y,z\n\n0,0,0\n# comment\n1,2,abc\n3,3,3\n' >bad.csv
    expect_fail 2 bad.csv 6 pairs --kernel naive --input bad.csv --radius 0.5 --output out.csv
}
case_err_trailing_garbage() {
    printf 'x,y,z,r\n0,0,0,0.5\n\n1,2,3,0.5x\n' >bad.csv
    expect_fail 2 bad.csv 4 pairs --kernel hash_serial --input bad.csv --output out.csv
}
case_err_empty_field() {
    printf '# c\nx,y,z,r\n1,,3,0.5\n' >bad.csv
    expect_fail 2 bad.csv 3 pairs --kernel naive --input bad.csv --output out.csv
}
case_err_field_count() {
    printf 'x,y,z,r\n0,0,0,0.5\n1,1,1,0.5\n# comment\n1,2,3\n4,4,4,0.5\n' >bad.csv
    expect_fail 2 bad.csv 5 pairs --kernel naive --input bad.csv --output out.csv
}
case_err_field_count_more() {
    printf '\n0,0,0,0.5\n\n1,2,3,0.5,9\n' >bad.csv
    expect_fail 2 bad.csv 4 pairs --kernel grid_dense --input bad.csv --output out.csv
}
case_err_late_header() {
    printf '0,0,0,0.5\n1,1,1,0.5\n#\nx,y,z,r\n' >bad.csv
    expect_fail 2 bad.csv 4 pairs --kernel naive --input bad.csv --output out.csv
}
case_err_nan() {
    printf 'x,y,z,r\n#\n0,0,0,0.5\n0,nan,0,0.5\n' >bad.csv
    expect_fail 2 bad.csv 4 pairs --kernel naive --input bad.csv --output out.csv
}
case_err_inf() {
    printf 'x,y,z,r\n0,0,inf,0.5\n' >bad.csv
    expect_fail 2 bad.csv 2 pairs --kernel naive --input bad.csv --output out.csv
    printf 'x,y,z,r\n0,0,0,0.5\n\n0,0,0,-INFINITY\n' >bad2.csv
    expect_fail 2 bad2.csv 4 pairs --kernel naive --input bad2.csv --output out.csv
}
case_err_float_range() {
    printf 'x,y,z,r\n0,0,0,0.5\n# comment\n\n1e39,0,0,0.5\n' >bad.csv
    expect_fail 2 bad.csv 5 pairs --kernel naive --input bad.csv --output out.csv
    printf '0,0,0,0.5\n1,1,1,3.5e38\n' >bad2.csv
    expect_fail 2 bad2.csv 2 pairs --kernel naive --input bad2.csv --output out.csv
    printf 'x,y,z\n0,0,-1e400\n' >bad3.csv
    expect_fail 2 bad3.csv 2 pairs --kernel naive --input bad3.csv --radius 1 --output out.csv
}
case_err_negative_radius() {
    printf '# radii\nx,y,z,r\n0,0,0,0.5\n\n# next\n1,0,0,0.5\n1,1,1,-1\n' >points.csv
    expect_fail 2 points.csv 7 pairs --kernel naive --input points.csv --output out.csv
    message_matches 'radius' "negative radius"
    message_matches 'negative' "negative radius"
    message_matches '-1' "negative radius"
}
case_err_crlf_line() {
    printf 'x,y,z,r\r\n0,0,0,0.5\r\n\r\n# c\r\n1,zz,1,0.5\r\n' >bad.csv
    expect_fail 2 bad.csv 5 pairs --kernel naive --input bad.csv --output out.csv
    case $ERRLINE in *$'\r'*) fail "CRLF: the message contains a carriage return" ;; esac
}
case_err_three_col_no_radius() {
    printf 'x,y,z\n0,0,0\n0.6,0,0\n' >three.csv
    expect_fail 2 three.csv "" pairs --kernel naive --input three.csv --output out.csv
    printf '0,0,0\n0.6,0,0\n' >three2.csv
    expect_fail 2 three2.csv "" pairs --kernel naive --input three2.csv --output out.csv
}
case_err_radius_with_four_col() {
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n' >four.csv
    expect_fail 2 four.csv "" pairs --kernel naive --input four.csv --radius 0.5 --output out.csv
}
# A write error on standard output (a full disk): exit 1 with a one-line message.
case_err_write_error() {
    [ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
    good_input
    local what
    for what in "pairs --kernel naive --input good.csv" "pairs --kernel naive --input good.csv --format bin" \
        "gen --workload uniform --n 10" "kernels"; do
        # shellcheck disable=SC2086
        "$BIN" $what >/dev/full 2>"$K/full.err"
        RC=$?
        [ "$RC" -eq 1 ] || fail "nsearch $what >/dev/full: exit $RC, want 1"
        if [ "$(wc -l <"$K/full.err")" -ne 1 ]; then
            fail "nsearch $what >/dev/full: stderr is not one line (a write error must be reported):"
            sed 's/^/    | /' "$K/full.err" | head -5
        else
            note "nsearch $what >/dev/full: $(cat "$K/full.err")"
        fi
    done
}
case_err_bad_output_dir() {
    # an output in a folder that does not exist: not the input's fault, exit 1
    good_input
    run bad_out pairs --kernel naive --input good.csv --output no-such-dir/out.csv
    [ "$RC" -eq 1 ] || fail "--output no-such-dir/out.csv: exit $RC, want 1 (docs/cli.md: a write error)"
    [ "$(wc -l <"$K/bad_out.err")" -eq 1 ] || fail "--output no-such-dir/out.csv: stderr is not one line"
    [ -e no-such-dir ] && fail "--output no-such-dir/out.csv: created the folder"
}

# ------------------------------------------------------------------ sim
# `nsearch sim`: the particle simulation (see `nsearch sim --help`).

# sim_dir_is DIR NAMES...: DIR holds exactly these entries (no temporary file).
sim_dir_is() {
    local dir=$1
    shift
    local want got
    want=$(printf '%s\n' "$@" | LC_ALL=C sort)
    got=$(ls -A "$dir" | LC_ALL=C sort)
    if [ "$want" != "$got" ]; then
        fail "$dir holds other files than expected (a temporary file left behind?):"
        diff <(echo "$want") <(echo "$got") | sed 's/^/    /'
        return 1
    fi
    return 0
}

# sim_check_frame FRAME N BOX WHAT: a particle file x,y,z,r with N particles,
# all finite, every sphere inside the box of BOX (box.csv), within float rounding.
sim_check_frame() {
    local f=$1 n=$2 box=$3 what=$4 msg
    msg=$(awk -F, -v n="$n" -v box="$(sed -n 2p "$box")" '
        function bad(why) { nb++; if (nb <= 5) printf "line %d: %s: %s\n", NR, why, $0 }
        BEGIN { split(box, b, ","); for (k = 1; k <= 3; k++) tol[k] = 1e-6 * (b[k] < 0 ? -b[k] : b[k]) + 1e-6 * (b[k+3] < 0 ? -b[k+3] : b[k+3]) + 1e-6 }
        NR == 1 { if ($0 != "x,y,z,r") bad("header is not x,y,z,r"); next }
        {
            if (NF != 4) { bad("not 4 fields"); next }
            for (k = 1; k <= 4; k++) if ($k !~ /^-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$/) bad("field " k " is not a finite number")
            for (k = 1; k <= 3; k++)
                if ($k - $4 < b[k] - tol[k] || $k + $4 > b[k+3] + tol[k]) bad("sphere outside the box on axis " k)
            rows++
        }
        END { if (rows != n) printf "%d particles, want %d\n", rows, n }' "$f")
    if [ -n "$msg" ]; then
        fail "$what: $(basename "$f") is not a frame of $n particles inside the box"
        echo "$msg" | sed 's/^/    /'
        return 1
    fi
    return 0
}

case_sim_help() {
    ok sim_help sim --help || return
    for opt in --n --layout --seed --input --kernel --frames --dt --iterations --skin --threads \
        --output-dir --every --stats; do
        grep -Fq -- "$opt" "$K/sim_help.out" || fail "nsearch sim --help does not mention $opt"
    done
    ok help --help && { grep -Fq sim "$K/help.out" || fail "nsearch --help does not mention sim"; }
}

case_sim_stats() {
    okv stats sim --n 500 --frames 20 --stats || return
    sed 's/^/    stats: /' "$K/stats.err"
    [ -s "$K/stats.out" ] && fail "sim --stats: stdout is not empty"
    awk '$1 == "fps" { if ($2 + 0 > 0) ok = 1 } END { exit !ok }' "$K/stats.err" ||
        fail "sim --stats: no line 'fps <positive number>' on stderr"
    has_number "$K/stats.err" 500 || fail "sim --stats: the particle count 500 is not on stderr"
    has_number "$K/stats.err" 20 || fail "sim --stats: the frame count 20 is not on stderr"
    for word in search resolve; do
        grep -iq "$word" "$K/stats.err" || fail "sim --stats: no '$word' time on stderr"
    done
    # without --stats, without --output-dir: nothing at all
    ok quiet sim --n 200 --frames 5 && [ -s "$K/quiet.out" ] && fail "sim without --stats: stdout not empty"
}

# --stats-json: one JSON object on stdout with the figures --stats prints.
case_sim_stats_json() {
    command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
    okv both sim --n 500 --frames 20 --threads 2 --stats --stats-json || return
    python3 - "$K/both.out" "$K/both.err" <<'PY' || fail "sim --stats-json does not match --stats"
import json, sys
s = json.load(open(sys.argv[1]))
text = {}
for line in open(sys.argv[2]):
    key, _, value = line.rstrip("\n").partition("  ")
    text[key.strip()] = value.strip()
want = {"particles", "kernel", "threads", "frames", "contacts_per_frame", "search_ms",
        "resolve_ms", "integrate_ms", "frame_ms", "fps", "search_share", "searches_rebuilt",
        "kinetic_over_released", "max_overlap_over_r"}
assert set(s) == want, sorted(set(s) ^ want)
assert s["particles"] == 500 and s["frames"] == 20 and s["threads"] == 2, s
assert text["kernel"] == "%s (%d threads)" % (s["kernel"], s["threads"]), text["kernel"]
assert text["contacts/frame"] == "%.1f" % s["contacts_per_frame"], text
assert text["searches rebuilt"] == str(s["searches_rebuilt"]), text
assert text["max overlap/r"] == "%.4f" % s["max_overlap_over_r"], text
assert text["fps"] == "%.2f" % s["fps"] and s["fps"] > 0, text
PY
    ok quiet sim --n 200 --frames 5 --stats-json && [ "$(wc -l <"$K/quiet.out")" -eq 1 ] ||
        fail "sim --stats-json: not one line on stdout"
}

# --cache-dir: a costly layout's particles kept as a file and read back; the
# frames are those of --input of that file and of no cache at all.
case_sim_cache_dir() {
    mkdir cache a b c
    ok first sim --n 400 --layout settled --frames 6 --cache-dir cache --output-dir a || return
    [ -s cache/settled-v3-n400-seed1.csv ] || fail "--cache-dir: no cache/settled-v3-n400-seed1.csv: $(ls cache)"
    local before
    before=$(stat -c %Y.%s cache/settled-v3-n400-seed1.csv)
    ok again sim --n 400 --layout settled --frames 6 --cache-dir cache --output-dir b || return
    [ "$(stat -c %Y.%s cache/settled-v3-n400-seed1.csv)" = "$before" ] || fail "--cache-dir: the cache file was written again"
    diff -r a b >/dev/null || fail "--cache-dir: frames from the cache differ from the first run's"
    ok input sim --input cache/settled-v3-n400-seed1.csv --frames 6 --output-dir c || return
    diff -r a c >/dev/null || fail "--cache-dir: frames differ from --input of the cache file"
    # never over something that is not a regular file
    ln -s /nonexistent/target cache/settled-v3-n10-seed1.csv
    okv link sim --n 10 --layout settled --frames 1 --cache-dir cache || return
    [ -L cache/settled-v3-n10-seed1.csv ] || fail "--cache-dir: a symbolic link was replaced"
    grep -q "cannot keep" "$K/link.err" || fail "--cache-dir: no message when the cache cannot be written"
    expect_fail 2 "" "" sim --input cache/settled-v3-n400-seed1.csv --cache-dir cache
}

# --cache-dir: the cache file proves what it holds (tools/common/workload_cache.h). Its
# first line names the pile and the hash of its floats; a file damaged in any
# way (a digit of a coordinate, a radius x10, no checksum line, cut mid-line,
# another n recorded) is made again with one warning, back byte for byte, and
# the run is the same as from the intact file.
# cache_damage NAME: damages cache/$CACHE_FILE from orig.csv (see below).
cache_damage() {
    local f=cache/$CACHE_FILE
    case $1 in
    digit) # line 10's x: its first digit + 1 (mod 10), still a number
        awk -F, -v OFS=, 'NR == 10 { c = substr($1, 1, 1); $1 = ((c + 1) % 10) substr($1, 2) } 1' orig.csv >"$f" ;;
    radius) awk -F, -v OFS=, 'NR == 10 { $4 = $4 * 10 } 1' orig.csv >"$f" ;;
    no_line) sed 1d orig.csv >"$f" ;;
    cut) head -c $(($(head -n 99 orig.csv | wc -c) + 5)) orig.csv >"$f" ;;
    n) sed '1s/ n=300 / n=301 /' orig.csv >"$f" ;;
    esac
    cmp -s "$f" orig.csv && fail "cache damage $1: the file did not change"
}
# made_again LABEL WHY: LABEL's stderr is one warning that cache/$CACHE_FILE
# failed its check, with a reason matching WHY (an ERE).
made_again() {
    local label=$1 want
    want="^$WARN_PREFIX: warning: cache/$CACHE_FILE failed its check \\(($2)\\): made again\$"
    [ "$(grep -c "warning:" "$K/$label.err")" -eq 1 ] ||
        { fail "$label: not one warning on stderr"; show_err "$label"; return; }
    grep -Eq "$want" "$K/$label.err" ||
        { fail "$label: no warning like $want"; show_err "$label"; }
}
case_sim_cache_check() {
    CACHE_FILE=settled-v3-n300-seed1.csv WARN_PREFIX=nsearch
    local f=cache/$CACHE_FILE sim=(sim --n 300 --layout settled --frames 1 --cache-dir cache)
    mkdir cache ref
    ok first "${sim[@]}" --output-dir ref || return
    head -n 1 "$f" | grep -Eq '^# nsearch-cache workload=settled version=3 n=300 seed=1 fnv1a64=[0-9a-f]{16}$' ||
        fail "cache: first line is not the checksum line: $(head -n 1 "$f")"
    cp "$f" orig.csv
    # still a particle file for pairs and sim --input
    ok pairs pairs --kernel naive --input "$f" || return
    local damage why
    for damage in digit radius no_line cut n; do
        case $damage in
        digit | radius) why="its checksum differs" ;;
        no_line) why="it has no checksum line" ;;
        cut) why="it holds [0-9]+ particles, not 300|line [0-9]+: .*" ;;
        n) why="its checksum line says n=301, not n=300" ;;
        esac
        cache_damage $damage
        mkdir "out_$damage"
        okv "$damage" "${sim[@]}" --output-dir "out_$damage" || continue
        made_again "$damage" "$why"
        same "$f" orig.csv "cache damaged ($damage), then made again"
        diff -r ref "out_$damage" >/dev/null || fail "cache damaged ($damage): the frames differ"
    done
    # and the file made again is read quietly
    ok quiet "${sim[@]}" || return
}

# The same for nsearch-bench --cache-dir: a pile made by nsearch sim is read as
# it is; damaged, it is made again with the warning the sweep relays, and the
# contacts measured are the intact pile's.
case_bench_cache_check() {
    [ -n "${NS_BENCH:-}" ] && [ -x "$NS_BENCH" ] || { echo "SKIP: no nsearch-bench (NS_BENCH)"; exit 77; }
    CACHE_FILE=settled-v3-n1000-seed1.csv WARN_PREFIX=nsearch-bench
    local f=cache/$CACHE_FILE
    local bench=("$NS_BENCH" --cache-dir cache --workloads settled --kernels naive --threads 1
        --max-n 1000 --no-results --benchmark_min_time=0.001 --benchmark_repetitions=1)
    mkdir cache
    ok first sim --n 1000 --layout settled --frames 0 --cache-dir cache || return
    cp "$f" orig.csv
    local damage contacts='' got
    for damage in none digit radius; do
        [ $damage = none ] || cache_damage $damage
        "${bench[@]}" >"$K/bench_$damage.out" 2>"$K/bench_$damage.err" ||
            { fail "bench ($damage): exited $?"; show_err "bench_$damage"; continue; }
        got=$(sed -n 's/^nsearch-bench: reference for settled n=1000 \.\.\. \([0-9]*\) contacts.*/\1/p' "$K/bench_$damage.err")
        [ -n "$got" ] || { fail "bench ($damage): no reference line"; show_err "bench_$damage"; continue; }
        if [ $damage = none ]; then
            contacts=$got
            grep -q "warning:" "$K/bench_none.err" && fail "bench: a warning for nsearch sim's pile"
            grep -q "settled 1000 particles in" "$K/bench_none.err" && fail "bench: nsearch sim's pile was not read"
        else
            made_again "bench_$damage" "its checksum differs"
            [ "$got" = "$contacts" ] || fail "bench ($damage): $got contacts, the intact pile has $contacts"
            same "$f" orig.csv "bench: cache damaged ($damage), then made again"
        fi
    done
}

case_sim_frames() {
    mkdir fr
    ok frames sim --n 300 --frames 20 --every 5 --output-dir fr || return
    [ -s "$K/frames.out" ] && fail "sim --output-dir: stdout not empty"
    sim_dir_is fr box.csv frame-000000.csv frame-000005.csv frame-000010.csv frame-000015.csv \
        frame-000020.csv
    [ "$(sed -n 1p fr/box.csv)" = "lo_x,lo_y,lo_z,hi_x,hi_y,hi_z" ] ||
        fail "box.csv: header is not lo_x,lo_y,lo_z,hi_x,hi_y,hi_z: $(sed -n 1p fr/box.csv)"
    [ "$(wc -l <fr/box.csv)" -eq 2 ] || fail "box.csv: not a header and one line"
    awk -F, 'NR == 2 { exit !(NF == 6 && $1 < $4 && $2 < $5 && $3 < $6) }' fr/box.csv ||
        fail "box.csv: not lo < hi on every axis: $(sed -n 2p fr/box.csv)"
    local f c
    for f in fr/frame-*.csv; do
        sim_check_frame "$f" 300 fr/box.csv "sim --output-dir"
        ok "pairs_$(basename "$f" .csv)" pairs --kernel naive --input "$f" || continue
        check_csv "$K/pairs_$(basename "$f" .csv).out" "nsearch pairs on $(basename "$f")"
    done
    c=$(contact_count "$K/pairs_frame-000020.out")
    note "frame 20: $c contacts"
    cmp -s fr/frame-000000.csv fr/frame-000020.csv && fail "frames 0 and 20 are identical: nothing moved"
    # the radii are the layout's, unchanged through the frames
    cut -d, -f4 fr/frame-000000.csv >"$K/r0"
    cut -d, -f4 fr/frame-000020.csv >"$K/r20"
    same "$K/r0" "$K/r20" "radii of frames 0 and 20"
    # the last frame is written even when --every does not divide --frames
    mkdir odd
    ok odd sim --n 100 --frames 12 --every 5 --output-dir odd &&
        sim_dir_is odd box.csv frame-000000.csv frame-000005.csv frame-000010.csv frame-000012.csv
    # --every 1 (the default): every frame
    mkdir all
    ok all sim --n 100 --frames 3 --output-dir all &&
        sim_dir_is all box.csv frame-000000.csv frame-000001.csv frame-000002.csv frame-000003.csv
    # frames 0..12 of the odd run equal the same frames of a run with --every 1
    mkdir all12
    ok all12 sim --n 100 --frames 12 --output-dir all12 &&
        for f in frame-000000.csv frame-000005.csv frame-000010.csv frame-000012.csv; do
            same odd/$f all12/$f "--every 5 vs --every 1: $f"
        done
}

# sim_run_dir LABEL DIR ARGS...: runs sim with --output-dir DIR (created here).
sim_run_dir() {
    local label=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    ok "$label" sim "$@" --output-dir "$dir"
}

# sim_same_dirs A B WHAT: the same files, byte-identical.
sim_same_dirs() {
    local f n=0
    if [ "$(ls -A "$1")" != "$(ls -A "$2")" ]; then
        fail "$3: $1 and $2 hold different files"
        return 1
    fi
    for f in "$1"/*; do
        same "$f" "$2/$(basename "$f")" "$3" || return 1
        n=$((n + 1))
    done
    note "$3: $n files identical"
}

case_sim_threads_identical() {
    sim_run_dir t1 t1 --n 800 --frames 40 --every 4 --threads 1 || return
    sim_run_dir t2 t2 --n 800 --frames 40 --every 4 --threads 2 &&
        sim_same_dirs t1 t2 "--threads 1 vs --threads 2"
    sim_run_dir t3 t3 --n 800 --frames 40 --every 4 --threads 3 &&
        sim_same_dirs t1 t3 "--threads 1 vs --threads 3"
    mkdir e1
    ok_env env1 OMP_NUM_THREADS=1 sim --n 800 --frames 40 --every 4 --output-dir e1 &&
        sim_same_dirs t1 e1 "--threads 1 vs OMP_NUM_THREADS=1"
    # a polydisperse layout, and the settled one
    sim_run_dir p1 p1 --n 600 --layout polydisperse --seed 3 --frames 30 --every 10 --threads 1 &&
        sim_run_dir p3 p3 --n 600 --layout polydisperse --seed 3 --frames 30 --every 10 --threads 3 &&
        sim_same_dirs p1 p3 "polydisperse: --threads 1 vs 3"
    sim_run_dir s1 s1 --n 400 --layout settled --frames 10 --every 5 --threads 1 &&
        sim_run_dir s2 s2 --n 400 --layout settled --frames 10 --every 5 --threads 2 &&
        sim_same_dirs s1 s2 "settled: --threads 1 vs 2"
    sim_check_frame s1/frame-000000.csv 400 s1/box.csv "--layout settled"
}

case_sim_kernels_identical() {
    load_kernels
    sim_run_dir naive k_naive --n 400 --frames 30 --kernel naive || return
    sim_check_frame k_naive/frame-000030.csv 400 k_naive/box.csv "naive"
    local k
    for k in "${KERNELS[@]}"; do
        [ "$k" = naive ] && continue
        sim_run_dir "k_$k" "k_$k" --n 400 --frames 30 --kernel "$k" &&
            sim_same_dirs k_naive "k_$k" "sim --kernel $k vs naive"
    done
    ok pairs30 pairs --kernel naive --input k_naive/frame-000030.csv &&
        note "spawned layout, frame 30: $(contact_count "$K/pairs30.out") contacts"
    # crowded starts: a settled pile, and a raw (overlapping) uniform workload
    gen uniform 400 6 raw.csv
    local start
    for start in "--layout settled --n 400" "--input raw.csv"; do
        local tag=${start%% *}
        tag=${tag#--}
        # shellcheck disable=SC2086
        sim_run_dir "${tag}_naive" "${tag}_naive" $start --frames 30 --every 10 --kernel naive || continue
        ok "${tag}_pairs" pairs --kernel naive --input "${tag}_naive/frame-000030.csv" &&
            note "$start, frame 30: $(contact_count "$K/${tag}_pairs.out") contacts"
        for k in "${KERNELS[@]}"; do
            [ "$k" = naive ] && continue
            # shellcheck disable=SC2086
            sim_run_dir "${tag}_$k" "${tag}_$k" $start --frames 30 --every 10 --kernel "$k" &&
                sim_same_dirs "${tag}_naive" "${tag}_$k" "$start: sim --kernel $k vs naive"
        done
    done
    # a skin reuses searches, the frames stay the same
    for d in 0.1 0.5; do
        sim_run_dir "skin_$d" "skin_$d" --n 400 --frames 30 --kernel grid_sorted --skin "$d" &&
            sim_same_dirs k_naive "skin_$d" "sim --skin $d vs naive"
    done
    okv skin_stats sim --n 400 --frames 200 --skin 0.3 --stats || return
    local rebuilt
    rebuilt=$(awk '/rebuilt/ { print $NF }' "$K/skin_stats.err")
    note "--skin 0.3, 200 frames: searches rebuilt $rebuilt"
    [ -n "$rebuilt" ] && [ "$rebuilt" -lt 200 ] 2>/dev/null ||
        fail "sim --skin 0.3 --stats: 'searches rebuilt' is not below the 200 frames: '$rebuilt'"
}

case_sim_input() {
    mkdir fr
    ok frames sim --n 300 --frames 10 --every 10 --output-dir fr || return
    # a frame fed back
    mkdir again
    ok again sim --input fr/frame-000010.csv --frames 5 --output-dir again || return
    sim_dir_is again box.csv frame-000000.csv frame-000001.csv frame-000002.csv frame-000003.csv \
        frame-000004.csv frame-000005.csv
    sim_check_frame again/frame-000005.csv 300 again/box.csv "sim --input a frame"
    cut -d, -f4 fr/frame-000010.csv >"$K/r_in"
    cut -d, -f4 again/frame-000005.csv >"$K/r_out"
    same "$K/r_in" "$K/r_out" "--input: the radii are the file's"
    # deterministic from the file, at any thread count
    mkdir again3
    ok again3 sim --input fr/frame-000010.csv --frames 5 --threads 3 --output-dir again3 &&
        sim_same_dirs again again3 "--input: default threads vs --threads 3"
    # a generated file, with comments and a header, also without --output-dir
    gen polydisperse 250 5 p.csv
    { echo "# a comment"; cat p.csv; } >pc.csv
    okv gen_in sim --input pc.csv --frames 5 --stats || return
    has_number "$K/gen_in.err" 250 || fail "sim --input: the particle count 250 is not on stderr"
    "$BIN" gen --workload settled --n 300 --seed 2 >settled.csv 2>"$K/gen_settled.err" ||
        die "nsearch gen --workload settled failed: $(head -3 "$K/gen_settled.err")"
    mkdir st
    ok settled_in sim --input settled.csv --frames 3 --output-dir st &&
        sim_check_frame st/frame-000003.csv 300 st/box.csv "sim --input a settled pile"
}

# sim_fail FILE ARGS...: expect_fail 2 with an empty --output-dir od, which
# stays empty.
sim_fail() {
    local file=$1
    shift
    rm -rf od
    mkdir od
    expect_fail 2 "$file" "" sim "$@" --output-dir od
    sim_dir_is od
}

case_sim_err_no_n() {
    sim_fail "" --frames 5
    message_matches '--n|input' "sim without --n"
}
case_sim_err_n_zero() {
    sim_fail "" --n 0
    message_matches '--n' "--n 0"
    sim_fail "" --n -5
    sim_fail "" --n abc
}
case_sim_err_unknown_layout() {
    sim_fail "" --n 100 --layout tornado
    message_matches tornado "unknown layout"
}
case_sim_err_unknown_kernel() {
    sim_fail "" --n 100 --kernel quantum
    message_matches quantum "unknown kernel"
}
case_sim_err_every_without_output_dir() {
    expect_fail 2 "" "" sim --n 100 --every 5
    message_matches 'every' "--every without --output-dir"
    sim_fail "" --n 100 --every 0
    message_matches 'every' "--every 0"
}
case_sim_err_output_dir_missing() {
    expect_fail 2 "" "" sim --n 100 --frames 3 --output-dir no-such-dir
    message_matches 'no-such-dir' "--output-dir that does not exist"
    [ -e no-such-dir ] && fail "--output-dir no-such-dir: created the folder"
    printf 'a file\n' >plain
    expect_fail 2 "" "" sim --n 100 --frames 3 --output-dir plain
    message_matches 'plain' "--output-dir a file"
}
case_sim_err_three_columns() {
    good_input
    sim_fail good3.csv --input good3.csv
    message_matches 'radi|x,y,z,r|column' "--input with a 3-column file"
}
case_sim_err_bad_input() {
    printf 'x,y,z,r\n0,0,0,0.5\n1,nan,0,0.5\n' >nan.csv
    sim_fail nan.csv --input nan.csv
    printf 'x,y,z,r\n0,0,0,0.5\n1,0,0,-0.5\n' >neg.csv
    sim_fail neg.csv --input neg.csv
    sim_fail no-such-file.csv --input no-such-file.csv
    printf 'x,y,z,r\n' >header.csv
    sim_fail header.csv --input header.csv
    message_matches 'no particles' "--input with a header and no particle"
}
case_sim_err_n_with_input() {
    good_input
    sim_fail "" --n 100 --input good.csv
    message_matches 'input' "--n with --input"
}
case_sim_err_dt_zero() {
    sim_fail "" --n 100 --dt 0
    message_matches '--dt' "--dt 0"
    sim_fail "" --n 100 --dt -0.01
    sim_fail "" --n 100 --dt nan
}
case_sim_err_bad_values() {
    sim_fail "" --n 100 --frames -1
    message_matches 'frames' "--frames -1"
    sim_fail "" --n 100 --iterations 0
    message_matches 'iterations' "--iterations 0"
    sim_fail "" --n 100 --skin -1
    message_matches 'skin' "--skin -1"
    sim_fail "" --n 100 --threads 0
    message_matches 'threads' "--threads 0"
    sim_fail "" --n 100 --seed x
    sim_fail "" --n 100 --frobnicate
    message_matches 'frobnicate' "unknown option"
}
case_sim_err_write_fails() {
    # frame 5 cannot be written (a folder of that name): refused before the
    # first frame is written, exit 1, one line naming it; the frames of an
    # earlier run stay exactly as they were, and nothing is added
    mkdir od od/frame-000005.csv
    printf '%s\n' "$PRECIOUS" >od/frame-000000.csv
    printf '%s\n' "$PRECIOUS" >od/box.csv
    run wf sim --n 50 --frames 12 --every 5 --output-dir od
    [ "$RC" -eq 1 ] || fail "sim with an unwritable frame: exit $RC, want 1 (a write error)"
    [ "$(wc -l <"$K/wf.err")" -eq 1 ] || fail "sim with an unwritable frame: stderr is not one line"
    grep -Fq frame-000005.csv "$K/wf.err" || fail "the message does not name the frame: $(head -1 "$K/wf.err")"
    note "$(head -1 "$K/wf.err")"
    sim_dir_is od box.csv frame-000000.csv frame-000005.csv
    [ "$(cat od/frame-000000.csv)" = "$PRECIOUS" ] || fail "an earlier frame 0 was replaced by a failed run"
    [ "$(cat od/box.csv)" = "$PRECIOUS" ] || fail "an earlier box.csv was replaced by a failed run"
    # the same when the input cannot be read: checked first, nothing written
    rmdir od/frame-000005.csv
    printf 'x,y,z,r\n0,0,0,bad\n' >bad.csv
    run bad sim --input bad.csv --frames 12 --every 5 --output-dir od
    [ "$RC" -eq 2 ] || fail "sim --input of a bad file: exit $RC, want 2"
    sim_dir_is od box.csv frame-000000.csv
    [ "$(cat od/frame-000000.csv)" = "$PRECIOUS" ] || fail "a bad input replaced an earlier frame"
}

# A run stopped by SIGTERM while it writes its frames leaves the folder as it
# was: the earlier run's frames unchanged, none of the new ones, and no private
# folder (.nsearch.*) behind.
case_sim_sigterm_frames() {
    mkdir od
    ok first sim --n 100 --frames 4 --every 2 --output-dir od || return
    (cd od && ls -A | LC_ALL=C sort && cat -- *) >"$K/before"
    start_bg sim --n 3000 --frames 100000 --output-dir od
    local start=$SECONDS staged=0
    shopt -s nullglob dotglob
    while kill -0 "$BGPID" 2>/dev/null && [ $((SECONDS - start)) -lt 60 ]; do
        local files=(od/.nsearch.*/frame-000003.csv)
        if [ "${#files[@]}" -gt 0 ]; then
            staged=1
            break
        fi
        sleep 0.01
    done
    shopt -u nullglob dotglob
    [ "$staged" -eq 1 ] || fail "no frame was seen being written within 60 s"
    kill -TERM "$BGPID" 2>/dev/null
    wait_bg 15
    [ "$BGRC" -ne 0 ] || fail "sim exited 0 after SIGTERM"
    note "exit status after SIGTERM: $BGRC"
    (cd od && ls -A | LC_ALL=C sort && cat -- *) >"$K/after"
    if ! cmp -s "$K/before" "$K/after"; then
        fail "SIGTERM: the folder changed (new frames, or a private folder left behind):"
        diff "$K/before" "$K/after" | head -5 | sed 's/^/    /'
    fi
}

# ------------------------------------------- output targets (docs/cli.md, "Output files")
# What --output does with each kind of path, as a table: a row is a name, the
# exit status it must give, a setup (makes ./target and what it needs) and a
# check (is what is at the path as it must be). Device nodes are mknod copies
# in the scratch folder, never the real /dev; a row whose setup cannot be made
# here (not root, a nodev mount) is skipped with a message. Each row runs for
# `pairs --output`, `gen --output`; a failing row must leave the directory as
# it was (no temporary file) with one line on stderr.

mode_of() { stat -c %a "$1"; }
owner_of() { stat -c %u:%g "$1"; }
kind_of() { stat -c %F "$1"; }

row_regular_setup() { printf '%s\n' "$PRECIOUS" >target && chmod 0640 target; }
row_regular_check() {
    same "$WANT" target "$1: regular file content"
    [ "$(mode_of target)" = 640 ] || fail "$1: mode $(mode_of target), want 640 (kept)"
}
row_new_setup() { rm -f target; }
row_new_check() {
    same "$WANT" target "$1: new file content"
    [ "$(mode_of target)" = "$(printf '%o' $((0666 & ~$(umask))))" ] || fail "$1: new file mode $(mode_of target)"
}
row_symlink_setup() { printf '%s\n' "$PRECIOUS" >real && chmod 0600 real && ln -s real target; }
row_symlink_check() {
    [ -L target ] && [ "$(readlink target)" = real ] || fail "$1: the symbolic link was replaced"
    same "$WANT" real "$1: the link's target content"
    [ "$(mode_of real)" = 600 ] || fail "$1: the link's target mode $(mode_of real), want 600"
}
row_dangling_setup() { ln -s nowhere target; }
row_dangling_check() {
    [ -L target ] && [ "$(readlink target)" = nowhere ] || fail "$1: the dangling link changed"
    [ -e nowhere ] && fail "$1: created the link's target"
}
row_hardlink_setup() { printf '%s\n' "$PRECIOUS" >target && ln target other; }
row_hardlink_check() {
    [ "$(cat target)" = "$PRECIOUS" ] && [ "$(cat other)" = "$PRECIOUS" ] || fail "$1: a hard-linked file changed"
    [ "$(stat -c %h target)" = 2 ] || fail "$1: the hard link was broken"
}
row_other_owner_setup() {
    [ "$(id -u)" = 0 ] || return 77
    printf '%s\n' "$PRECIOUS" >target && chown 65534:65534 target && chmod 0600 target
}
row_other_owner_check() {
    same "$WANT" target "$1: content"
    [ "$(owner_of target)" = 65534:65534 ] || fail "$1: owner $(owner_of target), want 65534:65534 (kept)"
    [ "$(mode_of target)" = 600 ] || fail "$1: mode $(mode_of target), want 600 (kept)"
}
row_char_null_setup() { mknod target c 1 3 2>/dev/null || return 77; }
row_char_null_check() {
    [ -c target ] || fail "$1: the character device was replaced by a $(kind_of target)"
}
row_char_full_setup() { mknod target c 1 7 2>/dev/null || return 77; }
row_char_full_check() {
    [ -c target ] || fail "$1: the character device was replaced by a $(kind_of target)"
    message_matches 'space' "$1: a full device"
}
row_block_setup() { mknod target b 7 200 2>/dev/null || return 77; }
row_block_check() { [ -b target ] || fail "$1: the block device was replaced by a $(kind_of target)"; }
row_fifo_setup() {
    mkfifo target || return 77
    (cat target >"$K/fifo.got") &
    FIFO_READER=$!
}
row_fifo_check() {
    wait "$FIFO_READER"
    [ -p target ] || fail "$1: the FIFO was replaced by a $(kind_of target)"
    same "$WANT" "$K/fifo.got" "$1: what the FIFO's reader got"
}
row_folder_setup() { mkdir target; }
row_folder_check() { [ -d target ] && [ -z "$(ls -A target)" ] || fail "$1: the folder changed"; }
row_stdout_link_setup() { ln -s /proc/self/fd/1 target; }
row_stdout_link_check() {
    [ -L target ] || fail "$1: the link to standard output was replaced"
    same "$WANT" "$K/row.out" "$1: standard output"
}

# run_row COMMAND-ARGS... with ROW, WANT_RC, WANT set: one row for one command.
run_row() {
    local label="$ROW: nsearch $*"
    rm -rf target real other nowhere
    local setup=0
    "row_${ROW}_setup" || setup=$?
    if [ "$setup" -eq 77 ]; then
        note "$ROW: skipped (cannot make it here)"
        rm -rf target
        return 0
    fi
    [ "$setup" -eq 0 ] || { fail "$ROW: setup failed"; return 1; }
    ls_dir | grep -vx target >"$K/dir.before"
    "$BIN" "$@" --output target >"$K/row.out" 2>"$K/row.err"
    RC=$?
    ERRLINE=$(head -n 1 "$K/row.err")
    [ "$RC" -eq "$WANT_RC" ] || { fail "$label: exit $RC, want $WANT_RC"; show_err row; }
    if [ "$WANT_RC" -ne 0 ] && [ "$(wc -l <"$K/row.err")" -ne 1 ]; then
        fail "$label: stderr is not one line"
        show_err row
    fi
    [ "$WANT_RC" -eq 0 ] && [ -s "$K/row.err" ] && { fail "$label: stderr on success"; show_err row; }
    ls_dir | grep -vx target >"$K/dir.after"
    cmp -s "$K/dir.before" "$K/dir.after" || {
        fail "$label: the directory changed (a temporary file left behind?)"
        diff "$K/dir.before" "$K/dir.after" | sed 's/^/    /'
    }
    "row_${ROW}_check" "$label"
    [ "$RC" -eq "$WANT_RC" ] && note "ok ($RC) $ROW ${ERRLINE:+: $ERRLINE}"
    rm -rf target real other
}

OUTPUT_ROWS="regular:0 new:0 symlink:0 dangling:1 hardlink:1 other_owner:0 char_null:0 char_full:1
block:1 fifo:0 folder:1 stdout_link:0"

case_output_targets() {
    gen uniform 3000 5 u.csv
    "$BIN" pairs --kernel naive --input u.csv >"$K/want.pairs" || die "reference run failed"
    "$BIN" gen --workload dambreak --n 3000 --seed 2 >"$K/want.gen" || die "reference gen failed"
    local row
    for row in $OUTPUT_ROWS; do
        ROW=${row%%:*}
        WANT_RC=${row##*:}
        WANT=$K/want.pairs
        run_row pairs --kernel grid_sorted --input u.csv
        WANT=$K/want.gen
        run_row gen --workload dambreak --n 3000 --seed 2
    done
    # "-" and an empty name
    ok dash pairs --kernel grid_sorted --input u.csv --output - && same "$K/want.pairs" "$K/dash.out" "--output -"
    [ -e ./- ] && fail "--output - created a file named -"
    expect_fail 2 "" "" pairs --kernel grid_sorted --input u.csv --output ''
    message_matches 'output' "--output ''"
    # a missing folder is not created
    expect_fail 1 "no-such-dir" "" gen --workload uniform --n 10 --output no-such-dir/p.csv
    [ -e no-such-dir ] && fail "--output no-such-dir/p.csv created the folder"
}

# The simulation's frame files are a set written into their folder: a frame
# name that is a symbolic link or has another hard link is refused before any
# frame is written (the folder as it was); a regular file is replaced keeping
# its mode.
case_output_sim_frames() {
    mkdir od
    printf '%s\n' "$PRECIOUS" >real0
    ln -s ../real0 od/frame-000000.csv
    run links sim --n 50 --frames 2 --output-dir od
    [ "$RC" -eq 1 ] || fail "sim onto a symbolic link: exit $RC, want 1"
    grep -Fq frame-000000.csv "$K/links.err" || fail "the message does not name the link: $(head -1 "$K/links.err")"
    [ -L od/frame-000000.csv ] || fail "sim replaced the symbolic link frame-000000.csv"
    [ "$(cat real0)" = "$PRECIOUS" ] || fail "sim wrote through the symbolic link"
    sim_dir_is od frame-000000.csv || return
    rm od/frame-000000.csv
    printf '%s\n' "$PRECIOUS" >od/frame-000002.csv
    ln od/frame-000002.csv keep
    run hard sim --n 50 --frames 2 --output-dir od
    [ "$RC" -eq 1 ] || fail "sim onto a hard-linked frame: exit $RC, want 1"
    [ "$(cat keep)" = "$PRECIOUS" ] || fail "sim changed a hard-linked frame"
    sim_dir_is od frame-000002.csv || return
    rm keep
    chmod 0640 od/frame-000002.csv
    ok mode sim --n 50 --frames 2 --output-dir od || return
    sim_dir_is od box.csv frame-000000.csv frame-000001.csv frame-000002.csv
    [ "$(mode_of od/frame-000002.csv)" = 640 ] || fail "a replaced frame has mode $(mode_of od/frame-000002.csv), want 640 (kept)"
    local new_mode
    new_mode=$(printf '%o' $((0666 & ~$(umask))))
    [ "$(mode_of od/frame-000001.csv)" = "$new_mode" ] || fail "a new frame has mode $(mode_of od/frame-000001.csv), want $new_mode (0666 less the umask)"
    sim_check_frame od/frame-000002.csv 50 od/box.csv "a replaced frame"
}

# A file of another owner when the caller cannot give a new file that owner:
# refused (exit 1), the file as it was. Runs the tool as user 65534 (root
# needed to set up; skipped otherwise).
case_output_owner_unprivileged() {
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a file of another user"; exit 77; }
    command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
    local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    "${as_nobody[@]}" "$BIN" --version >/dev/null 2>&1 || { echo "SKIP: user 65534 cannot run $BIN here"; exit 77; }
    mkdir shared && chmod 0777 shared
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n' >shared/in.csv && chmod 0644 shared/in.csv
    printf '%s\n' "$PRECIOUS" >shared/root.csv && chmod 0666 shared/root.csv
    (cd shared && "${as_nobody[@]}" "$BIN" pairs --kernel naive --input in.csv --output root.csv) 2>"$K/own.err"
    RC=$?
    [ "$RC" -eq 1 ] || fail "nobody writing root's 0666 file: exit $RC, want 1"
    [ "$(cat shared/root.csv)" = "$PRECIOUS" ] || fail "nobody replaced root's file"
    [ "$(owner_of shared/root.csv)" = 0:0 ] || fail "the file's owner changed"
    [ "$(ls -A shared | wc -l)" -eq 2 ] || fail "a temporary file was left in shared/: $(ls -A shared)"
    note "$(head -1 "$K/own.err")"
    printf '%s\n' "$PRECIOUS" >shared/ro.csv && chown 65534:65534 shared/ro.csv && chmod 0444 shared/ro.csv
    (cd shared && "${as_nobody[@]}" "$BIN" pairs --kernel naive --input in.csv --output ro.csv) 2>"$K/ro.err"
    RC=$?
    [ "$RC" -eq 1 ] || fail "nobody writing its own read-only file: exit $RC, want 1"
    [ "$(cat shared/ro.csv)" = "$PRECIOUS" ] || fail "a read-only file was replaced"
    note "$(head -1 "$K/ro.err")"
}

# A file name of 250 characters is a valid output (the temporary's name is cut).
case_output_long_name() {
    good_input
    local name
    name=$(printf 'n%.0s' $(seq 250)).csv
    name=${name:0:250}
    ok long pairs --kernel naive --input good.csv --output "$name" || return
    [ "$(contact_count "$name")" -eq 1 ] || fail "the 250-character output does not hold the contact"
}

# Problems with --output are found before the input is read or searched.
case_output_checked_first() {
    printf 'x,y,z,r\nbad,0,0,1\n' >bad.csv
    mkdir folder
    expect_fail 2 "" "" pairs --kernel naive --input bad.csv --output ''
    message_matches 'output' "--output '' with a bad input"
    expect_fail 1 folder "" pairs --kernel naive --input bad.csv --output folder
    message_matches 'folder' "--output FOLDER with a bad input"
}

# --help and --version to a full device: exit 1 with a message.
case_err_help_full() {
    [ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
    local what
    for what in "--help" "--version" "pairs --help" "sim --help" "gen --help" "workloads"; do
        # shellcheck disable=SC2086
        "$BIN" $what >/dev/full 2>"$K/full.err"
        RC=$?
        [ "$RC" -eq 1 ] || fail "nsearch $what >/dev/full: exit $RC, want 1"
        [ "$(wc -l <"$K/full.err")" -eq 1 ] || fail "nsearch $what >/dev/full: stderr is not one line"
    done
}

# --check finding a difference (NSEARCH_TEST_CORRUPT=1 changes one contact of
# the kernel's list, for this test only): exit 3, INVALID, the output file as it was.
case_check_invalid_keeps_output() {
    gen uniform 500 1 u.csv
    printf '%s\n' "$PRECIOUS" >out.csv
    run_env inv NSEARCH_TEST_CORRUPT=1 pairs --kernel grid_sorted --input u.csv --check --output out.csv
    [ "$RC" -eq 3 ] || fail "--check with a corrupted contact: exit $RC, want 3"
    grep -q INVALID "$K/inv.err" || fail "--check with a corrupted contact: no INVALID"
    [ "$(cat out.csv)" = "$PRECIOUS" ] || fail "--check mismatch replaced the output file"
    [ "$(ls -A | LC_ALL=C sort | tr '\n' ' ')" = "out.csv u.csv " ] || fail "files left: $(ls -A)"
}

# ----------------------------------------- signals and limits while writing

# Every signal that ends a process, sent during the search: the old output
# stays, no temporary file is left. SIGPIPE is ignored: the run completes.
case_signals_search() {
    gen uniform 200000 2 big.csv
    local sig
    for sig in INT TERM HUP QUIT USR1 USR2 ALRM VTALRM PROF; do
        printf '%s\n' "$PRECIOUS" >out.csv
        ls_dir >"$K/dir.before"
        start_bg pairs --kernel naive --input big.csv --output out.csv
        sleep 0.7
        kill -0 "$BGPID" 2>/dev/null || fail "SIG$sig: the run ended within 0.7 s"
        kill -"$sig" "$BGPID" 2>/dev/null
        wait_bg 20
        [ "$BGRC" -ne 0 ] || fail "SIG$sig: exit 0"
        [ "$(cat out.csv)" = "$PRECIOUS" ] || fail "SIG$sig: out.csv changed"
        ls_dir >"$K/dir.after"
        cmp -s "$K/dir.before" "$K/dir.after" || {
            fail "SIG$sig: a temporary file was left"
            diff "$K/dir.before" "$K/dir.after" | sed 's/^/    /'
        }
        note "SIG$sig: exit $BGRC"
    done
    gen uniform 20000 2 mid.csv
    printf '%s\n' "$PRECIOUS" >out.csv
    start_bg pairs --kernel naive --input mid.csv --output out.csv
    sleep 0.2
    kill -PIPE "$BGPID" 2>/dev/null
    wait_bg 60
    [ "$BGRC" -eq 0 ] || fail "SIGPIPE (ignored): exit $BGRC, want 0"
    [ "$(head -1 out.csv)" = "$CSV_HEADER" ] || fail "SIGPIPE (ignored): out.csv is not the contacts"
    rm -f big.csv mid.csv
}

# A file-size limit: the write fails with a message and exit 1, not SIGXFSZ.
case_file_size_limit() {
    gen uniform 20000 4 u.csv
    printf '%s\n' "$PRECIOUS" >out.csv
    ls_dir >"$K/dir.before"
    (ulimit -f 100; exec "$BIN" pairs --kernel grid_sorted --input u.csv --output out.csv) 2>"$K/fs.err"
    RC=$?
    [ "$RC" -eq 1 ] || fail "ulimit -f 100: exit $RC, want 1"
    [ "$(wc -l <"$K/fs.err")" -eq 1 ] || fail "ulimit -f 100: stderr is not one line"
    grep -Eiq 'large|limit|write' "$K/fs.err" || fail "ulimit -f 100: no write error: $(head -1 "$K/fs.err")"
    [ "$(cat out.csv)" = "$PRECIOUS" ] || fail "ulimit -f 100: out.csv changed"
    ls_dir >"$K/dir.after"
    cmp -s "$K/dir.before" "$K/dir.after" || fail "ulimit -f 100: a temporary file was left"
    note "$(head -1 "$K/fs.err")"
}

# SIGTERM at moments spread over short runs (100,000 particles, a few tenths
# of a second) and their end: either the run reports success and out.csv is
# new, or it failed and out.csv is as it was.
case_signal_at_rename() {
    gen uniform 100000 6 u.csv
    "$BIN" pairs --kernel grid_sorted --input u.csv >"$K/want" || die "reference run failed"
    local k delay new=0 old=0
    for k in $(seq 30); do
        printf '%s\n' "$PRECIOUS" >out.csv
        delay=$(awk -v k="$k" 'BEGIN { printf "%.3f", 0.03 + 0.015 * k }')
        start_bg pairs --kernel grid_sorted --input u.csv --output out.csv
        sleep "$delay"
        kill -TERM "$BGPID" 2>/dev/null
        wait_bg 20
        if [ "$BGRC" -eq 0 ]; then
            cmp -s out.csv "$K/want" || fail "run $k: exit 0 but out.csv is not the new output"
            new=$((new + 1))
        else
            [ "$(cat out.csv)" = "$PRECIOUS" ] || fail "run $k: exit $BGRC but out.csv changed"
            old=$((old + 1))
        fi
        [ "$(ls -A | wc -l)" -eq 2 ] || fail "run $k: files left: $(ls -A)"
    done
    note "completed $new, stopped $old of 30"
}

# ------------------------------------------------------ numbers and limits

# An option's number is read exactly as the file's: one rounding.
case_radius_rounding() {
    local r
    for r in 1.0000000596046447753906251 1.0000000596046447753906249 0.50000002980232238769531251 \
        3.4028234664e38 1e-5 0x1.000001p0 1.00000005960464477539062500000000000000000000000000000000000000000000000000000001; do
        printf 'x,y,z\n0,0,0\n2,0,0\n' >p3.csv
        printf 'x,y,z,r\n0,0,0,%s\n2,0,0,%s\n' "$r" "$r" >p4.csv
        run opt pairs --kernel naive --input p3.csv --radius "$r"
        local rc_opt=$RC
        cp "$K/opt.out" "$K/opt.keep"
        cp "$K/opt.err" "$K/opt.errkeep"
        run file pairs --kernel naive --input p4.csv
        [ "$rc_opt" -eq "$RC" ] || fail "radius $r: --radius exits $rc_opt, the file $RC"
        same "$K/file.out" "$K/opt.keep" "radius $r: --radius and the 4th column"
        note "radius $r: exit $RC, $(($(wc -l <"$K/file.out") - 1)) contacts"
    done
}

# Options are read alike: no spaces around numbers, "--" ends the options,
# --max-contacts up to 2^31 is taken as given.
case_option_syntax() {
    good_input
    expect_fail 2 "" "" pairs --kernel naive --input good3.csv --radius ' 1'
    expect_fail 2 "" "" pairs --kernel naive --input good3.csv --radius '1 '
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --threads ' 2'
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --threads '+2'
    ok dd pairs --kernel naive --input good.csv --
    expect_fail 2 "" "" pairs --kernel naive -- --input good.csv
    message_matches 'unexpected' "an argument after --"
    ok mc pairs --kernel naive --input good.csv --max-contacts 2147483648
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --max-contacts 2147483649
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --threads 100000
    message_matches 'threads' "--threads 100000"
    expect_fail 2 "" "" pairs --kernel naive --input good.csv --kernel naive
    message_matches 'twice' "an option given twice"
    expect_fail 2 "" "" pairs --kernel "$(printf 'na\033[2Jive')" --input good.csv
    printf '%s\n' "$ERRLINE" | grep -q "$(printf '\033')" && fail "a control character reached the message"
}

# Radii outside the range where contacts are computed exactly are refused
# alike from the option and the file, with the range in the message.
case_radius_range() {
    local r
    for r in 3.4028235e38 1e30 1e-30; do
        printf 'x,y,z\n0,0,0\n1e20,0,0\n' >p3.csv
        printf 'x,y,z,r\n0,0,0,%s\n1e20,0,0,%s\n' "$r" "$r" >p4.csv
        # the option's fault, not the file's: refused before it is read
        expect_fail 2 "" "" pairs --kernel grid_sorted --input p3.csv --radius "$r"
        message_matches '--radius' "--radius $r"
        printf '%s\n' "$ERRLINE" | grep -Fq p3.csv && fail "--radius $r: the message names the file: $ERRLINE"
        expect_fail 2 p4.csv 2 pairs --kernel grid_sorted --input p4.csv
        message_matches 'radius' "radius $r in the file"
    done
}

# OpenMP's thread count is capped: above the cap a clear refusal, never
# libgomp's own exit.
case_threads_cap() {
    good_input
    run_env omp OMP_NUM_THREADS=5000 pairs --kernel grid_sorted --input good.csv
    [ "$RC" -eq 2 ] || fail "OMP_NUM_THREADS=5000: exit $RC, want 2"
    grep -q OMP_NUM_THREADS "$K/omp.err" || fail "OMP_NUM_THREADS=5000: the message does not name it: $(head -1 "$K/omp.err")"
    grep -qi libgomp "$K/omp.err" && fail "OMP_NUM_THREADS=5000: libgomp's message"
    note "$(head -1 "$K/omp.err")"
    run_env omp1 OMP_NUM_THREADS=5000 pairs --kernel naive --input good.csv
    note "naive with OMP_NUM_THREADS=5000: exit $RC"
    run big pairs --kernel grid_sorted --input good.csv --threads 1000
    [ "$RC" -eq 2 ] || fail "--threads 1000: exit $RC, want 2"
    # the environment's fault, not the file's: refused before it is read
    run_env omp2 OMP_NUM_THREADS=5000 pairs --kernel grid_sorted --input no-such-file.csv
    [ "$RC" -eq 2 ] && grep -q OMP_NUM_THREADS "$K/omp2.err" ||
        fail "OMP_NUM_THREADS=5000 with a missing input: exit $RC, $(head -1 "$K/omp2.err")"
}

# Memory of a refused search does not grow with the thread count: 100,000
# coincident particles (5e9 contacts) with --max-contacts 2,000,000 (48 MB of
# contacts) at 1, 2 and 8 threads. The peak stays below the baseline (grid_sorted,
# which counts first and allocates no contacts) plus 4 x 48 MB: room for the
# list's doubling and the per-thread buffers (at most twice the limit in all),
# and for a sanitizer's allocator; a limit per thread would take 8 x 48 MB at 8.
# The same bound with --order any (below).
case_refusal_memory() {
    [ -n "${NS_PEAK_RSS:-}" ] && [ -x "$NS_PEAK_RSS" ] || { echo "SKIP: no peak_rss helper"; exit 77; }
    awk 'BEGIN { print "x,y,z,r"; for (i = 0; i < 100000; i++) print "1,2,3,0.5" }' >same.csv
    local limit=2000000 k t fmt base_kb bound_kb
    "$NS_PEAK_RSS" "$K/rss" "$BIN" pairs --kernel grid_sorted --input same.csv --threads 1 \
        --max-contacts "$limit" --output out.csv 2>/dev/null
    base_kb=$(cat "$K/rss")
    bound_kb=$((base_kb + 4 * 48 * 1024))
    note "baseline $((base_kb / 1024)) MB, bound $((bound_kb / 1024)) MB"
    # refused_within WHAT ARGS...: pairs ARGS refused (exit 1, too many
    # contacts) with a peak under the bound
    refused_within() {
        local what=$1 kb
        shift
        "$NS_PEAK_RSS" "$K/rss" "$BIN" pairs "$@" --max-contacts "$limit" --output out.csv 2>"$K/rss.err"
        RC=$?
        kb=$(cat "$K/rss")
        [ "$RC" -eq 1 ] || fail "$what: exit $RC, want 1 (too many contacts)"
        grep -q 'too many contacts' "$K/rss.err" || fail "$what: $(head -1 "$K/rss.err")"
        [ "$kb" -le "$bound_kb" ] || fail "$what: peak $((kb / 1024)) MB, over the $((bound_kb / 1024)) MB bound"
        note "$what: peak $((kb / 1024)) MB"
    }
    load_kernels
    for k in "${KERNELS[@]}"; do
        for t in 1 2 8; do
            refused_within "$k, $t threads" --kernel "$k" --input same.csv --threads "$t"
        done
    done
    # --order any: the limit holds inside the search too, not only on what
    # is written. 10,000 coincident particles (5e7 contacts, under the
    # default limit) make one batch of grid_sorted's stream, and every other
    # kernel's whole list: 1.2 to 2.3 GB when only the written total was
    # limited.
    awk 'BEGIN { print "x,y,z,r"; for (i = 0; i < 10000; i++) print "1,2,3,0.5" }' >same10k.csv
    for k in "${KERNELS[@]}"; do
        for fmt in csv bin; do
            refused_within "$k --order any --format $fmt" --kernel "$k" --input same10k.csv \
                --threads 2 --order any --format "$fmt"
        done
    done
}

# Inputs and options that would make a small run take huge memory.
case_bounded_inputs() {
    [ -n "${NS_PEAK_RSS:-}" ] && [ -x "$NS_PEAK_RSS" ] || { echo "SKIP: no peak_rss helper"; exit 77; }
    local kb
    # /dev/zero as input: refused on its first line, not read whole
    "$NS_PEAK_RSS" "$K/rss" "$BIN" pairs --kernel naive --input /dev/zero 2>"$K/z.err"
    RC=$?
    [ "$RC" -eq 2 ] || fail "--input /dev/zero: exit $RC, want 2"
    grep -q '/dev/zero:1:' "$K/z.err" || fail "--input /dev/zero: $(head -1 "$K/z.err")"
    kb=$(cat "$K/rss")
    [ "$kb" -le $((64 * 1024)) ] || fail "--input /dev/zero: peak $((kb / 1024)) MB"
    note "/dev/zero: $(head -1 "$K/z.err") (peak $((kb / 1024)) MB)"
    # a huge hash table for two particles: reduced to what n needs
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n' >two.csv
    local k
    for k in hash_serial hash_parallel; do
        "$NS_PEAK_RSS" "$K/rss" "$BIN" pairs --kernel "$k" --input two.csv --table-size 100000000 >"$K/t.out" 2>"$K/t.err"
        RC=$?
        kb=$(cat "$K/rss")
        [ "$RC" -eq 0 ] || fail "$k --table-size 100000000: exit $RC"
        [ "$kb" -le $((64 * 1024)) ] || fail "$k --table-size 100000000 on 2 particles: peak $((kb / 1024)) MB"
        note "$k --table-size 100000000: peak $((kb / 1024)) MB"
    done
    # a skin far larger than the particles
    run skin sim --n 2000 --frames 2 --skin 1e6
    [ "$RC" -eq 2 ] || fail "sim --skin 1e6: exit $RC, want 2"
    note "sim --skin 1e6: $(head -1 "$K/skin.err")"
}

# Particle files as spreadsheets and editors write them.
case_input_text_edges() {
    printf '\357\273\277x,y,z,r\n0,0,0,0.5\n0.6,0,0,0.5\n' >bom.csv
    ok bom pairs --kernel naive --input bom.csv && [ "$(contact_count "$K/bom.out")" -eq 1 ] ||
        fail "a file starting with a UTF-8 byte-order mark"
    printf 'x,y,z,r\n0,0,0,0.5\n0.6,0\000,0,0.5\n' >nul.csv
    expect_fail 2 nul.csv 3 pairs --kernel naive --input nul.csv
    message_matches 'NUL' "a NUL byte"
    local long
    long="0.$(printf '0%.0s' $(seq 300))5e300"
    printf 'x,y,z,r\n0,0,0,%s\n0.6,0,0,0.5\n' "$long" >long.csv
    ok long pairs --kernel naive --input long.csv || fail "a valid 305-character number"
    printf 'x,y,z,r\n0,0,0,0.5\n# note\n\n0.6,0,0,1e-30\n' >badsim.csv
    sim_fail badsim.csv --input badsim.csv
    message_matches 'badsim.csv:5:' "sim --input error with file:line"
}

# grid_dense's refusal of a grid beyond 2^62 cells states sizes, never a negative number.
case_grid_dense_huge_message() {
    printf 'x,y,z,r\n-4.6e18,-4.6e18,0,0.5\n4.6e18,4.6e18,0,0.5\n' >far.csv
    expect_fail 1 "" "" pairs --kernel grid_dense --input far.csv
    printf '%s\n' "$ERRLINE" | grep -Eq -- '-[0-9]' && fail "grid_dense: a negative number in the message: $ERRLINE"
}

# ---------------------------------------------------------------- main

if ! declare -F "case_$CASE" >/dev/null; then
    echo "unknown case $CASE; cases:" >&2
    declare -F | awk '$3 ~ /^case_/ { sub(/^case_/, "", $3); print "  " $3 }' >&2
    exit 2
fi
"case_$CASE"
if [ "$FAILS" -ne 0 ]; then
    echo "$CASE: $FAILS check(s) failed (scratch: $SCRATCH)"
    exit 1
fi
echo "$CASE: passed"
exit 0
