#!/usr/bin/env python3
"""Helpers for cli_test.sh (optional: the shell script skips what needs them
when python3 is missing).

  cli_ref.py contacts FILE [RADIUS]   the contact CSV docs/design.md's predicate gives,
                                       in float32 arithmetic (every operation is
                                       rounded to float, as the C code does)
  cli_ref.py checknum FILE             every number field of a CSV (after its
                                       header) is printf("%.9g") of a float
"""
import math
import struct
import sys


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def g9(x):
    s = '%.9g' % x
    return '0' if s == '-0' else s


def read_particles(path, radius):
    pts = []
    with open(path, 'rb') as fh:
        for raw in fh.read().decode().split('\n'):
            line = raw.rstrip('\r')
            if not line.strip() or line.startswith('#'):
                continue
            fields = [f.strip() for f in line.split(',')]
            if fields[0] == 'x':
                continue
            vals = [f32(float(v)) for v in fields]
            if len(vals) == 3:
                vals.append(f32(radius))
            pts.append(vals)
    return pts


def contacts(path, radius=None):
    pts = read_particles(path, float(radius) if radius is not None else None)
    out = ['i,j,overlap,nx,ny,nz']
    n = len(pts)
    for i in range(n):
        xi, yi, zi, ri = pts[i]
        for j in range(i + 1, n):
            xj, yj, zj, rj = pts[j]
            dx, dy, dz = f32(xj - xi), f32(yj - yi), f32(zj - zi)
            d2 = f32(f32(f32(dx * dx) + f32(dy * dy)) + f32(dz * dz))
            rs = f32(ri + rj)
            if not d2 < f32(rs * rs):
                continue
            d = f32(math.sqrt(d2))
            ov = f32(rs - d)
            if d2 == 0:
                nx = ny = nz = 0.0
            else:
                nx, ny, nz = f32(dx / d), f32(dy / d), f32(dz / d)
            out.append('%d,%d,%s,%s,%s,%s' % (i, j, g9(ov), g9(nx), g9(ny), g9(nz)))
    sys.stdout.write('\n'.join(out) + '\n')


def checknum(path):
    bad = 0
    with open(path) as fh:
        next(fh)
        for lineno, line in enumerate(fh, 2):
            for field in line.rstrip('\n').split(','):
                try:
                    v = float(field)
                except ValueError:
                    v = None
                if v is None or '%.9g' % f32(v) != field:
                    bad += 1
                    if bad <= 5:
                        print('%s:%d: %r is not %%.9g of a float' % (path, lineno, field))
    return 1 if bad else 0


if __name__ == '__main__':
    if sys.argv[1] == 'contacts':
        contacts(*sys.argv[2:])
    elif sys.argv[1] == 'checknum':
        sys.exit(checknum(sys.argv[2]))
    else:
        sys.exit('unknown helper command')
