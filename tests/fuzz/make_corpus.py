#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/): particle
sets for fuzz_kernels in its byte format (see fuzz_kernels.c) and particle
files for fuzz_reader. Deterministic; rerun after changing the format. Inputs
the fuzzers find are added beside these under their own names."""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def kernels_seed(settings, radius_mode, limit, particles, table=None):
    """particles: list of ((kind, k, extra...) x 3, radius bytes)."""
    out = bytearray([settings, radius_mode, limit, len(particles)])
    if (settings >> 2) % 4 != 0:
        out.append(table if table is not None else 7)
    for coords, rad in particles:
        for c in coords:
            out += bytes(b & 0xFF for b in c)
        out += bytes(rad)
    return bytes(out)


def write(folder, name, data):
    with open(os.path.join(HERE, "corpus", folder, name), "wb") as f:
        f.write(data)


def main():
    rng = random.Random(1)
    small = lambda: (0, rng.randrange(-16, 16))
    # one kind of coordinate everywhere, every radius mode
    kinds = {"small": lambda: (0, rng.randrange(256)), "multiple": lambda: (1, rng.randrange(-8, 8)),
             "boundary": lambda: (2, rng.randrange(-8, 8), rng.randrange(2)),
             "negzero": lambda: (3, 0), "huge": lambda: (4, rng.randrange(256), rng.randrange(256)),
             "subnormal": lambda: (5, rng.randrange(256), 0, 0, rng.randrange(256), rng.randrange(256)),
             "repeat": lambda: (6, 0), "near": lambda: (7, rng.randrange(-64, 64)),
             "anyfloat": lambda: (8, 0, 0x3f, rng.randrange(256), rng.randrange(256), rng.randrange(256))}
    for name, make in kinds.items():
        for mode in range(4):
            for uniform in (0, 0x80):
                n = rng.randrange(2, 60)
                ps = [((make(), make(), make()), (rng.randrange(256), 0, 0, 0, 0)) for _ in range(n)]
                data = kernels_seed(rng.randrange(256) & ~0x0C | (mode << 2 & 0x0C), mode | uniform,
                                    255, ps, rng.randrange(64))
                write("kernels", f"{name}-r{mode}{'-u' if uniform else ''}", data)
    # coincident points: everything repeats the first particle
    ps = [((small(), small(), small()), (1, 0, 0, 0, 0))] + \
         [(((6, 0), (6, 0), (6, 0)), (1, 0, 0, 0, 0))] * 200
    write("kernels", "coincident-200", kernels_seed(1, 0, 255, ps))
    write("kernels", "coincident-limit", kernels_seed(1, 0, 10, ps))
    # a cluster plus a particle 1e30 away (beyond 2^62 cells: the range refusal)
    ps = [((small(), small(), small()), (0, 0, 0, 0, 0)) for _ in range(50)]
    ps.append((((4, 7, 0), (0, 0), (0, 0)), (0, 0, 0, 0, 0)))
    write("kernels", "far-1e30", kernels_seed(2, 1, 255, ps))
    # mixed: random kinds, the full size
    for s in range(12):
        ps = []
        for _ in range(rng.randrange(100, 256)):
            coords = tuple(rng.choice(list(kinds.values()))() for _ in range(3))
            ps.append((coords, (rng.randrange(256), rng.randrange(256), 0, 0, 0)))
        write("kernels", f"mixed-{s}", kernels_seed(rng.randrange(256), rng.randrange(256),
                                                    rng.randrange(256), ps, rng.randrange(64)))
    write("kernels", "empty", b"")

    files = {
        "xyz": "x,y,z\n0,0,0\n1,0,0\n0.5,0.5,0.5\n",
        "xyzr": "x,y,z,r\n0,0,0,0.5\n1,0,0,0.5\n-1e-3,2e3,3.5,0\n",
        "noheader": "0 , 0 , 0 , 1\n1,1,1,1\n",
        "comments": "# a comment\n\nx,y,z,r\n# another\n1,2,3,4\n\n5,6,7,8\n",
        "crlf": "x,y,z\r\n1,2,3\r\n4,5,6\r\n",
        "hex-floats": "0x1p-3,0x1.8p1,-0x1p+2\n1e-45,1.17549435e-38,3.40282347e38\n",
        "nan": "x,y,z\nnan,0,0\n",
        "inf": "1,2,inf\n",
        "negative-radius": "0,0,0,-1\n",
        "overflow": "1e39,0,0\n",
        "columns": "1,2,3\n1,2,3,4\n",
        "garbage": "1,2,x3\n",
        "empty-field": "1,,3\n",
        "header-only": "x,y,z,r\n",
        "no-newline": "1,2,3",
        "nul": "1,2,3\n\0,4,5\n",
        "long-line": "1," * 1000 + "1\n",
        "spaces": "   \t\n  1 ,\t2 , 3  \n",
        "bom": "\xef\xbb\xbfx,y,z,r\r\n1,2,3,4\r\n",
        "bom-late": "1,2,3\n\xef\xbb\xbf4,5,6\n",
        "nul-late": "x,y,z\n1,2,3\n# c\n4,5\0,6\n",
        "control-bytes": "1,2,\x1b[2J\n",
        "long-number": "1." + "0" * 300 + "1,0." + "0" * 300 + "1,-3\n",
        "line-map": "\n# c\n\nx,y,z\n\n1,2,3\n# c\n4,5,6\n\n\n7,8,9\n# end\n\n",
        "tiny-radius": "0,0,0,1e-30\n1,0,0,0\n",
        "over-limit": "1,2," + " " * 65533 + "3\n",
    }
    for name, text in files.items():
        write("reader", name, text.encode("latin-1"))
    write("reader", "empty", b"")
    write("reader", "binary", bytes(range(256)))


if __name__ == "__main__":
    main()
