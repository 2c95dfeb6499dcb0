# checks.sh - sourced by the plot tests: check_png FILE [MIN_W MIN_H] and
# check_svg FILE record a failure through the caller's fail() unless FILE is a
# valid PNG (signature, IHDR first, IEND last, every chunk's CRC, at least
# MIN_W x MIN_H, default 400 x 300) or a well-formed SVG that draws something.

check_png() {
    [ -s "$1" ] || { fail "$1 is missing or empty"; return; }
    python3 - "$1" "${2:-400}" "${3:-300}" <<'PY' || fail "$1 is not a valid PNG"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "signature"
pos, chunks = 8, []
while pos < len(b):
    length, kind = struct.unpack(">I4s", b[pos:pos + 8])
    body = b[pos + 8:pos + 8 + length]
    crc = struct.unpack(">I", b[pos + 8 + length:pos + 12 + length])[0]
    assert zlib.crc32(kind + body) & 0xffffffff == crc, "crc of " + kind.decode()
    chunks.append(kind)
    pos += 12 + length
assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND", chunks
w, h = struct.unpack(">II", b[16:24])
assert w >= int(sys.argv[2]) and h >= int(sys.argv[3]), (w, h)
PY
}

check_svg() {
    [ -s "$1" ] || { fail "$1 is missing or empty"; return; }
    python3 - "$1" <<'PY' || fail "$1 is not a valid SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag.endswith("svg"), root.tag
assert sum(1 for e in root.iter() if e.tag.endswith(("path", "polyline", "line", "rect"))) > 10
assert any("".join(e.itertext()).strip() for e in root.iter() if e.tag.endswith("text")), "no text"
PY
}
