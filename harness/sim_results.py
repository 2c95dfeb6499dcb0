#!/usr/bin/env python3
"""nsearch sim results: plot data and a summary from a table of simulation runs.

    sim_results.py data SIM.TSV --out DIR       DIR/sim_fps.dat and DIR/meta.gp for
                                                plots/sim_fps.gp
    sim_results.py summary SIM.TSV [--markdown] [--out FILE]
                                                one row per line: fps at n = 1,000,
                                                10,000 and 100,000, the doubling ratios
                                                fps(n)/fps(2n), the search share, each
                                                with its 95 % interval (into FILE, written
                                                whole or not at all, with --out)

SIM.TSV is tab-separated with a header line naming (in any order) the columns

    kernel threads skin n run frames fps search_ms resolve_ms integrate_ms
    contacts_per_frame rebuilds host

one row per run of `nsearch sim --stats` (fps, the *_ms frame times and
contacts/frame as it prints them). A line is (kernel, threads, skin); each
line's value at n is the median over its runs, with the 95 % interval of a
bootstrap over the runs (each run is a process of its own, an independent
sample: stats.bootstrap with one repetition per round). A doubling ratio takes
its interval from the same replicates as its two medians; the search share is
the median of the runs' own shares. A missing column or a value that is not a
number stops with a message naming the file and line (exit 2). The date and
what made the runs come from sim_run.json beside the table (sim_sweep.py
writes it); a table without one says so.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import argparse
import math
import os
import sys

import numpy as np

import benchdata
import stats
from report import gp_text, table

COLUMNS = ["kernel", "threads", "skin", "n", "run", "frames", "fps", "search_ms", "resolve_ms",
           "integrate_ms", "contacts_per_frame", "rebuilds", "host"]
TEXT = {"kernel", "host"}
INTEGER = {"threads", "n", "run", "frames", "rebuilds"}
SUMMARY_N = [1000, 10000, 100000]


class InputError(Exception):
    pass


def read_tsv(path):
    """The rows of SIM.TSV as dicts, numbers converted; InputError on bad input."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    try:
        # UTF-8 whatever the locale, so a table reads the same on every machine
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise InputError(f"{path}: line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x})")
    if not lines or not lines[0].strip():
        raise InputError(f"{path}: line 1: empty file, expected a header line with the "
                         f"columns {' '.join(COLUMNS)}")
    header = [h.strip() for h in lines[0].split("\t")]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(f"{path}: line 1: header lacks the column"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"(header: {' '.join(header)})")
    where = {c: header.index(c) for c in COLUMNS}
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < len(header):
            raise InputError(f"{path}: line {number}: {len(fields)} fields, the header has "
                             f"{len(header)}: {line!r}")
        row = {}
        for c in COLUMNS:
            value = fields[where[c]].strip()
            if c in TEXT:
                if not value and c == "kernel":
                    raise InputError(f"{path}: line {number}: empty kernel")
                row[c] = value
                continue
            try:
                x = float(value)
            except ValueError:
                x = None
            if x is None or not math.isfinite(x):
                raise InputError(f"{path}: line {number}: column {c}: '{value}' is not a "
                                 "number")
            if c in INTEGER:
                if x != int(x) or x < 0:
                    raise InputError(f"{path}: line {number}: column {c}: '{value}' is not a "
                                     "whole number")
                x = int(x)
            if x < 0 or (c in ("threads", "n", "fps") and x == 0):
                raise InputError(f"{path}: line {number}: column {c}: '{value}' is out of "
                                 "range")
            row[c] = x
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no data rows after the header")
    return rows


class Line:
    """One (kernel, threads, skin) line: per n, the medians over the runs."""

    def __init__(self, kernel, rank, threads, skin):
        self.kernel, self.rank, self.threads, self.skin = kernel, rank, threads, skin
        self.runs = {}  # n -> [row, ...]
        self._estimates = {}  # (n, what) -> Estimate: each bootstrap made once

    @property
    def label(self):
        s = f"{self.kernel} ({self.threads} threads)"
        return s + (f" + skin {self.skin:g}" if self.skin > 0 else "")

    @property
    def sort_key(self):
        # the kernels in the order the sweep wrote them (the kernel table's); a
        # skin variant right after its kernel's line with the same thread count
        return (self.rank, self.threads, self.skin)

    def ns(self):
        return sorted(self.runs)

    def estimate(self, n, values, what):
        """The median of one value per run and its bootstrap over the runs (made
        once per (n, what): the figure, the ratios and the summary share it)."""
        key = (n, what)
        if key not in self._estimates:
            self._estimates[key] = stats.bootstrap([[v] for v in values],
                                                   rng=f"{self.label}/n:{n}/{what}")
        return self._estimates[key]

    def median(self, n, column):
        return self.estimate(n, [r[column] for r in self.runs[n]], column)

    def fps(self, n):
        return self.median(n, "fps") if n in self.runs else None

    def ratio(self, n):
        """fps(n) / fps(2n), None without a 2n row."""
        if n not in self.runs or 2 * n not in self.runs:
            return None
        return stats.derived(np.divide, self.fps(n), self.fps(2 * n))

    def search_share(self, n):
        shares = []
        for r in self.runs[n]:
            total = r["search_ms"] + r["resolve_ms"] + r["integrate_ms"]
            if total > 0:
                shares.append(r["search_ms"] / total)
        return self.estimate(n, shares, "search share") if shares else None


class SimResults:
    def __init__(self, path):
        self.path = path
        rows = read_tsv(path)
        lines, rank = {}, {}
        for row in rows:
            rank.setdefault(row["kernel"], len(rank))
            key = (row["kernel"], row["threads"], row["skin"])
            line = lines.get(key) or Line(key[0], rank[key[0]], *key[1:])
            lines[key] = line
            line.runs.setdefault(row["n"], []).append(row)
        self.lines = sorted(lines.values(), key=lambda line: line.sort_key)
        self.hosts = sorted({row["host"] for row in rows if row["host"]})
        self.run = read_run(run_path(path))
        # the day the runs started (not the file's time, which a copy changes)
        self.date = str(self.run.get("date", ""))[:10] or "date not recorded"

    def subtitle(self):
        return f"{', '.join(self.hosts) or '?'}, {self.date}"

    def provenance(self):
        """What made the runs, one line; what sim_run.json does not say is named."""
        if not self.run:
            return "No sim_run.json beside the table: the commit, build and CPU are not recorded."
        fields = [("commit", "commit"), ("tool", "tool"), ("cpu", "CPU"),
                  ("threads", "threads"), ("load_average", "load average at the start")]
        return "; ".join(f"{label} {self.run.get(key, 'not recorded')}"
                         for key, label in fields) + "."


def run_path(tsv):
    """Where a table's provenance is (sim_sweep.py writes it): sim_run.json in
    the table's folder."""
    return os.path.join(os.path.dirname(os.path.abspath(tsv)), "sim_run.json")


def read_run(path):
    """sim_run.json as a dict, {} when there is none; InputError when it cannot
    be read or is not a JSON object (read as the result files are)."""
    if not os.path.lexists(path):
        return {}
    try:
        run = benchdata.read_json(path)
    except benchdata.FormatError as e:
        raise InputError(str(e)) from None
    if not isinstance(run, dict):
        raise InputError(f"{path}: not a JSON object")
    return run


def num(x):
    return "NaN" if x is None else f"{x:.6g}"


def nums(est):
    """value low high of an Estimate, or NaN NaN NaN."""
    return " ".join(num(x) for x in (est.interval() if est else (None,) * 3))


def write_data(results, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "sim_fps.dat"), "w") as f:
        f.write(f"# {results.path}: per (kernel, threads, skin), the medians over the runs "
                "and their 95 % intervals\n"
                "# n fps fps_low fps_high ratio=fps(n)/fps(2n) ratio_low ratio_high "
                "search_ms resolve_ms\n")
        for line in results.lines:
            f.write(f'"{line.label}"\n')
            for n in line.ns():
                f.write(" ".join([str(n), nums(line.fps(n)), nums(line.ratio(n)),
                                  num(line.median(n, "search_ms").value),
                                  num(line.median(n, "resolve_ms").value)]) + "\n")
            f.write("\n\n")
    with open(os.path.join(out, "meta.gp"), "w") as f:
        f.write(f"subtitle = {gp_text(results.subtitle())}\n")
        f.write(f"blocks_sim_fps = {len(results.lines)}\n")


def short_n(n):
    for div, suffix in ((1000000, "M"), (1000, "k")):
        if n >= div and n % (div // 10) == 0:
            return f"{n / div:g}{suffix}"
    return str(n)


def summary(results, markdown=False):
    runs = sorted({len(rs) for line in results.lines for rs in line.runs.values()})
    out = ["# nsearch sim summary\n" if markdown else "nsearch sim summary",
           f"{results.path}: {results.subtitle()}. Medians over the runs "
           f"({'-'.join(map(str, (runs[0], runs[-1]) if len(runs) > 1 else runs))} per n, "
           "each a process of its own) with their 95 % intervals [low, high] by a bootstrap "
           "over the runs; a doubling ratio is fps(n)/fps(2n): 4 for O(n^2), 2 for O(n); "
           "search share is search / (search + resolve + integrate) at the largest n.",
           results.provenance(), ""]
    rows = [["line"] + [f"fps n={n:,}" for n in SUMMARY_N] + ["fps(n)/fps(2n)",
                                                              "search share"]]
    for line in results.lines:
        ratios = ", ".join(f"{short_n(n)}->{short_n(2 * n)} {stats.text(r)}"
                           for n, r in ((n, line.ratio(n)) for n in line.ns()) if r is not None)
        largest = line.ns()[-1]
        share = line.search_share(largest)
        rows.append([line.label] + [stats.text(line.fps(n)) if n in line.runs else ""
                                    for n in SUMMARY_N]
                    + [ratios or "-", "-" if share is None else
                       f"{stats.text(share)} (n={largest:,})"])
    out.append(table(rows, markdown))
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(
        prog="sim_results.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("data", help="plot data for plots/sim_fps.gp")
    p.add_argument("tsv")
    p.add_argument("--out", required=True)
    p = sub.add_parser("summary", help="a table, one row per line")
    p.add_argument("tsv")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--out", help="write the summary to this file instead of the output")
    args = parser.parse_args(argv[1:])
    try:
        results = SimResults(args.tsv)
    except InputError as e:
        print(f"sim_results.py: {e}", file=sys.stderr)
        return 2
    if args.cmd == "data":
        write_data(results, args.out)
    elif args.out:
        program.write_all({args.out: summary(results, args.markdown)})
    else:
        sys.stdout.write(summary(results, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(program.run("sim_results.py", main, sys.argv))
