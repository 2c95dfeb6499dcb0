#!/usr/bin/env bash
# run_all.sh - the one entry point of nsearch-bench: dependencies, build,
# benchmark sweep, results, figures, summary; tests; redrawing figures;
# comparing machines. ./run_all.sh --help lists everything.
set -euo pipefail
CALLER=$PWD # the caller's paths (--plots, --compare, --out) are theirs, not the clone's
cd "$(dirname "$0")"
ROOT=$(pwd)

usage() {
    cat <<'USAGE'
Usage:
  ./run_all.sh [SWEEP OPTIONS]                 build, run the sweep, write results, figures, summary
  ./run_all.sh --quick [SWEEP OPTIONS]         a first look in about two minutes: n <= 10,000,
                                               2 rounds of 3 short repetitions, the peers on
                                               uniform at n = 1,000 and 10,000 only
  ./run_all.sh --resume [SWEEP OPTIONS]        continue the latest interrupted run (refused when
                                               it was made at another commit, with other options
                                               or on another CPU model)
  ./run_all.sh --sim [SIM OPTIONS]             the particle simulation: frame rate per kernel vs
                                               n (sim_fps figure) and an animation of a pile
                                               settling (sim_settle.gif)
  ./run_all.sh --test                          install what is missing, build, run every test
                                               (but the 10-minute soak test)
  ./run_all.sh --plots FILE [FILE ...] [--figures A,B] [--gif-n N] [--out DIR]
                                               redraw figures from existing results: a sweep's
                                               bench.json (several: the machines side by side
                                               too), a simulation's sim.tsv (sim_fps, and
                                               sim_settle.gif simulated again: deterministic);
                                               every figure they have data for, or those
                                               --figures names (default --out: figures/ beside
                                               the first file)
  ./run_all.sh --compare A.json B.json [--out DIR] [--band 0.05] [--allow-different-builds]
                                               compare two result files, configuration by
                                               configuration: ratio of medians B/A with its
                                               95% interval and a verdict (faster, slower,
                                               equivalent within the band, inconclusive);
                                               refused when commit or flags differ unless
                                               --allow-different-builds
  ./run_all.sh --ab REV [AB OPTIONS]           the library at git revision REV (a) against the
                                               working tree (b), both loaded into one process
                                               and timed in turn: each one's median and b/a
                                               with 95% intervals and a verdict
  ./run_all.sh --help

Sweep options:
  --kernels A,B       only these kernels and peers (default: all; the peers are the other
                      libraries' searches built in: nanoflann_kdtree, boost_rtree,
                      cgal_box_intersection, scipy_ckdtree, lammps_neighbor,
                      lammps_neighbor_sorted, where their packages are found)
  --workloads A,B     only these workloads (default: all)
  --threads 1,2       thread counts for parallel kernels (default: 1 and all cores)
  --max-n N           the largest n (default 100,000; 10,000 with --quick; more extends
                      the sweep of the non-quadratic kernels to 200k, 500k, 1M, ... N; on
                      a wide_radii workload, powder, the kernels without radius_levels
                      stop at 100,000)
  --rounds R          independent rounds: every configuration is measured in R separate
                      processes, each round in its own shuffled order (default 3; 2 with
                      --quick)
  --repetitions N     repetitions per configuration and process (default 3)
  --min-time S        seconds each repetition runs at least (default 0.1; 0.01 with --quick)
  --wait-policy P     OMP_WAIT_POLICY of the processes: auto (default; passive for 1 thread,
                      active for more), active, passive, or default (OpenMP's own)

Sim options:
  --kernels A,B       only these kernels (default: all, and the simulation's default,
                      grid_sorted, with a skin)
  --max-n N           the largest n (default 100,000; naive and naive_omp stop at 20,000)
  --runs R            runs per (kernel, n), each a process of its own; the figure and
                      summary show the median and its 95% interval over them (default 5)
  --skin D            the skin of the reuse line, grid_sorted+skin (default 0.1)
  --gif-n N           particles in the animation (default 5,000; 0: no animation)

A/B options (--ab):
  --kernel K          the kernel (default grid_sorted)
  --workloads A,B     workloads (default uniform)
  --n N,M             particle counts (default 100000)
  --threads 1,2       thread counts (default: all cores)
  --rounds R          rounds, each an index of each build, their repetitions interleaved
                      (default 12)
  --repetitions M     repetitions per build and round (default 5)
  --min-time S        seconds each repetition runs at least, the search repeated (default 0.02)

The sweep's settled workload, and every --sim run, start from settled piles kept in
results/cache/ (settled-v<V>-n<N>-seed1.csv; delete it to rebuild them).

A run writes everything under results/<machine>/<UTC timestamp>/, where <machine> names
the CPU model (with its family and model when the name has no model number), its widest
vector ISA and its logical CPUs (e.g. amd-epyc-family25-model1-avx2-2cpu):
bench.json (Google
Benchmark's JSON: every repetition with its round, every process's context),
bench.tsv (one row per configuration), summary.md, figures/*.png and *.svg, run.json
(commit, options, CPU model), and parts/ (one JSON per round, workload, n and thread
count, so an interruption loses nothing measured). A --sim run writes results/<machine>/<UTC
timestamp>-sim/: sim.tsv (one row per run), sim_run.json (commit, tool version and code
path, CPU, threads, start date and load), sim_summary.md, figures/sim_fps.png, .svg
and figures/sim_settle.gif. An --ab run writes results/<machine>/<UTC timestamp>-ab/:
ab.json (every repetition, the two builds' names, CPU, date, load) and ab.md (the
table). Exit status: 1 when any kernel's contacts
differ from the reference or a configuration fails with an error, 2 on a usage error.

Environment: NS_WERROR=ON turns warnings into errors (CI sets it); JOBS sets the
build parallelism; NSEARCH is the nsearch tool --plots simulates the animation with
(default build/release/nsearch, built when missing).
USAGE
}

log() { printf '[run_all] %s\n' "$*"; }
die() { printf 'run_all.sh: %s\n' "$*" >&2; exit 2; }
# fail: a failure, with HINT (what continues from here) in the same line
fail() { printf 'run_all.sh: %s%s\n' "$*" "${HINT:+; $HINT}" >&2; exit 1; }

# Temporary folders, removed however the script ends (a failed figure too).
TEMPS=()
trap 'rm -rf "${TEMPS[@]}"' EXIT
temp_dir() { # temp_dir VAR [PARENT]: a new folder, in PARENT when given
    local made
    made=$(mktemp -d ${2:+"$2/.run_all.XXXXXX"}) || fail "cannot make a temporary folder${2:+ in $2}"
    TEMPS+=("$made")
    printf -v "$1" '%s' "$made"
}

# A path the caller gave, as seen from where they stand (the script works in
# the clone).
caller_path() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$CALLER" "$1" ;; esac; }

# The CPUs this process may run on: nproc without the OpenMP variables, which
# nproc would follow (OMP_NUM_THREADS=1000 is not 1000 CPUs).
cpus() { env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1; }

# Every program the script starts runs through child: in the background
# while the script waits, so a stop signal reaches the script at once; in a
# process group of its own (timeout 0: no time limit), so ending it ends its
# own children too; and with the kernel's promise (setpriv --pdeathsig) to
# end it when the script dies, even by SIGKILL. Stopping the script (SIGINT,
# SIGTERM, SIGHUP) ends the child with SIGTERM (a Python interpreter that is
# still starting ends quietly on it, where SIGINT would print a traceback),
# waits for it, says in one line what stopped and, with HINT, how to go on,
# and exits 128 + the signal's number. The harness's scripts it starts leave
# the word to it (NS_STOP_QUIET).
CHILD="" HINT=""
child() {
    local quiet="" # the harness's scripts only, not what they or ctest start
    [ "$1" != "$PY" ] || quiet=1
    NS_STOP_QUIET=$quiet setpriv --pdeathsig TERM timeout 0 "$@" &
    CHILD=$!
    local status=0
    wait "$CHILD" || status=$?
    CHILD=""
    return $status
}
on_stop() { # on_stop NAME NUMBER
    trap '' INT TERM HUP
    if [ -n "$CHILD" ]; then
        kill -s TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    # to the script's own standard error (fd 8): a trap runs inside the
    # redirections of the command it interrupted (child ... >/dev/null)
    printf 'run_all.sh: stopped by SIG%s%s\n' "$1" "${HINT:+; $HINT}" >&8
    exit $((128 + $2))
}
exec 8>&2
trap 'on_stop INT 2' INT
trap 'on_stop TERM 15' TERM
trap 'on_stop HUP 1' HUP

# One run_all.sh that builds or measures per clone at a time: the lock is
# build/run_all.lock (flock; the kernel releases it when the holder and every
# child that inherited it are gone), and the file names the holder.
LOCK=build/run_all.lock
take_lock() {
    mkdir -p build
    exec 9<>"$LOCK" || fail "cannot open $LOCK"
    if ! flock -n 9; then
        die "another run_all.sh is working in this clone ($(head -c 300 "$LOCK" 2>/dev/null ||
            echo "holder unknown")); wait for it to end, or stop it"
    fi
    printf 'pid %s, since %s: ./run_all.sh %s\n' "$$" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >"$LOCK"
}

# A path as a gnuplot string: single-quoted, a quote doubled (gnuplot's
# escape inside single quotes), so any folder name reaches the scripts intact.
gp_str() { printf "'%s'" "${1//\'/\'\'}"; }

# gnuplot on one of plots/*.gp: gnuplot_plot SCRIPT DATA OUT FMT; a failure
# is one line (gnuplot's first complaint, or the disk that is full).
GP_SAID=""
gnuplot_plot() {
    if [ -z "$GP_SAID" ]; then
        local said_dir
        temp_dir said_dir
        GP_SAID=$said_dir/gnuplot.txt
    fi
    child gnuplot -e "data=$(gp_str "$2"); out=$(gp_str "$3"); fmt='$4'; plots=$(gp_str "$ROOT/plots")" \
        "$ROOT/plots/$1.gp" >/dev/null 2>"$GP_SAID" && [ -s "$3/$1.$4" ] && return 0
    local free
    free=$(df -Pk "$3" 2>/dev/null | awk 'NR == 2 { print $4 }')
    [ -n "$free" ] && [ "$free" -lt 4096 ] &&
        fail "cannot write the figure $3/$1.$4: the disk is full (${free} KB free there, about 8 MB needed)"
    fail "gnuplot failed on plots/$1.gp: $(grep -m1 . "$GP_SAID" || echo "no $1.$4 written")"
}

# The output folder of --plots or --compare: made when missing, refused when
# the path is something else.
out_folder() {
    [ ! -e "$1" ] || [ -d "$1" ] || die "--out $1 exists and is not a folder"
    case "$1" in *$'\n'*) die "--out: a folder name with a line break is not supported" ;; esac
    mkdir -p "$1" 2>/dev/null || die "cannot make the folder $1"
}

BUILD_PACKAGES=(cmake make gcc g++ libc6-dev pkgconf libbenchmark-dev)
SWEEP_PACKAGES=(python3 python3-numpy python3-scipy gnuplot-nox)
# The other libraries measured beside the kernels (the peers): optional; a
# build without one leaves its peer out and the summary names it.
PEER_PACKAGES=(libnanoflann-dev libboost-dev libcgal-dev libpython3-dev liblammps-dev)
. "$ROOT/harness/python.sh" # PY: Debian's python, with Debian's numpy and scipy
FIGURES=(scaling per_particle doubling speedup breakdown workloads bound peers)
PLOT_FIGURES=("${FIGURES[@]}" machines sim_fps sim_settle) # every figure --plots draws
CACHE="$ROOT/results/cache" # settled piles, shared by the sweep and --sim
NSEARCH=${NSEARCH:-$ROOT/build/release/nsearch} # the tool --plots animates with

# Installs missing Debian packages: as root through apt-get (saying what),
# otherwise prints the exact command and stops.
ensure_packages() {
    local optional=false missing=() p
    [ "$1" = --optional ] && optional=true && shift
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        printf 'run_all.sh: missing packages: %s\nInstall them with:\n  sudo apt-get install -y %s\n' \
            "${missing[*]}" "${missing[*]}" >&2
        $optional && return 0
        exit 1
    fi
    log "installing: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -qq
    if ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        "${missing[@]}" >/dev/null; then
        $optional || die "apt-get could not install: ${missing[*]}"
        log "could not install ${missing[*]}: the peers they bring are left out"
    fi
}

jobs() { echo "${JOBS:-$(cpus)}"; }

build_release() {
    ensure_packages "${BUILD_PACKAGES[@]}"
    ensure_packages --optional "${PEER_PACKAGES[@]}"
    log "configuring (preset release, NS_WERROR=${NS_WERROR:-OFF})"
    NS_WERROR="${NS_WERROR:-OFF}" child cmake --preset release >/dev/null
    log "building (-j $(jobs))"
    child cmake --build --preset release -j "$(jobs)" >/dev/null
}

run_tests() {
    take_lock --test
    ensure_packages "${SWEEP_PACKAGES[@]}" # the plots and stats tests
    build_release
    log "running ctest (-j $(jobs))"
    child ctest --preset release -j "$(jobs)"
}

duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# Every figure of one or more result files into a folder (PNG and SVG):
# drawn into a temporary folder beside them, then moved in, so a failure
# leaves the figures there were.
draw() {
    local out=$1
    shift
    ensure_packages "${SWEEP_PACKAGES[@]}"
    out_folder "$out"
    local data drawing
    temp_dir data
    temp_dir drawing "$out"
    child "$PY" "$ROOT/harness/results.py" plotdata "$@" --out "$data" || exit
    local figures=("${FIGURES[@]}")
    [ $# -gt 1 ] && figures+=(machines)
    local f fmt why skipped=() drawn=()
    for f in "${figures[@]}"; do
        wanted "$f" || continue
        why=$(sed -n "s/^$f: //p" "$data/empty.txt")
        if [ -n "$why" ]; then
            skipped+=("$f ($why)")
            continue
        fi
        drawn+=("$f")
        for fmt in png svg; do
            gnuplot_plot "$f" "$data" "$drawing" "$fmt"
        done
    done
    [ ${#drawn[@]} -eq 0 ] || mv -f "$drawing"/* "$out"/ || fail "cannot move the figures into $out"
    [ ${#drawn[@]} -eq 0 ] || log "figures: ${drawn[*]} (PNG and SVG) in $out"
    [ ${#skipped[@]} -eq 0 ] ||
        log "not drawn, nothing to show in these results: $(printf '%s; ' "${skipped[@]}" | sed 's/; $//')"
}

# The figures --plots draws: every one (WANTED empty) or those named.
WANTED=""
wanted() { [ -z "$WANTED" ] || [[ ",$WANTED," == *",$1,"* ]]; }

# sim_fps from a simulation's sim.tsv into a folder (PNG and SVG), drawn
# beside it and moved in.
draw_sim_fps() {
    local data drawing fmt
    temp_dir data
    temp_dir drawing "$2"
    child "$PY" "$ROOT/harness/sim_results.py" data "$1" --out "$data" || exit
    for fmt in png svg; do
        gnuplot_plot sim_fps "$data" "$drawing" "$fmt"
    done
    mv -f "$drawing"/* "$2"/ || fail "cannot move the figure into $2"
    log "figures: sim_fps (PNG and SVG) in $2"
}

# sim_settle.gif into a folder: N particles settling, simulated by the built
# nsearch (deterministic: the same frames on every machine and thread count).
SETTLE_FRAMES=(--frames 600 --every 12)
draw_settle() {
    local frames drawing
    temp_dir frames
    temp_dir drawing "$1"
    log "animation: $2 particles settling (nsearch sim --n $2 ${SETTLE_FRAMES[*]})"
    child "$NSEARCH" sim --n "$2" "${SETTLE_FRAMES[@]}" --output-dir "$frames" \
        >/dev/null || fail "nsearch sim failed on the animation"
    child gnuplot -e "dir=$(gp_str "$frames"); out=$(gp_str "$drawing/sim_settle.gif"); dt=0.01; pngdir=''" \
        "$ROOT/plots/sim_anim.gp" || fail "gnuplot failed on plots/sim_anim.gp"
    mv -f "$drawing/sim_settle.gif" "$1"/ || fail "cannot move the animation into $1"
    log "animation: sim_settle.gif in $1"
}

# --plots FILE [FILE ...] [--figures A,B] [--gif-n N] [--out DIR]: a FILE is a
# sweep's bench.json (its figures; several files: the machines figure too)
# or a simulation's sim.tsv (sim_fps and the animation), told apart by their
# first character; paths are the caller's.
plots_mode() {
    local out="" gif_n=5000 benches=() sims=() f
    while [ $# -gt 0 ]; do
        case "$1" in
            --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$(caller_path "$2"); shift ;;
            --figures)
                [ $# -ge 2 ] || die "--figures needs a list"
                for f in ${2//,/ }; do
                    [[ " ${PLOT_FIGURES[*]} " == *" $f "* ]] ||
                        die "--figures: no figure '$f' (the figures: ${PLOT_FIGURES[*]})"
                done
                WANTED=$2; shift ;;
            --gif-n)
                [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || die "--gif-n needs a whole number >= 1"
                gif_n=$2; shift ;;
            -*) die "unknown option for --plots: $1" ;;
            *) f=$(caller_path "$1")
               [ -f "$f" ] || die "no such results file: $1"
               if [ "$(tr -d ' \t\r\n' <"$f" | head -c1)" = "{" ]; then benches+=("$f"); else sims+=("$f"); fi ;;
        esac
        shift
    done
    [ $((${#benches[@]} + ${#sims[@]})) -ge 1 ] || die "--plots needs at least one results file"
    [ ${#sims[@]} -le 1 ] || die "--plots takes one simulation's sim.tsv at a time"
    local first=${benches[0]:-${sims[0]:-}}
    out=${out:-$(dirname "$first")/figures}
    [ ${#benches[@]} -eq 0 ] || draw "$out" "${benches[@]}"
    [ ${#sims[@]} -eq 1 ] || return 0
    ensure_packages "${SWEEP_PACKAGES[@]}"
    out_folder "$out"
    if wanted sim_fps; then draw_sim_fps "${sims[0]}" "$out"; fi
    wanted sim_settle || return 0
    if [ ! -x "$NSEARCH" ]; then
        [ "$NSEARCH" = "$ROOT/build/release/nsearch" ] || die "NSEARCH=$NSEARCH is not a program"
        take_lock --plots
        build_release
    fi
    draw_settle "$out" "$gif_n"
}

# --compare A.json B.json [--out DIR] [--band B] [--allow-different-builds]:
# harness/compare.py (ratios of medians with bootstrap intervals and verdicts),
# then the figure.
compare_mode() {
    local files=() out="" extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$(caller_path "$2"); shift ;;
            --band) [ $# -ge 2 ] || die "--band needs a value"; extra+=(--band "$2"); shift ;;
            --allow-different-builds) extra+=("$1") ;;
            -*) die "unknown option for --compare: $1" ;;
            *) [ -f "$(caller_path "$1")" ] || die "no such results file: $1"
               files+=("$(caller_path "$1")") ;;
        esac
        shift
    done
    [ ${#files[@]} -eq 2 ] || die "--compare needs exactly two results files"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    out=${out:-$(dirname "${files[1]}")/compare}
    local made=0 status=0
    [ -d "$out" ] || made=1
    out_folder "$out"
    child "$PY" "$ROOT/harness/compare.py" "${files[0]}" "${files[1]}" --out "$out" "${extra[@]}" ||
        status=$?
    if [ $status -ne 0 ]; then # refused: a folder made for it goes again (when still empty)
        [ $made -eq 0 ] || rmdir "$out" 2>/dev/null || true
        exit $status
    fi
    local fmt drawing
    temp_dir drawing "$out"
    for fmt in png svg; do
        gnuplot_plot compare "$out/data" "$drawing" "$fmt"
    done
    mv -f "$drawing"/* "$out"/ || fail "cannot move the figure into $out"
    log "comparison: $out/compare.txt, compare.tsv, compare.png, compare.svg"
}

# --sim: frames per second of the simulation, per kernel and n, from settled piles.
sim_mode() {
    local kernels="" max_n=100000 runs=5 skin=0.1 gif_n=5000
    while [ $# -gt 0 ]; do
        case "$1" in
            --kernels) [ $# -ge 2 ] || die "$1 needs a value"; kernels=$2; shift ;;
            --max-n|--runs|--gif-n)
                [ $# -ge 2 ] || die "$1 needs a value"
                [[ $2 =~ ^[0-9]+$ ]] || die "$1 '$2' is not a whole number"
                case "$1" in --max-n) max_n=$2 ;; --runs) runs=$2 ;; --gif-n) gif_n=$2 ;; esac
                shift ;;
            --skin)
                [ $# -ge 2 ] || die "$1 needs a value"
                [[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] || die "--skin '$2' is not a positive number"
                skin=$2; shift ;;
            *) die "unknown option for --sim: $1 (./run_all.sh --help lists them)" ;;
        esac
        shift
    done
    [ "$runs" -ge 1 ] || die "--runs must be at least 1"
    take_lock --sim "$@"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    build_release
    local tool=build/release/nsearch dir threads
    threads=$(cpus)
    dir="results/$("$PY" harness/sweep.py --machine-label)/$(date -u +%Y%m%dT%H%M%SZ)-sim"
    mkdir -p "$dir/figures"
    local tsv="$dir/sim.tsv" start=$SECONDS
    log "simulation sweep into $dir: kernels ${kernels:-all and the default kernel with a skin}, n up to $max_n, $runs runs, $threads threads"
    child "$PY" harness/sim_sweep.py --tool "$tool" --out "$tsv" --kernels "$kernels" --max-n "$max_n" \
        --runs "$runs" --skin "$skin" --threads "$threads" --cache-dir "$CACHE" ||
        fail "the simulation sweep failed"
    draw_sim_fps "$tsv" "$dir/figures"
    child "$PY" harness/sim_results.py summary "$tsv" --markdown --out "$dir/sim_summary.md" || exit
    [ "$gif_n" -eq 0 ] || draw_settle "$dir/figures" "$gif_n"
    echo
    child "$PY" harness/sim_results.py summary "$tsv" || exit
    log "results: $dir (sim.tsv, sim_summary.md, figures/) in $(duration $((SECONDS - start)))"
}

# --ab REV: the library of revision REV (exported with git archive) and of
# the working tree, each built as a shared library in a temporary folder,
# then harness/ab.py runs nsearch-ab over the configurations. Refused when
# the public header differs: nsearch-ab hands one build's configuration and
# contact lists to the other.
ab_mode() {
    [ $# -ge 1 ] && [ "${1#-}" = "$1" ] || die "--ab needs a git revision (e.g. --ab HEAD)"
    local rev=$1 commit
    shift
    local args=("$@")
    while [ $# -gt 0 ]; do
        case "$1" in
            --kernel|--workloads|--n|--threads|--rounds|--repetitions|--min-time)
                if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi
                shift ;;
            *) die "unknown option for --ab: $1 (./run_all.sh --help lists them)" ;;
        esac
        shift
    done
    commit=$(git rev-parse --verify --quiet "$rev^{commit}") || die "--ab: no such revision: $rev"
    git diff --quiet "$commit" -- include/nsearch.h ||
        die "--ab: include/nsearch.h differs between $rev and the working tree; nsearch-ab needs one header"
    take_lock --ab "$rev" "$@"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    build_release
    local work side
    temp_dir work
    mkdir "$work/tree"
    git archive "$commit" | tar -x -C "$work/tree" || die "--ab: cannot export $rev"
    for side in a b; do
        local src=$work/tree
        [ $side = b ] && src=$ROOT
        log "building the shared library of $([ $side = a ] && echo "$rev" || echo "the working tree")"
        child cmake -S "$src" -B "$work/$side" -DCMAKE_BUILD_TYPE=Release -DNS_NATIVE=OFF \
            -DBUILD_SHARED_LIBS=ON -DNS_BUILD_TESTS=OFF -DNS_BUILD_BENCH=OFF -DNS_LAYER_CHECK=OFF \
            -DNS_PEERS=OFF >/dev/null || fail "--ab: cannot configure $side"
        child cmake --build "$work/$side" --target nsearch -j "$(jobs)" >/dev/null ||
            fail "--ab: cannot build $side"
    done
    local here dir
    here=$(git rev-parse --short HEAD)
    git diff --quiet HEAD -- || here="$here+modified"
    dir="results/$("$PY" harness/sweep.py --machine-label)/$(date -u +%Y%m%dT%H%M%SZ)-ab"
    local compiler
    compiler=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$work/b/CMakeCache.txt")
    compiler="$compiler $("$compiler" -dumpfullversion 2>/dev/null || true)"
    child "$PY" harness/ab.py --tool build/release/nsearch-ab --a "$work/a/libnsearch.so" \
        --b "$work/b/libnsearch.so" --a-name "$rev ($(git rev-parse --short "$commit"))" \
        --b-name "the working tree ($here)" --out "$dir" \
        --build "shared, Release, NS_NATIVE=OFF, $compiler" "${args[@]}" || exit
    log "results: $dir (ab.json, ab.md)"
}

# The sweep's options, known before anything is installed or built: a
# mistyped one is one line and exit 2 (harness/sweep.py checks the values).
check_sweep_options() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --quick|--resume) ;;
            --kernels|--workloads|--threads|--max-n|--rounds|--repetitions|--min-time|--wait-policy)
                if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi
                shift ;;
            -h|--help) usage; exit 0 ;;
            *) die "unknown option: $1 (./run_all.sh --help lists them)" ;;
        esac
        shift
    done
}

# The sweep: harness/sweep.py runs the rounds of nsearch-bench processes and
# merges them (it checks the sweep options: a usage error exits 2; it says
# itself when it cannot go on, and how to continue); then the
# stages after the merge, each redone by --resume until the last marks the
# run finished: the table and the summary, the figures.
sweep_mode() {
    check_sweep_options "$@"
    take_lock "$@"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    build_release
    local dir_file status=0 dir
    temp_dir dir_file
    dir_file=$dir_file/dir
    HINT="the run keeps what it measured: ./run_all.sh --resume continues it"
    child "$PY" harness/sweep.py --bench build/release/nsearch-bench \
        --results "results/$("$PY" harness/sweep.py --machine-label)" \
        --cache-dir "$CACHE" --dir-file "$dir_file" "$@" || status=$?
    HINT=""
    dir=$(cat "$dir_file" 2>/dev/null || true)
    [ -n "$dir" ] || exit $status # sweep.py said why, and what continues the run
    # each failure below says why in one line, and HINT what to do then
    HINT="the run in $dir is measured, not finished: ./run_all.sh --resume finishes it"
    child "$PY" harness/results.py report "$dir" || exit
    draw "$dir/figures" "$dir/bench.json"
    child "$PY" harness/sweep.py --finish "$dir" || exit
    HINT=""
    echo
    child "$PY" harness/results.py summary "$dir/bench.json" --headline || true
    echo
    log "results: $dir (bench.json, bench.tsv)"
    log "summary (every workload, the peers, the machine's state): $dir/summary.md"
    log "figures (PNG and SVG): $dir/figures/"
    [ $status -eq 0 ] || log "FAILED: some configuration's contacts differ from the reference, or one failed with an error (see summary.md)"
    return $status
}

case "${1:-}" in
    --test) [ $# -eq 1 ] || die "--test takes no other option"; run_tests ;;
    --plots) shift; plots_mode "$@" ;;
    --sim) shift; sim_mode "$@" ;;
    --compare) shift; compare_mode "$@" ;;
    --ab) shift; ab_mode "$@" ;;
    -h|--help) usage ;;
    *) sweep_mode "$@" ;;
esac
