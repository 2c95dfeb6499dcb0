#!/usr/bin/env bash
# figures_test.sh ROOT NSEARCH SCRATCH - every committed figure is what the
# commands on docs/figures.md draw from the committed result files: each
# `./run_all.sh --plots ... --out plots` line there is run with its --out
# turned to a scratch folder, and every plots/*.svg must come out byte for
# byte the committed file, every plots/*.png and *.gif a picture of the
# committed one's size (their pixels depend on the fonts installed, the
# SVG's text does not).
set -u
ROOT=$1 NSEARCH=$2 SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH/plots" || exit 1
fails=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

# The commands: lines of docs/figures.md's code starting with
# ./run_all.sh --plots, continuation lines (ending in \) joined.
mapfile -t commands < <(sed -e 's/^    //' "$ROOT/docs/figures.md" | awk '
    joined != "" { joined = joined " " $0 } joined == "" && /^\.\/run_all\.sh --plots / { joined = $0 }
    joined != "" && !/\\$/ { gsub(/\\ +/, "", joined); print joined; joined = "" }' |
    grep -- ' --out plots$')
[ ${#commands[@]} -gt 0 ] || { echo "FAIL: no ./run_all.sh --plots ... --out plots line on docs/figures.md"; exit 1; }
cd "$ROOT" || exit 1
for c in "${commands[@]}"; do
    echo "-- ${c}"
    read -r -a words <<<"${c% --out plots}"
    NSEARCH=$NSEARCH "${words[@]}" --out "$SCRATCH/plots" >"$SCRATCH/log" 2>&1 ||
        { fail "exit $?: $c"; tail -3 "$SCRATCH/log"; }
done

# size W H of a PNG or GIF (their headers)
size() {
    python3 - "$1" <<'PY'
import struct, sys
head = open(sys.argv[1], "rb").read(24)
if head[:8] == b"\x89PNG\r\n\x1a\n":
    print(*struct.unpack(">II", head[16:24]))
elif head[:6] in (b"GIF87a", b"GIF89a"):
    print(*struct.unpack("<HH", head[6:10]))
else:
    print("not a PNG or GIF")
PY
}

count=0
for committed in "$ROOT"/plots/*.svg "$ROOT"/plots/*.png "$ROOT"/plots/*.gif; do
    [ -e "$committed" ] || continue
    name=${committed##*/} drawn=$SCRATCH/plots/${committed##*/}
    count=$((count + 1))
    if [ ! -s "$drawn" ]; then
        fail "plots/$name: no command on docs/figures.md draws it"
    elif [ "${name##*.}" = svg ]; then
        cmp -s "$committed" "$drawn" || fail "plots/$name differs from what its command draws (diff $committed $drawn)"
    elif [ "$(size "$committed")" != "$(size "$drawn")" ]; then
        fail "plots/$name: $(size "$drawn") drawn, $(size "$committed") committed"
    fi
done
[ "$count" -gt 0 ] || fail "no figure under plots/"
echo "$count committed figures checked against ${#commands[@]} commands"
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
