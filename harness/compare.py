#!/usr/bin/env python3
"""nsearch-bench: compare two result files, configuration by configuration.

    compare.py A.json B.json --out DIR [--band 0.05] [--allow-different-builds]
                             [--replicates 2000]

For each configuration both files measured: A's and B's median times (ms) and
the ratio B / A, each with its 95 % interval from a nested bootstrap over rounds
(processes) and repetitions (harness/stats.py), and a verdict on B: faster when
the interval of B / A lies wholly below 1 - band, slower wholly above 1 + band,
equivalent wholly inside [1 - band, 1 + band], otherwise inconclusive. The
all-cores rows of parallel kernels pair up across machines with different core
counts (threads:all(TA|TB)). Per kernel, threads and workload: the geometric mean
of B / A over n, with its interval from the same replicates. Before the table,
the machine state: the two runs' witnesses (nsearch-bench's fixed work, timed on
every thread at the start of every process) side by side, with a warning when
they differ beyond the band.

Writes DIR/compare.txt (also printed), DIR/compare.tsv (one row per
configuration), DIR/compare_kernels.tsv (the geometric means) and the plot data
of plots/compare.gp: DIR/data/compare.dat (per kernel line on uniform: n, ratio,
low, high, verdict code 0 equivalent, 1 faster, 2 slower, 3 inconclusive) and
DIR/data/meta.gp. Each is written beside its path as a .tmp file first and moved
over it only when all five are written (compare.txt, compare.tsv,
compare_kernels.tsv, data/compare.dat, data/meta.gp, in that order): a run that
fails (files that cannot be read, different builds, no configuration in common,
a write error) leaves a previous comparison in DIR as it was.

The two files must come from the same build (git_commit and compile_flags of
their contexts) unless --allow-different-builds. Exit status: 0 after a
comparison (whatever the verdicts), 2 on a usage error (the command line) or
different builds, 1 when a file is missing, cannot be read or is not a result
file (malformed: the entry and field named), the files share no configuration,
or DIR cannot be written; each error is one line on standard error.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import argparse
import os
import sys

try:
    import numpy as np

    import benchdata
    import results
    import stats
    from report import gp_text, table
except ImportError as e:  # numpy and scipy: Debian's python3-numpy and python3-scipy
    print(f"compare.py: {e}; it needs numpy and scipy (Debian: apt-get install "
          "python3-numpy python3-scipy, then run it with /usr/bin/python3)", file=sys.stderr)
    sys.exit(1)

BUILD_FIELDS = ("git_commit", "compile_flags")
# What each run's header line gives besides machine, date, commit and rounds
# (results.provenance: a field the processes differ in says so).
DESCRIBE_FIELDS = ("compiler", "compile_flags", "isa_path", "load_average")


class Row:
    """One compared configuration: A's and B's configs, threads as shown."""

    def __init__(self, threads, a, b):
        self.threads, self.a, self.b = threads, a, b
        self.kernel, self.workload, self.n = a.kernel, a.workload, a.n
        self.name = f"{self.kernel}/{self.workload}/n:{self.n}/threads:{threads}"
        # a side never timed (0 rounds: refused, skipped) leaves the row not timed,
        # which is no interval at all, not one resting on one process
        self.one_process = bool(a.rounds and b.rounds) and (
            results.one_process(a) or results.one_process(b))
        self.est_a = self.est_b = self.ratio = None
        self.verdict = "not timed"

    def measure(self, replicates, band):
        if not (self.a.rounds and self.b.rounds):
            return
        rng = stats.generator(self.name)  # A's then B's replicates, independent
        self.est_a = stats.bootstrap(self.a.rounds, replicates, rng)
        self.est_b = stats.bootstrap(self.b.rounds, replicates, rng)
        self.ratio = stats.derived(np.divide, self.est_b, self.est_a)
        self.verdict = stats.verdict(*self.ratio.interval()[1:], band)

    def sort_key(self, run):
        return (run.workload_order(self.workload), run.kernel_order(self.kernel),
                threads_order(self.threads), self.n)


def threads_order(threads):
    """A thread count, then the all-cores pairs."""
    return (0, int(threads)) if threads.isdigit() else (1, 0)


def builds_differ(a, b):
    """The build fields whose values differ between the two files (or within one)."""
    out = []
    for field in BUILD_FIELDS:
        va = {str(c.get(field)) for c in [a.context] + a.contexts}
        vb = {str(c.get(field)) for c in [b.context] + b.contexts}
        if va != vb or len(va) > 1:
            out.append(f"{field} differs (A {' / '.join(sorted(va))!r}, "
                       f"B {' / '.join(sorted(vb))!r})")
    return out


def pair(a, b):
    """Rows for the configurations both files share, and, when the machines' core
    counts differ, the all-cores rows of parallel kernels paired up."""
    rows = [Row(str(key[3]), a.configs[key], b.configs[key])
            for key in a.configs.keys() & b.configs.keys()]
    ta, tb = a.max_threads(), b.max_threads()
    if ta != tb:
        parallel = {k for r in (a, b) for k, t in r.lines() if t > 1}
        for (kernel, workload, n, t), ca in a.configs.items():
            cb = b.configs.get((kernel, workload, n, tb))
            if kernel in parallel and t == ta and cb:
                rows.append(Row(f"all({ta}|{tb})", ca, cb))
    return sorted(rows, key=lambda r: r.sort_key(a))


def unshared(a, b, rows):
    """Configurations of each file that no row compares."""
    used_a = {r.a.key for r in rows}
    used_b = {r.b.key for r in rows}
    only_a = [c for k, c in a.configs.items() if k not in used_a]
    only_b = [c for k, c in b.configs.items() if k not in used_b]
    return sorted(only_a, key=lambda c: a.sort_key(c.key)), sorted(only_b, key=lambda c: b.sort_key(c.key))


def kernel_means(rows, run):
    """Per workload, kernel and threads: the geometric mean of B / A over n."""
    groups = {}
    for r in rows:
        if r.ratio is not None:
            groups.setdefault((r.workload, r.kernel, r.threads), []).append(r)
    out = []
    for (workload, kernel, threads), rs in groups.items():
        mean = stats.geometric_mean(*(r.ratio for r in rs))
        out.append({"workload": workload, "kernel": kernel, "threads": threads,
                    "ns": [r.n for r in rs], "mean": mean,
                    "one_process": any(r.one_process for r in rs)})
    return sorted(out, key=lambda m: (run.workload_order(m["workload"]),
                                      run.kernel_order(m["kernel"]), threads_order(m["threads"])))


def describe(run):
    """A run's header line: file, machine, date, commit, rounds x repetitions, then
    the compiler, flags, code path and load its processes recorded."""
    rounds = sorted({len(c.rounds) for c in run.configs.values() if c.rounds})
    reps = sorted({len(x) for c in run.configs.values() for x in c.rounds})
    span = lambda v: "?" if not v else str(v[0]) if v[0] == v[-1] else f"{v[0]}-{v[-1]}"
    ctx = run.context
    commit = str(ctx.get("git_commit", "?"))[:12]
    modified = " (modified)" if ctx.get("git_modified") == "true" else ""
    built = results.provenance(run, DESCRIBE_FIELDS)
    return (f"{run.path}: {run.machine_label()}; {run.date()}; commit {commit}{modified}; "
            f"{span(rounds)} round{'s' if rounds != [1] else ''} x {span(reps)} repetitions"
            + (f"; {built}" if built else ""))


def witness_report(a, b, band, replicates):
    """The machine state of the two runs side by side: per witness slot, A's and
    B's medians over their processes and B/A, each with its interval, and a
    warning when B/A lies outside the band."""
    wa, wb = a.witness_rounds(), b.witness_rounds()
    if not (wa and wb):
        return ["Machine state: not compared (a file has no witness: made before it was "
                "recorded)."]
    why = a.witness_comparable(b)
    if why:
        return [f"Machine state: not compared ({why}: the witness is not the same work)."]
    slots = [s for s in wa if s in wb]
    lines = [["witness slot", "A ms [95 %]", "B ms [95 %]", "B/A [95 %]", "verdict"]]
    moved = []
    for slot in slots:
        ea = results.witness_estimate(wa[slot], slot, replicates)
        eb = results.witness_estimate(wb[slot], slot + "/B", replicates)
        if ea and eb:
            r = stats.derived(np.divide, eb, ea)
            verdict = stats.verdict(*r.interval()[1:], band)
            cells = [stats.text(ea), stats.text(eb), stats.text(r), verdict]
        else:
            ma, mb = (float(np.median(np.concatenate(w[slot]))) for w in (wa, wb))
            verdict = f"too few processes (fewer than {benchdata.WITNESS_MIN_PROCESSES})"
            cells = [f"{ma:.4g}", f"{mb:.4g}", f"{mb / ma:.3g}", verdict]
        if verdict in ("faster", "slower"):
            moved.append(slot)
        lines.append([slot] + cells)
    out = [f"Machine state: {benchdata.WITNESS_WHAT} (medians over the processes):"]
    out += [table(lines)] if slots else ["  (no slot in common)"]
    unshared = [f"{s} (only in {side})" for side, w, other in (("A", wa, wb), ("B", wb, wa))
                for s in w if s not in other]
    if unshared:
        out.append(f"Not compared: {'; '.join(unshared)}.")
    if moved:
        out.append(f"The witness differs between the runs beyond the band ({'; '.join(moved)}): "
                   "the machines, or one machine's state (a neighbour on the host's core), "
                   "differ. For two runs of one build on one machine, verdicts on "
                   "configurations with those threads may then describe the machine's state "
                   "rather than the code. (Equal witnesses do not prove equal states: the "
                   "witness sees a neighbour on the core, not one on memory bandwidth.)")
    return out


def probe_report(a, b):
    """The two runs' memory probes side by side, per thread count both have: the
    median with its interval, the quick value and the repetitions that met slow
    memory (results.probe_lines)."""
    qa, qb = results.probe_quick(a), results.probe_quick(b)
    shared = sorted(t for t in qa if t in qb)
    if not shared:
        return ["Memory probe: not compared (a file has none at a thread count the other "
                "has: made before it was recorded, or other threads)."]
    out = [f"Memory probe after each repetition ({results.PROBE_SLOW:.1f}x the run's quick "
           f"value, its {results.PROBE_QUICK:.0%} quantile, or more is slow):"]
    for side, run in (("A", a), ("B", b)):
        out += [f"  {side}:{line[1:]}"
                for line in results.probe_lines(run, markdown=False, threads=shared)[1:]]
    return out


def report(a, b, rows, means, only_a, only_b, band, replicates, build_notes):
    out = ["nsearch-bench comparison: B against A, configuration by configuration",
           f"A: {describe(a)}", f"B: {describe(b)}"]
    out += [f"Different builds (compared anyway): {n}" for n in build_notes]
    out.append(f"Times are medians in ms; [low, high] the 95 % interval (nested bootstrap "
               f"over rounds and repetitions, {replicates} replicates). B/A is the ratio of "
               f"the medians; verdict on B: faster (slower) when the interval of B/A lies "
               f"wholly below {1 - band:g} (above {1 + band:g}), equivalent when wholly "
               f"inside [{1 - band:g}, {1 + band:g}], inconclusive otherwise.")
    out += [""] + witness_report(a, b, band, replicates)
    out += probe_report(a, b)
    ta, tb = a.max_threads(), b.max_threads()
    if ta != tb:
        out.append(f"The all-cores rows of parallel kernels ({ta} threads on A, {tb} on B) "
                   f"are paired as threads:all({ta}|{tb}).")
    star = results.mark
    lines = [["configuration", "A ms [95 %]", "B ms [95 %]", "B/A [95 %]", "verdict"]]
    for r in rows:
        verdict = r.verdict + star(r.one_process)
        if r.ratio is None:
            verdict += " (" + "; ".join(f"{side}: {c.verdict or 'no repetitions'}"
                                        for side, c in (("A", r.a), ("B", r.b))
                                        if not c.rounds) + ")"
        lines.append([r.name, stats.text(r.est_a), stats.text(r.est_b),
                      stats.text(r.ratio), verdict])
    out += ["", table(lines)]
    counts = {v: sum(1 for r in rows if r.verdict == v) for v in stats.VERDICTS}
    out.append("\n" + ", ".join(f"{v} {counts[v]}" for v in stats.VERDICTS if counts[v])
               + f" (of {len(rows)} configurations)")
    if any(r.one_process for r in rows):
        out.append(results.ONE_PROCESS_NOTE)

    out += ["", "Per kernel: geometric mean of B/A over n"]
    lines = [["workload", "kernel", "threads", "n", "B/A [95 %]", "verdict"]]
    for m in means:
        _, low, high = m["mean"].interval()
        ns = m["ns"]
        lines.append([m["workload"], m["kernel"], m["threads"],
                      f"{min(ns)}-{max(ns)} ({len(ns)})" if len(ns) > 1 else str(ns[0]),
                      stats.text(m["mean"]),
                      stats.verdict(low, high, band) + star(m["one_process"])])
    out += ["", table(lines)] if means else ["(none)"]

    failed = [(side, c) for r in rows for side, c in (("A", r.a), ("B", r.b))
              if c.verdict and c.verdict.startswith("INVALID")]
    if failed:
        out += ["", "Contacts differ from the reference (their times compare a wrong result):"]
        out += [f"  {side}: {c.name}: {c.verdict}" for side, c in failed]
    out += ["", "Configurations found in only one file (not compared)"]
    for side, only in (("A", only_a), ("B", only_b)):
        groups = {}
        for c in only:  # one line per kernel, workload and threads
            groups.setdefault(f"{c.kernel}/{c.workload}/threads:{c.threads}", []).append(c.n)
        out += [f"  only in {side}: {line} at n = {', '.join(map(str, ns))}"
                for line, ns in groups.items()] or [f"  only in {side}: none"]
    return "\n".join(out) + "\n"


def num(x):
    return "" if x is None else f"{x:.6g}"


def tsv_text(rows):
    """compare.tsv: one row per configuration."""
    cols = ["configuration", "workload", "kernel", "threads", "n", "a_ms", "a_low", "a_high",
            "a_rounds", "a_repetitions", "b_ms", "b_low", "b_high", "b_rounds",
            "b_repetitions", "ratio", "ratio_low", "ratio_high", "verdict", "one_process",
            "a_check", "b_check"]
    out = ["\t".join(cols)]
    for r in rows:
        cells = [r.name, r.workload, r.kernel, r.threads, r.n]
        for c, e in ((r.a, r.est_a), (r.b, r.est_b)):
            cells += [num(x) for x in (e.interval() if e else (None,) * 3)]
            cells += [len(c.rounds), c.repetitions]
        cells += [num(x) for x in (r.ratio.interval() if r.ratio else (None,) * 3)]
        cells += [r.verdict, int(r.one_process), r.a.verdict or "", r.b.verdict or ""]
        out.append("\t".join(str(x) for x in cells))
    return "\n".join(out) + "\n"


def kernels_tsv_text(means, band):
    """compare_kernels.tsv: the geometric means per workload, kernel and threads."""
    out = ["workload\tkernel\tthreads\tn_count\tn_min\tn_max\tratio\tratio_low\t"
           "ratio_high\tverdict\tone_process"]
    for m in means:
        est, low, high = m["mean"].interval()
        out.append("\t".join(str(x) for x in [
            m["workload"], m["kernel"], m["threads"], len(m["ns"]), min(m["ns"]),
            max(m["ns"]), num(est), num(low), num(high), stats.verdict(low, high, band),
            int(m["one_process"])]))
    return "\n".join(out) + "\n"


def plot_data(a, b, rows, band):
    """The texts of data/compare.dat (per kernel line on uniform: n ratio low high
    code) and data/meta.gp, for plots/compare.gp."""
    lines = {}
    for r in rows:
        if r.workload == a.headline_workload() and r.ratio is not None:
            lines.setdefault((r.kernel, r.threads), []).append(r)
    dat = []
    for (kernel, threads), rs in lines.items():
        parallel = a.parallel(kernel) or b.parallel(kernel)
        dat.append(f'"{kernel} T={threads}"\n' if parallel else f'"{kernel}"\n')
        for r in sorted(rs, key=lambda r: r.n):
            est, low, high = r.ratio.interval()
            dat.append(f"{r.n} {est:.6g} {low:.6g} {high:.6g} "
                       f"{stats.VERDICTS.index(r.verdict)}\n")
        dat.append("\n\n")
    # the y range: every interval and the band, with a margin
    ends = [x for rs in lines.values() for r in rs for x in r.ratio.interval()[1:]]
    ends = [x for x in ends if np.isfinite(x) and x > 0] + [1 - band, 1 + band]
    one = any(r.one_process for r in rows)
    subtitle = f"A: {a.machine_label()}, {a.date()}; B: {b.machine_label()}, {b.date()}"
    meta = (f"subtitle = {gp_text(subtitle)}\n"
            f"headline = {gp_text(a.headline_workload())}\n"
            f"blocks_compare = {len(lines)}\n"
            f"band = {band:g}\n"
            f"one_process = {int(one)}\n"
            f"ratio_min = {min(ends) / 1.15:.6g}\nratio_max = {max(ends) * 1.15:.6g}\n")
    return "".join(dat), meta


def main(argv):
    p = argparse.ArgumentParser(prog="compare.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--band", type=float, default=stats.BAND,
                   help="ratios within 1 +- band are equivalent (default %(default)s)")
    p.add_argument("--allow-different-builds", action="store_true",
                   help="compare files whose git_commit or compile_flags differ")
    p.add_argument("--replicates", type=int, default=stats.DEFAULT_B,
                   help="bootstrap replicates (default %(default)s)")
    args = p.parse_args(argv)
    if not 0 < args.band < 1:
        p.error(f"--band {args.band:g} is not between 0 and 1")
    if args.replicates < 100:
        p.error("--replicates must be at least 100")
    # a file that is missing or cannot be read is exit 1, like a malformed one
    # (benchdata.load names it): only the command line is a usage error
    try:
        a, b = benchdata.load(args.a), benchdata.load(args.b)
    except (OSError, benchdata.FormatError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 1
    differ = builds_differ(a, b)
    if differ and not args.allow_different_builds:
        print(f"compare.py: different builds: {'; '.join(differ)}; "
              "--allow-different-builds compares them anyway", file=sys.stderr)
        return 2
    rows = pair(a, b)
    # decided before anything is written: a failed comparison leaves the previous
    # one in --out as it was
    if not rows:
        print(f"compare.py: {args.a} ({len(a.configs)} configurations) and {args.b} "
              f"({len(b.configs)}) share no configuration", file=sys.stderr)
        return 1
    for r in rows:
        r.measure(args.replicates, args.band)
    means = kernel_means(rows, a)
    only_a, only_b = unshared(a, b, rows)
    text = report(a, b, rows, means, only_a, only_b, args.band, args.replicates, differ)
    dat, meta = plot_data(a, b, rows, args.band)
    out = lambda *name: os.path.join(args.out, *name)
    try:
        program.write_all({out("compare.txt"): text, out("compare.tsv"): tsv_text(rows),
                           out("compare_kernels.tsv"): kernels_tsv_text(means, args.band),
                           out("data", "compare.dat"): dat, out("data", "meta.gp"): meta})
    except program.DiskFull as e:  # its line names the file and the space
        print(f"compare.py: {e.strerror}", file=sys.stderr)
        return 1
    except OSError as e:
        why = "not a folder" if isinstance(e, FileExistsError) else e.strerror
        print(f"compare.py: cannot write {e.filename or args.out}: {why}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(program.run("compare.py", main, sys.argv[1:]))
