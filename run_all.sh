#!/usr/bin/env bash
# run_all.sh - the one entry point of nsearch-bench.
#
#   ./run_all.sh --test     install what is missing, build (Release), run every test
#   ./run_all.sh            the benchmark sweep (not built yet: see README)
#   ./run_all.sh --help
set -euo pipefail
cd "$(dirname "$0")"

usage() {
    cat <<'USAGE'
Usage: ./run_all.sh [--test] [--help]

  --test   install missing build dependencies (apt-get, as root), configure and
           build the Release preset, and run the whole ctest suite; exits
           non-zero on any failure
  --help   this text

Environment: NS_WERROR=ON turns compiler warnings into errors (CI sets it);
JOBS sets the build parallelism (default: the number of cores).
USAGE
}

log() { printf '[run_all] %s\n' "$*"; }
die() { printf 'run_all.sh: %s\n' "$*" >&2; exit 2; }

# Debian packages the build and tests need.
BUILD_PACKAGES=(cmake make gcc g++ libc6-dev pkgconf libbenchmark-dev)

# Installs missing Debian packages: as root through apt-get (saying what),
# otherwise prints the exact command and stops.
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        printf 'run_all.sh: missing packages: %s\nInstall them with:\n  sudo apt-get install -y %s\n' \
            "${missing[*]}" "${missing[*]}" >&2
        exit 1
    fi
    log "installing: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

jobs() { echo "${JOBS:-$(nproc 2>/dev/null || echo 2)}"; }

build_release() {
    ensure_packages "${BUILD_PACKAGES[@]}"
    log "configuring (preset release, NS_WERROR=${NS_WERROR:-OFF})"
    NS_WERROR="${NS_WERROR:-OFF}" cmake --preset release >/dev/null
    log "building"
    cmake --build --preset release -j "$(jobs)"
}

run_tests() {
    build_release
    log "running ctest"
    ctest --preset release -j "$(jobs)"
}

mode=sweep
while [ $# -gt 0 ]; do
    case "$1" in
        --test) mode=test ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
    shift
done

case "$mode" in
    test) run_tests ;;
    sweep)
        build_release
        log "the benchmark sweep (nsearch-bench) is not built yet; run ./run_all.sh --test for the tests"
        exit 1 ;;
esac
