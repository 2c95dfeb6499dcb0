#!/usr/bin/env python3
"""The tables of README.md and docs/ that come from the committed result
files, copied by this script rather than typed, so they cannot drift:

    python3 docs/tables.py            rewrite every generated table in place
    python3 docs/tables.py --check    say which differ from their sources (exit 1)

A generated table sits between two HTML comments, which Markdown does not
show. The README's headline table is defined below (HEADLINE: each row a
figure picked from a summary table):

    <!-- headline table: docs/tables.py -->
    ...
    <!-- end -->

Any other is a copy of rows and columns of one table of a committed
summary (a Markdown file the harness wrote), chosen in the comment itself:

    <!-- table from=results/reference/summary.md section="uniform"
         columns="kernel|threads|median ms" where="threads=2;kernel=naive,grid_sorted" -->
    ...
    <!-- end -->

from: the summary, relative to the clone, or a bench.tsv (no section);
section: the heading the table follows (the first table after it is taken;
none: the file's first); columns: which columns, in their order (default:
all); where: conditions column=value[,value...], all of which a row must
meet (default: every row); decimals: the digits a raw number keeps after
the point (a TSV's). Numbers of four digits or
more get thousands separators, as the guide writes them.

Exit status: 0; 1 when --check finds a table that differs; 2 when a source,
section, column or row cannot be found (one line naming the document and
the comment).
"""
import os
import re
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = ["README.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))

REF = "results/reference/summary.md"
PEERS = "results/reference/peers/summary.md"
SIM = "results/reference/sim_summary.md"
# The README's headline figures: (what, source, section, row conditions,
# column, how the value reads). The link text names the file.
HEADLINE = [
    ("`naive` (all pairs), 1 thread, `uniform`, n = 100,000", REF, "uniform",
     {"kernel": "naive", "threads": "1", "largest n": "100000"}, "median ms", "{} ms"),
    # (the workloads table holds uniform's time at 100,000 with 2 threads beside powder's)
    ("`grid_sorted`, 2 threads, `uniform`, n = 100,000", REF, "Workloads against uniform",
     {"kernel": "grid_sorted", "workload": "powder", "n": "100000"}, "uniform ms", "{} ms"),
    ("`grid_sorted`, 2 threads, `uniform`, n = 1,000,000", REF, "uniform",
     {"kernel": "grid_sorted", "threads": "2"}, "median ms", "{} ms"),
    ("the same over the floor (its own binning and count plus streaming the contacts' bytes)",
     REF, "uniform", {"kernel": "grid_sorted", "threads": "2"}, "x floor", "{}×"),
    ("`hash_parallel`, 2 threads, `uniform`, n = 1,000,000", REF, "uniform",
     {"kernel": "hash_parallel", "threads": "2"}, "median ms", "{} ms"),
    ("`grid_sorted` on `powder` (radii over two decades), time per contact over `uniform`'s, "
     "n = 1,000,000", REF, "Workloads against uniform",
     {"kernel": "grid_sorted", "workload": "powder", "n": "1000000"}, "x uniform per contact",
     "{}"),
    ("nanoflann's k-d tree over `grid_sorted`, 2 threads each, `uniform`, n = 1,000,000", PEERS,
     "Peers: other libraries in the same run",
     {"workload": "uniform", "peer": "nanoflann_kdtree", "threads": "2", "n": "1000000"},
     "x grid_sorted (same threads)", "{}×"),
    ("LAMMPS's neighbour list (its own sorted order) over `grid_sorted`, 1 thread each, same",
     PEERS, "Peers: other libraries in the same run",
     {"workload": "uniform", "peer": "lammps_neighbor_sorted", "threads": "1", "n": "1000000"},
     "x grid_sorted (same threads)", "{}×"),
    ("the particle simulation with `grid_sorted`, n = 100,000, 2 threads", SIM, None,
     {"line": "grid_sorted (2 threads)"}, "fps n=100,000", "{} frames per second"),
]


class SourceError(Exception):
    """A source, section, column or row that cannot be found: exit 2."""


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def summary_table(path, section):
    """(header, rows) of the first Markdown table after the heading `section`
    of a committed file (any level; None: the file's first table), or of a
    tab-separated file (bench.tsv: one row per configuration)."""
    lines = read(path).splitlines()
    if path.endswith(".tsv"):
        header = lines[0].split("\t")
        return header, [dict(zip(header, x.split("\t"))) for x in lines[1:] if x]
    start = 0
    if section is not None:
        heads = [i for i, x in enumerate(lines) if re.fullmatch(r"#+ +" + re.escape(section), x)]
        if not heads:
            raise SourceError(f"{path} has no section '{section}'")
        start = heads[0]
    for i in range(start, len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|(-+\|)+", lines[i + 1].replace(" ", "")):
            header, rows = cells(lines[i]), []
            for x in lines[i + 2:]:
                if not x.startswith("|"):
                    break
                rows.append(dict(zip(header, cells(x))))
            return header, rows
    raise SourceError(f"{path}: no table after '{section}'")


def matching(path, section, rows, where):
    for col in where:
        if rows and col not in rows[0]:
            raise SourceError(f"{path}, {section}: no column '{col}'")
    return [r for r in rows if all(r.get(c) in v for c, v in where.items())]


def grouped(x):
    """4 digits or more, whole: thousands separators (7200 -> 7,200)."""
    return re.sub(r"(?<![\d.,])\d{4,}(?![\d.])", lambda m: f"{int(m.group()):,}", x)


def headline():
    out = ["| what | result [95 % interval] | from |", "|---|---|---|"]
    for what, path, section, where, column, form in HEADLINE:
        _, rows = summary_table(path, section)
        found = matching(path, section, rows, {c: [v] for c, v in where.items()})
        if len(found) != 1:
            raise SourceError(f"{path}, {section}: {len(found)} rows with {where}")
        if column not in found[0]:
            raise SourceError(f"{path}, {section}: no column '{column}'")
        link = os.path.relpath(path, "results/reference")
        out.append(f"| {what} | {form.format(grouped(found[0][column]))} | "
                   f"[{link}]({path}) |")
    return out


def copied(options, doc):
    """The table a `table` comment asks for."""
    path, section = options.get("from"), options.get("section")
    if not path:
        raise SourceError(f"{doc}: a table comment without from=")
    header, rows = summary_table(path, section)
    where = {}
    for cond in filter(None, options.get("where", "").split(";")):
        col, _, values = cond.partition("=")
        where[col.strip()] = [v.strip() for v in values.split(",")]
    rows = matching(path, section, rows, where)
    if not rows:
        raise SourceError(f"{doc}: no row of {path}, {section} meets {options.get('where')}")
    columns = [c.strip() for c in options["columns"].split("|")] if "columns" in options else header
    for c in columns:
        if c not in header:
            raise SourceError(f"{doc}: {path}, {section} has no column '{c}'")
    decimals = options.get("decimals")  # for a TSV's raw numbers

    def cell(x):
        if decimals is not None and re.fullmatch(r"-?\d+(\.\d*)?([eE][-+]?\d+)?", x):
            x = f"{float(x):.{int(decimals)}f}"
        return grouped(x)
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(cell(r[c]) for c in columns) + " |" for r in rows])


BEGIN = re.compile(r"<!-- (headline table|table)\b(.*?)-->", re.S)
END = "<!-- end -->"


def regenerate(doc):
    """The document with its generated tables made again; None if it has none."""
    text = read(doc)
    out, pos, found = [], 0, False
    for m in BEGIN.finditer(text):
        end = text.find(END, m.end())
        if end < 0:
            raise SourceError(f"{doc}: '{m.group(0)[:40]}...' has no {END}")
        found = True
        if m.group(1) == "headline table":
            table = headline()
        else:
            table = copied(dict(kv.split("=", 1) for kv in shlex.split(m.group(2))), doc)
        out += [text[pos:m.end()], "\n" + "\n".join(table) + "\n"]
        pos = end
    return "".join(out + [text[pos:]]) if found else None


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(__doc__.strip())
        return 0 if argv[1:] in (["-h"], ["--help"]) else 2
    differ = []
    try:
        for doc in DOCUMENTS:
            new = regenerate(doc)
            if new is None or new == read(doc):
                continue
            if check:
                differ.append(doc)
            else:
                with open(os.path.join(ROOT, doc), "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"tables.py: rewrote the tables of {doc}")
    except (SourceError, OSError, ValueError, KeyError) as e:
        print(f"tables.py: {e}", file=sys.stderr)
        return 2
    for doc in differ:
        print(f"{doc}: a table differs from the committed results it is copied from "
              "(python3 docs/tables.py rewrites it)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
