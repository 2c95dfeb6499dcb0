#!/usr/bin/env bash
# run_all.sh - the one entry point of nsearch-bench: dependencies, build,
# benchmark sweep, results, figures, summary; tests; redrawing figures;
# comparing machines. ./run_all.sh --help lists everything.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

usage() {
    cat <<'USAGE'
Usage:
  ./run_all.sh [SWEEP OPTIONS]                 build, run the sweep, write results, figures, summary
  ./run_all.sh --quick [SWEEP OPTIONS]         a reduced sweep (n <= 20,000; 2 rounds of 3 short
                                               repetitions)
  ./run_all.sh --resume [SWEEP OPTIONS]        continue the latest interrupted run (refused when
                                               it was made at another commit, with other options
                                               or on another CPU model)
  ./run_all.sh --sim [SIM OPTIONS]             the particle simulation: frame rate per kernel vs
                                               n (sim_fps figure) and an animation of a pile
                                               settling (sim_settle.gif)
  ./run_all.sh --test                          install what is missing, build, run every test
  ./run_all.sh --plots A.json [B.json ...] [--out DIR]
                                               redraw every figure from existing results (several
                                               files: the machines side by side too)
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
                      libraries built in: nanoflann_kdtree, boost_rtree,
                      cgal_box_intersection, scipy_ckdtree, where their packages are found)
  --workloads A,B     only these workloads (default: all)
  --threads 1,2       thread counts for parallel kernels (default: 1 and all cores)
  --max-n N           the largest n (default 100,000; more extends the sweep of the
                      non-quadratic kernels to 200k, 500k, 1M, ... N; on a wide_radii
                      workload, powder, the kernels without radius_levels stop at
                      100,000)
  --rounds R          independent rounds: every configuration is measured in R separate
                      processes, each round in its own shuffled order (default 3; 2 with
                      --quick)
  --repetitions N     repetitions per configuration and process (default 3)
  --min-time S        seconds each repetition runs at least (default 0.2; 0.01 with --quick)
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
build parallelism.
USAGE
}

log() { printf '[run_all] %s\n' "$*"; }
die() { printf 'run_all.sh: %s\n' "$*" >&2; exit 2; }

# Temporary folders, removed however the script ends (a failed figure too).
TEMPS=()
trap 'rm -rf "${TEMPS[@]}"' EXIT
temp_dir() { # temp_dir VAR [PARENT]: a new folder, in PARENT when given
    local made
    made=$(mktemp -d ${2:+"$2/.run_all.XXXXXX"}) || die "cannot make a temporary folder"
    TEMPS+=("$made")
    printf -v "$1" '%s' "$made"
}

# A path as a gnuplot string: single-quoted, a quote doubled (gnuplot's
# escape inside single quotes), so any folder name reaches the scripts intact.
gp_str() { printf "'%s'" "${1//\'/\'\'}"; }

# gnuplot on one of plots/*.gp: gnuplot_plot SCRIPT DATA OUT FMT
gnuplot_plot() {
    gnuplot -e "data=$(gp_str "$2"); out=$(gp_str "$3"); fmt='$4'; plots=$(gp_str "$ROOT/plots")" \
        "$ROOT/plots/$1.gp" || die "gnuplot failed on plots/$1.gp"
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
CACHE="$ROOT/results/cache" # settled piles, shared by the sweep and --sim

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

jobs() { echo "${JOBS:-$(nproc 2>/dev/null || echo 2)}"; }

build_release() {
    ensure_packages "${BUILD_PACKAGES[@]}"
    ensure_packages --optional "${PEER_PACKAGES[@]}"
    log "configuring (preset release, NS_WERROR=${NS_WERROR:-OFF})"
    NS_WERROR="${NS_WERROR:-OFF}" cmake --preset release >/dev/null
    log "building"
    cmake --build --preset release -j "$(jobs)" >/dev/null
}

run_tests() {
    ensure_packages "${SWEEP_PACKAGES[@]}" # the plots and stats tests
    build_release
    log "running ctest"
    ctest --preset release -j "$(jobs)"
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
    "$PY" "$ROOT/harness/results.py" plotdata "$@" --out "$data"
    local figures=("${FIGURES[@]}")
    [ $# -gt 1 ] && figures+=(machines)
    local f fmt skipped=() drawn=()
    for f in "${figures[@]}"; do
        if grep -qx "$f" "$data/empty.txt"; then
            skipped+=("$f")
            continue
        fi
        drawn+=("$f")
        for fmt in png svg; do
            gnuplot_plot "$f" "$data" "$drawing" "$fmt"
        done
    done
    [ ${#drawn[@]} -eq 0 ] || mv -f "$drawing"/* "$out"/
    log "figures: ${drawn[*]} (PNG and SVG) in $out"
    [ ${#skipped[@]} -eq 0 ] ||
        log "not drawn, nothing to show in these results: ${skipped[*]} (they need uniform)"
}

# Result files and --out DIR, for --plots and --compare: sets FILES and OUT.
parse_files() {
    local mode=$1
    shift
    OUT="" FILES=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --out) [ $# -ge 2 ] || die "--out needs a folder"; OUT=$2; shift ;;
            -*) die "unknown option for $mode: $1" ;;
            *) [ -f "$1" ] || die "no such results file: $1"; FILES+=("$1") ;;
        esac
        shift
    done
}

# --plots A.json [B.json ...] [--out DIR]
plots_mode() {
    parse_files --plots "$@"
    [ ${#FILES[@]} -ge 1 ] || die "--plots needs at least one results file"
    draw "${OUT:-$(dirname "${FILES[0]}")/figures}" "${FILES[@]}"
}

# --compare A.json B.json [--out DIR] [--band B] [--allow-different-builds]:
# harness/compare.py (ratios of medians with bootstrap intervals and verdicts),
# then the figure.
compare_mode() {
    local files=() out="" extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift ;;
            --band) [ $# -ge 2 ] || die "--band needs a value"; extra+=(--band "$2"); shift ;;
            --allow-different-builds) extra+=("$1") ;;
            -*) die "unknown option for --compare: $1" ;;
            *) [ -f "$1" ] || die "no such results file: $1"; files+=("$1") ;;
        esac
        shift
    done
    [ ${#files[@]} -eq 2 ] || die "--compare needs exactly two results files"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    out=${out:-$(dirname "${files[1]}")/compare}
    local made=0 status=0
    [ -d "$out" ] || made=1
    out_folder "$out"
    "$PY" "$ROOT/harness/compare.py" "${files[0]}" "${files[1]}" --out "$out" "${extra[@]}" ||
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
    mv -f "$drawing"/* "$out"/
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
            *) usage >&2; die "unknown option for --sim: $1" ;;
        esac
        shift
    done
    [ "$runs" -ge 1 ] || die "--runs must be at least 1"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    build_release
    local tool=build/release/nsearch dir threads
    threads=$(nproc)
    dir="results/$("$PY" harness/sweep.py --machine-label)/$(date -u +%Y%m%dT%H%M%SZ)-sim"
    mkdir -p "$dir/figures"
    local tsv="$dir/sim.tsv" start=$SECONDS
    log "simulation sweep into $dir: kernels ${kernels:-all and the default kernel with a skin}, n up to $max_n, $runs runs, $threads threads"
    "$PY" harness/sim_sweep.py --tool "$tool" --out "$tsv" --kernels "$kernels" --max-n "$max_n" \
        --runs "$runs" --skin "$skin" --threads "$threads" --cache-dir "$CACHE" ||
        die "the simulation sweep failed"
    local data
    temp_dir data
    "$PY" harness/sim_results.py data "$tsv" --out "$data"
    local fmt
    for fmt in png svg; do
        gnuplot_plot sim_fps "$data" "$dir/figures" "$fmt"
    done
    "$PY" harness/sim_results.py summary "$tsv" --markdown >"$dir/sim_summary.md"
    if [ "$gif_n" -gt 0 ]; then
        local frames_dir
        temp_dir frames_dir
        log "animation: $gif_n particles settling"
        "$tool" sim --n "$gif_n" --frames 600 --every 12 --output-dir "$frames_dir" >/dev/null ||
            die "nsearch sim failed on the animation"
        gnuplot -e "dir=$(gp_str "$frames_dir"); out=$(gp_str "$dir/figures/sim_settle.gif"); dt=0.01; pngdir=''" \
            plots/sim_anim.gp || die "gnuplot failed on plots/sim_anim.gp"
    fi
    echo
    "$PY" harness/sim_results.py summary "$tsv"
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
        cmake -S "$src" -B "$work/$side" -DCMAKE_BUILD_TYPE=Release -DNS_NATIVE=OFF \
            -DBUILD_SHARED_LIBS=ON -DNS_BUILD_TESTS=OFF -DNS_BUILD_BENCH=OFF -DNS_LAYER_CHECK=OFF \
            -DNS_PEERS=OFF >/dev/null || die "--ab: cannot configure $side"
        cmake --build "$work/$side" --target nsearch -j "$(jobs)" >/dev/null ||
            die "--ab: cannot build $side"
    done
    local here dir
    here=$(git rev-parse --short HEAD)
    git diff --quiet HEAD -- || here="$here+modified"
    dir="results/$("$PY" harness/sweep.py --machine-label)/$(date -u +%Y%m%dT%H%M%SZ)-ab"
    local compiler
    compiler=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$work/b/CMakeCache.txt")
    compiler="$compiler $("$compiler" -dumpfullversion 2>/dev/null || true)"
    "$PY" harness/ab.py --tool build/release/nsearch-ab --a "$work/a/libnsearch.so" \
        --b "$work/b/libnsearch.so" --a-name "$rev ($(git rev-parse --short "$commit"))" \
        --b-name "the working tree ($here)" --out "$dir" \
        --build "shared, Release, NS_NATIVE=OFF, $compiler" "${args[@]}"
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
# merges them (it checks the sweep options: a usage error exits 2); then the
# table, the summary and the figures.
sweep_mode() {
    check_sweep_options "$@"
    ensure_packages "${SWEEP_PACKAGES[@]}"
    build_release
    local dir_file status=0 dir
    temp_dir dir_file
    dir_file=$dir_file/dir
    "$PY" harness/sweep.py --bench build/release/nsearch-bench --results "results/$("$PY" harness/sweep.py --machine-label)" \
        --cache-dir "$CACHE" --dir-file "$dir_file" "$@" || status=$?
    dir=$(cat "$dir_file" 2>/dev/null || true)
    [ $status -ne 2 ] || exit 2
    [ -n "$dir" ] || { log "FAILED: the sweep stopped (./run_all.sh --resume continues it)"; exit 1; }
    "$PY" harness/results.py flatten "$dir/bench.json" >"$dir/bench.tsv"
    "$PY" harness/results.py summary "$dir/bench.json" --markdown >"$dir/summary.md" || status=1
    draw "$dir/figures" "$dir/bench.json"
    echo
    "$PY" harness/results.py summary "$dir/bench.json" || true
    log "results: $dir (bench.json, bench.tsv, summary.md, figures/)"
    [ $status -eq 0 ] || log "FAILED: some configuration's contacts differ from the reference, or one failed with an error (see summary)"
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
