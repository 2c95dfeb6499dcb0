#!/usr/bin/env python3
"""nsearch-bench results: summary, flattened table, plot data, comparison.

    results.py summary BENCH.json [--markdown]     the summary tables
    results.py flatten BENCH.json                  one row per configuration (TSV)
    results.py plotdata BENCH.json [MORE.json ...] --out DIR
                                                   data files for plots/*.gp
    results.py pair A.json B.json --out DIR        copies of A and B whose all-cores
                                                   rows share a name, for compare.py
    results.py ratios COMPARE.json A.json B.json --out DIR
                                                   ratios of medians and compare.py's
                                                   U-test as plot data

Standard library only. Times are Google Benchmark's real (manual) times in ms.
"""
import json
import math
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^(?P<kernel>[^/]+)/(?P<workload>[^/]+)/n:(?P<n>\d+)/threads:(?P<threads>\d+)")
FIT_MIN_N = 1000


class Config:
    """One kernel/workload/n/threads configuration and its aggregates."""

    def __init__(self, kernel, workload, n, threads):
        self.kernel, self.workload, self.n, self.threads = kernel, workload, n, threads
        self.verdict = None
        self.median = self.min = self.max = self.cv = None
        self.counters = {}
        self.repetitions = 0

    @property
    def name(self):
        return f"{self.kernel}/{self.workload}/n:{self.n}/threads:{self.threads}"

    @property
    def valid(self):
        return bool(self.verdict and self.verdict.startswith("VALID"))


class Results:
    def __init__(self, path):
        with open(path) as f:
            data = json.load(f)
        self.path = path
        self.context = data.get("context", {})
        self.configs = {}
        for b in data.get("benchmarks", []):
            m = NAME.match(b.get("run_name", b["name"]))
            if not m:
                continue
            key = (m["kernel"], m["workload"], int(m["n"]), int(m["threads"]))
            c = self.configs.get(key) or Config(*key)
            self.configs[key] = c
            if b.get("error_occurred"):
                c.verdict = b.get("error_message") or "error"
                continue
            if b.get("label"):
                c.verdict = b["label"]
            if b.get("run_type") == "aggregate":
                agg = b.get("aggregate_name")
                if agg == "median":
                    c.median = b["real_time"]
                    c.counters = b
                elif agg == "min":
                    c.min = b["real_time"]
                elif agg == "max":
                    c.max = b["real_time"]
                elif agg == "cv":
                    c.cv = b["real_time"]
            else:
                c.repetitions += 1
                if c.median is None:  # a run without aggregates (1 repetition)
                    c.median = c.min = c.max = b["real_time"]
                    c.counters = b

    def machine(self):
        ctx = self.context
        return (f"{ctx.get('host_name', '?')}: {ctx.get('cpu_model', '?')}, "
                f"{ctx.get('cores_online', ctx.get('num_cpus', '?'))} cores")

    def subtitle(self):
        return f"{self.machine()}, {self.context.get('date', '?')[:10]}"

    def series(self, workload, kernel, threads):
        return sorted((c for c in self.configs.values()
                       if c.workload == workload and c.kernel == kernel and c.threads == threads
                       and c.median), key=lambda c: c.n)

    def lines(self, workload=None):
        """(kernel, threads) pairs in table order, for a workload or all."""
        return sorted({(c.kernel, c.threads) for c in self.configs.values()
                       if workload is None or c.workload == workload},
                      key=lambda kt: (kernel_order(kt[0]), kt[1]))

    def workloads(self):
        order = ["uniform", "dambreak", "clusters", "polydisperse", "sheet", "settled"]
        found = {c.workload for c in self.configs.values()}
        return [w for w in order if w in found] + sorted(found - set(order))

    def max_threads(self):
        return max((c.threads for c in self.configs.values()), default=1)


KERNELS = ["naive", "naive_omp", "grid_dense", "hash_serial", "hash_parallel", "grid_sorted",
           "bound"]
BOUND = "bound"  # not a kernel: grid_sorted's binning + a contact count, the floor


def bound_multiple(results, c):
    """c's median as a multiple of the bound configuration's at the same workload,
    n and threads (the 1-thread bound for serial kernels); None without one."""
    b = results.configs.get((BOUND, c.workload, c.n, c.threads))
    return c.median / b.median if b and b.median and c.median else None


def kernel_order(k):
    return (KERNELS.index(k) if k in KERNELS else len(KERNELS), k)


def fit_exponent(points):
    """Least-squares slope of log(time) on log(n); None with fewer than 2 points."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return None if sxx == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def exponent(results, kernel, threads, workload="uniform"):
    return fit_exponent([(c.n, c.median) for c in results.series(workload, kernel, threads)
                         if c.n >= FIT_MIN_N])


def line_name(kernel, threads, results):
    return f"{kernel} T={threads}" if kernel_parallel(kernel, results) else kernel


def kernel_parallel(kernel, results):
    return any(c.threads > 1 for c in results.configs.values() if c.kernel == kernel)


def fmt(x, spec=".4g"):
    return "-" if x is None else format(x, spec)


def table(rows, markdown):
    if markdown:
        out = ["| " + " | ".join(str(x) for x in rows[0]) + " |",
               "|" + "|".join("---" for _ in rows[0]) + "|"]
        out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows[1:]]
        return "\n".join(out)
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(str(x).ljust(widths[c]) for c, x in enumerate(r)).rstrip()
                     for r in rows)


def summary(results, markdown=False):
    out = [f"# nsearch-bench summary\n" if markdown else "nsearch-bench summary",
           f"Machine: {results.machine()}; date {results.context.get('date', '?')}; commit "
           f"{results.context.get('git_commit', '?')[:12]}"
           f"{' (modified)' if results.context.get('git_modified') == 'true' else ''}; "
           f"OMP_WAIT_POLICY={results.context.get('OMP_WAIT_POLICY', '?')}.",
           "Times are medians of the repetitions; exponent k of time ~ n^k is fitted on "
           f"uniform, n >= {FIT_MIN_N}; speed-up is over naive (1 thread) at the same n; "
           "x bound is the time as a multiple of the bound configuration's (grid_sorted's "
           "binning plus a vectorised contact count, no output) at the same n and threads."]
    for w in results.workloads():
        out.append(f"\n{'## ' if markdown else ''}{w}\n")
        rows = [["kernel", "threads", "largest n", "median ms", "ns/particle", "contacts/s",
                 "exponent k", "speed-up vs naive", "x bound", "verdict"]]
        for kernel, threads in results.lines(w):
            all_rows = [c for c in results.configs.values()
                        if c.workload == w and c.kernel == kernel and c.threads == threads]
            timed = [c for c in all_rows if c.median]
            c = max(timed or all_rows, key=lambda c: c.n)
            naive = results.configs.get(("naive", w, c.n, 1))
            speedup = (f"{naive.median / c.median:.1f}x" if naive and naive.median and c.median
                       else "-")
            k = exponent(results, kernel, threads) if w == "uniform" else None
            verdicts = {x.verdict for x in all_rows}
            verdict = c.verdict or "-"
            if len(verdicts) > 1:  # e.g. VALID at small n, refused at large n
                verdict = "; ".join(sorted(v for v in verdicts if v))
            rows.append([kernel, threads, c.n, fmt(c.median),
                         fmt(c.counters.get("ns_per_particle")),
                         fmt(c.counters.get("contacts_per_s"), ".3g"), fmt(k, ".3f"), speedup,
                         fmt(bound_multiple(results, c), ".2f"), verdict])
        out.append(table(rows, markdown))
    noisy = sorted((c.name, c.cv) for c in results.configs.values() if c.cv and c.cv > 0.05)
    if noisy:
        out.append(f"\n{'## ' if markdown else ''}Noise warnings\n")
        out.append(f"{len(noisy)} configurations spread more than 5% (coefficient of variation "
                   "of their repetitions); rerun them on a quieter machine:")
        out += [f"{'- ' if markdown else '  '}{name}: {100 * cv:.1f}%" for name, cv in noisy]
    return "\n".join(out) + "\n"


FLAT_COLUMNS = ["kernel", "workload", "n", "threads", "repetitions", "median_ms", "min_ms",
                "max_ms", "cv", "ns_per_particle", "contacts", "contacts_per_particle",
                "contacts_per_s", "build_ms", "query_ms", "index_bytes",
                "candidates_per_contact", "table_size", "nonempty_bucket_fraction",
                "peak_rss_bytes", "verdict"]


def flatten(results):
    lines = ["\t".join(FLAT_COLUMNS)]
    for key in sorted(results.configs, key=lambda k: (k[1], kernel_order(k[0]), k[3], k[2])):
        c = results.configs[key]
        row = [c.kernel, c.workload, c.n, c.threads, c.repetitions, c.median, c.min, c.max, c.cv]
        row += [c.counters.get(k) for k in FLAT_COLUMNS[9:-1]]
        row.append(c.verdict or "")
        lines.append("\t".join("" if x is None else (f"{x:.6g}" if isinstance(x, float) else str(x))
                               for x in row))
    return "\n".join(lines) + "\n"


# Plot data: one file per figure, blocks separated by two blank lines (gnuplot's
# `index`), each block's first line its legend title (`title columnheader(1)`).

def write_blocks(path, blocks, titled=True):
    """titled: each block's first line is its legend title (columnheader);
    otherwise a comment (histograms read every line as a bar)."""
    with open(path, "w") as f:
        for title, rows in blocks:
            f.write(f'"{title}"\n' if titled else f"# {title}\n")
            for r in rows:
                f.write(" ".join(str(x) for x in r) + "\n")
            f.write("\n\n")
    return len(blocks)


def gp_text(x):
    """A gnuplot string literal whose _ shows literally in enhanced text."""
    return '"' + x.replace("\\", "").replace('"', "'").replace("_", "\\\\_") + '"'


def plotdata(all_results, out):
    os.makedirs(out, exist_ok=True)
    r = all_results[0]
    meta = {"subtitle": r.subtitle(), "blocks": {}}
    lines = r.lines("uniform")
    naive = {c.n: c.median for c in r.series("uniform", "naive", 1)}

    # scaling: n, median, min, max
    blocks = []
    for kernel, threads in lines:
        s = r.series("uniform", kernel, threads)
        k = exponent(r, kernel, threads)
        title = line_name(kernel, threads, r) + (f", k = {k:.2f}" if k is not None else "")
        blocks.append((title, [(c.n, c.median, c.min, c.max) for c in s]))
    meta["blocks"]["scaling"] = write_blocks(os.path.join(out, "scaling.dat"), blocks)
    # guides: O(n) through the fastest line at its smallest n >= FIT_MIN_N, O(n^2)
    # through naive there
    anchors = [c for k, t in lines if k != "naive" for c in r.series("uniform", k, t)
               if c.n >= FIT_MIN_N]
    if anchors:
        n0 = min(c.n for c in anchors)
        meta["lin"] = (n0, min(c.median for c in anchors if c.n == n0))
    quad = [c for c in r.series("uniform", "naive", 1) if c.n >= FIT_MIN_N]
    if quad:
        meta["quad"] = (quad[0].n, quad[0].median)

    # per_particle: n, ns per particle; the first n where a kernel beats naive is
    # marked and named in its legend entry
    blocks, cross = [], []
    for kernel, threads in lines:
        s = r.series("uniform", kernel, threads)
        title = line_name(kernel, threads, r)
        if kernel != "naive":
            faster = [c for c in s if c.n in naive and c.median < naive[c.n]]
            if faster:
                c = faster[0]
                title += f", beats naive from n = {c.n}"
                cross.append((c.n, c.counters.get("ns_per_particle", c.median * 1e6 / c.n)))
        blocks.append((title, [(c.n, c.counters.get("ns_per_particle", c.median * 1e6 / c.n))
                               for c in s]))
    blocks.append(("beats naive from", cross))
    meta["blocks"]["per_particle"] = write_blocks(os.path.join(out, "per_particle.dat"), blocks)

    # doubling: n, t(2n)/t(n)
    blocks = []
    for kernel, threads in lines:
        times = {c.n: c.median for c in r.series("uniform", kernel, threads)}
        blocks.append((line_name(kernel, threads, r),
                       [(n, times[2 * n] / times[n]) for n in sorted(times) if 2 * n in times]))
    meta["blocks"]["doubling"] = write_blocks(os.path.join(out, "doubling.dat"), blocks)

    # bound: n, time / bound's time at the same n and threads, every kernel line on
    # uniform (the summary has the other workloads)
    blocks = []
    for kernel, threads in lines:
        rows = [(c.n, bound_multiple(r, c)) for c in r.series("uniform", kernel, threads)]
        rows = [x for x in rows if x[1] is not None]
        if kernel != BOUND and rows:
            blocks.append((line_name(kernel, threads, r), rows))
    meta["blocks"]["bound"] = write_blocks(os.path.join(out, "bound.dat"), blocks)

    # speedup: n, t(1 thread) / t(T threads), parallel kernels on uniform
    blocks = []
    for kernel, threads in lines:
        if threads == 1:
            continue
        one = {c.n: c.median for c in r.series("uniform", kernel, 1)}
        blocks.append((f"{kernel}, {threads} threads vs 1",
                       [(c.n, one[c.n] / c.median) for c in r.series("uniform", kernel, threads)
                        if c.n in one]))
    meta["blocks"]["speedup"] = write_blocks(os.path.join(out, "speedup.dat"), blocks)
    meta["threads"] = r.max_threads()

    # breakdown: the largest n every kernel line has on uniform; label, build, query
    common = set.intersection(*[{c.n for c in r.series("uniform", k, t)} for k, t in lines]) \
        if lines else set()
    n_common = max(common) if common else 0
    rows = []
    for kernel, threads in lines:
        c = r.configs.get((kernel, "uniform", n_common, threads))
        if c and c.median:
            rows.append((f'"{line_name(kernel, threads, r)}"', c.counters.get("build_ms", 0),
                         c.counters.get("query_ms", 0)))
    meta["blocks"]["breakdown"] = write_blocks(os.path.join(out, "breakdown.dat"),
                                               [("build and query", rows)], titled=False)
    breakdown_rows = len(rows)
    meta["breakdown_n"] = n_common

    # workloads: per kernel line, each workload's time and index bytes per particle at
    # the largest n measured on every workload (100,000 in the default sweep)
    wl = r.workloads()
    n_w = max((n for n in {c.n for c in r.configs.values()}
               if all(any(c.n == n and c.workload == w and c.median for c in r.configs.values())
                      for w in wl)), default=0)
    rows = []
    for kernel, threads in r.lines():
        row = [f'"{line_name(kernel, threads, r)}"']
        for w in wl:
            c = r.configs.get((kernel, w, n_w, threads))
            row.append(c.median if c and c.median else "NaN")
        for w in wl:
            c = r.configs.get((kernel, w, n_w, threads))
            row.append(c.counters["index_bytes"] / n_w if c and c.median and n_w else "NaN")
        rows.append(row)
    meta["blocks"]["workloads"] = write_blocks(os.path.join(out, "workloads.dat"),
                                               [(" ".join(wl), rows)], titled=False)
    meta["workloads"] = wl
    meta["workloads_n"] = n_w
    # the figures these results cannot draw (say, a run without uniform): run_all.sh
    # skips them and says so, rather than have gnuplot fail on an empty plot
    empty = [name for name in ("scaling", "doubling", "speedup") if meta["blocks"][name] == 0]
    empty += ["per_particle"] if not lines else []  # its last block (the markers) is always there
    empty += ["breakdown"] if breakdown_rows == 0 else []
    empty += ["workloads"] if n_w == 0 or not rows else []
    with open(os.path.join(out, "empty.txt"), "w") as f:
        f.write("".join(name + "\n" for name in empty))

    # machines: each result file's time at the largest uniform n common to all, per
    # kernel; parallel kernels once with 1 thread and once with all of each
    # machine's cores, whatever the core counts
    if len(all_results) > 1:
        ns = set.intersection(*[{c.n for c in x.configs.values() if c.workload == "uniform"
                                 and c.median} for x in all_results])
        n_m = max(ns) if ns else 0
        kernels = sorted({k for x in all_results for k, _ in x.lines("uniform")},
                         key=kernel_order)
        rows = []
        for kernel in kernels:
            parallel = any(kernel_parallel(kernel, x) for x in all_results)
            for all_cores in ((False, True) if parallel else (False,)):
                label = f"{kernel} T={'all' if all_cores else 1}" if parallel else kernel
                row = [f'"{label}"']
                for x in all_results:
                    c = x.configs.get((kernel, "uniform", n_m,
                                       x.max_threads() if all_cores else 1))
                    row.append(c.median if c and c.median else "NaN")
                rows.append(row)
        meta["blocks"]["machines"] = write_blocks(os.path.join(out, "machines.dat"),
                                                  [("machines", rows)], titled=False)
        meta["machines"] = [x.machine() for x in all_results]
        meta["machines_n"] = n_m
    with open(os.path.join(out, "meta.gp"), "w") as f:
        f.write(f'subtitle = {gp_text(meta["subtitle"])}\n')
        lin, quad = meta.get("lin", (1000, 1.0)), meta.get("quad", (1000, 10.0))
        f.write(f"lin_n0 = {lin[0]}.0\nlin_t0 = {lin[1]}\nquad_n0 = {quad[0]}.0\n"
                f"quad_t0 = {quad[1]}\n")
        f.write(f'threads = {meta["threads"]}\n')
        f.write(f'breakdown_n = {meta["breakdown_n"]}\n')
        f.write(f'workloads_n = {meta["workloads_n"]}\n')
        f.write(f'workloads = "{" ".join(meta["workloads"])}"\n')
        for name, count in meta["blocks"].items():
            f.write(f"blocks_{name} = {count}\n")
        if "machines" in meta:
            for i, m in enumerate(meta["machines"]):
                f.write(f"machine_{i + 1} = {gp_text(m)}\n")
            f.write(f'machines_count = {len(meta["machines"])}\n')
            f.write(f'machines_n = {meta["machines_n"]}\n')
    return meta


def pair(path_a, path_b, out):
    """Copies of two result files whose parallel kernels' all-cores rows share a
    name when the machines' core counts differ (threads:all(TA|TB))."""
    a, b = Results(path_a), Results(path_b)
    ta, tb = a.max_threads(), b.max_threads()
    os.makedirs(out, exist_ok=True)
    parallel = {k for r in (a, b) for k, th in r.lines() if th > 1}
    for t, path, name in ((ta, path_a, "a.json"), (tb, path_b, "b.json")):
        with open(path) as f:
            data = json.load(f)
        if ta != tb:  # a renamed copy of each all-cores row; the originals stay
            copies = []
            for bench in data.get("benchmarks", []):
                m = NAME.match(bench.get("run_name", bench["name"]))
                if m and m["kernel"] in parallel and int(m["threads"]) == t:
                    copy = dict(bench)
                    for field in ("name", "run_name"):
                        if field in copy:
                            copy[field] = copy[field].replace(f"/threads:{t}/",
                                                              f"/threads:all({ta}|{tb})/")
                    copies.append(copy)
            data["benchmarks"] = data.get("benchmarks", []) + copies
        with open(os.path.join(out, name), "w") as f:
            json.dump(data, f)
    for r, path in ((a, path_a), (b, path_b)):
        reps = min((c.repetitions for c in r.configs.values() if c.median), default=0)
        if reps < 5:
            print(f"results.py: WARNING: {path} has configurations with only {reps} "
                  "repetitions; with fewer than 5 the U-test cannot reach significance "
                  "(with 3 it never can)", file=sys.stderr)
    if ta != tb:
        print(f"results.py: the all-cores rows ({ta} and {tb} threads) are paired as "
              f"threads:all({ta}|{tb})", file=sys.stderr)


def ratios(compare_json, path_a, path_b, out):
    """Plot data for plots/compare.gp: per kernel line on uniform, n, the ratio of
    medians (B / A) and whether the U-test found the difference significant."""
    a, b = Results(path_a), Results(path_b)
    pvalues = {}
    with open(compare_json) as f:
        for entry in json.load(f):
            utest = entry.get("utest") or {}
            if "time_pvalue" in utest:
                pvalues[entry["name"].replace("/manual_time", "")] = utest["time_pvalue"]
    os.makedirs(out, exist_ok=True)
    blocks = []
    ta, tb = a.max_threads(), b.max_threads()
    for kernel, threads in a.lines("uniform"):
        # the all-cores rows pair up whatever the two machines' core counts
        other = tb if threads == ta and threads > 1 else threads
        rows = []
        for ca in a.series("uniform", kernel, threads):
            cb = b.configs.get((kernel, "uniform", ca.n, other))
            if cb and cb.median:
                name = ca.name if other == threads else ca.name.replace(
                    f"/threads:{threads}", f"/threads:all({ta}|{tb})")
                p = pvalues.get(name)
                rows.append((ca.n, cb.median / ca.median, 1 if p is not None and p < 0.05 else 0))
        if rows:
            title = line_name(kernel, threads, a) + (f" vs T={other}" if other != threads else "")
            blocks.append((title, rows))
    write_blocks(os.path.join(out, "compare.dat"), blocks)
    with open(os.path.join(out, "meta.gp"), "w") as f:
        f.write(f"subtitle = {gp_text('A: ' + a.subtitle() + '; B: ' + b.subtitle())}\n")
        f.write(f"blocks_compare = {len(blocks)}\n")


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 and argv[1] in ("-h", "--help") else 2
    cmd, args = argv[1], argv[2:]
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        args = args[:i] + args[i + 2:]
    if cmd == "summary":
        r = Results(args[0])
        sys.stdout.write(summary(r, "--markdown" in args))
        return 1 if any(c.verdict and c.verdict.startswith("INVALID")
                        for c in r.configs.values()) else 0
    if cmd == "flatten":
        sys.stdout.write(flatten(Results(args[0])))
        return 0
    if cmd == "plotdata":
        plotdata([Results(p) for p in args], out)
        return 0
    if cmd == "pair":
        pair(args[0], args[1], out)
        return 0
    if cmd == "ratios":
        ratios(args[0], args[1], args[2], out)
        return 0
    print(f"results.py: unknown command '{cmd}'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
