# lib.sh - sourced by sweep_test.sh and run_all_test.sh: the checks their
# cases share. A failed check counts in FAILS and the case goes on.
FAILS=0
unset NS_STOP_QUIET # the scripts here must say when they stop, whoever runs the tests
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# no_traceback LOG: fails when a Python traceback reached the output
no_traceback() { ! grep -q Traceback "$1" || fail "a Python traceback in $1: $(grep -m1 -A3 Traceback "$1")"; }

# wait_for GLOB SECONDS: until a file matching GLOB exists
wait_for() {
    local k
    for ((k = 0; k < $2 * 10; k++)); do
        compgen -G "$1" >/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# no_orphans WHAT PATTERN: no process whose command line holds PATTERN is left
# (after 5 s at most); those left are named, then killed
no_orphans() {
    local k
    for ((k = 0; k < 50; k++)); do
        pgrep -f "$2" >/dev/null || return 0
        sleep 0.1
    done
    fail "$1: processes left running: $(pgrep -af "$2" | head -3)"
    pkill -KILL -f "$2"
}
