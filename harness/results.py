#!/usr/bin/env python3
"""nsearch-bench results: summary, flattened table, plot data; every figure
with its 95 % interval.

    results.py summary BENCH.json [--markdown]     the summary tables
    results.py summary BENCH.json --headline       the headline workload's table alone
    results.py flatten BENCH.json                  one row per configuration (TSV)
    results.py report RUN_DIR                      RUN_DIR/bench.tsv and summary.md from
                                                   RUN_DIR/bench.json, written together,
                                                   each whole or not at all
    results.py plotdata BENCH.json [MORE.json ...] --out DIR
                                                   data files for plots/*.gp

Exit status: 0; summary 1 when a configuration is INVALID; 1 when an output
cannot be written (one line: the file, and when the disk is full the space
free and needed); 2 for a usage error or a result file that cannot be read or
is malformed (one line naming the file, entry and field).

Times are Google Benchmark's real (manual) times in ms. Every figure is a
median of the repetitions with a 95 % interval from a nested bootstrap over
rounds (separate processes) and the repetitions inside them (stats.py);
derived figures (speed-ups, multiples of a floor, doubling ratios,
exponents) take their intervals from the same replicates; so do bench.tsv's
rates and phases (no column holds one repetition's figure). A figure resting on
a configuration timed in fewer rounds than the run is marked * and the
configuration listed. The provenance is every process's context: a field the
processes differ in says so. The summary also gives the machine's state through
the run (the witness each process timed at its start, the memory probe timed
after every repetition). The machine comparison is compare.py.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import os
import sys
from collections import Counter

import numpy as np

import benchdata
import stats
from report import gp_text, table
from stats import text as show

# The exponent k of time ~ n^k is fitted on uniform over one n range for every
# kernel: from FIT_MIN_N (below, fixed costs dominate) to the largest n that
# every fitted line reaches (the quadratic kernels stop at 100,000).
FIT_MIN_N = 1000
BOUND = "bound"  # not a kernel: grid_sorted's binning plus its contact count, no output
WRITE = "write"  # not a kernel: streaming the contacts' bytes to memory
FLOORS = (BOUND, WRITE)

# A figure whose interval rests on fewer processes than the others' carries this
# mark and a note: in compare.py, a configuration timed in one round (its
# interval covers one process); in the summary, one timed in fewer rounds than
# the run. A configuration never timed (0 rounds) is not timed, not one round.
ROUNDS_MARK = "*"
ONE_PROCESS_NOTE = (f"{ROUNDS_MARK} one round only: the interval covers the spread of the "
                    "repetitions within one process, not the spread between processes, so it "
                    "is too narrow to decide between two processes (or machines); measure "
                    f"several rounds (the sweep's default is {stats.DEFAULT_ROUNDS}).")


def one_process(c):
    """Whether c was timed in exactly one round (0 rounds: not timed)."""
    return len(c.rounds) == 1


def fewer_rounds(c, run):
    """Whether c was timed, but in fewer rounds than the run measured."""
    return 0 < len(c.rounds) < run.rounds


def mark(flag):
    """ROUNDS_MARK when flag, else ''."""
    return ROUNDS_MARK if flag else ""


class Figures:
    """A run and the bootstrap estimate of every configuration, made once."""

    def __init__(self, path):
        self.run = benchdata.load(path)
        self._est = {}

    def est(self, c):
        """The median's Estimate of a configuration (None when it has no times)."""
        if c is None or not c.rounds:
            return None
        if c.key not in self._est:
            self._est[c.key] = stats.bootstrap(c.rounds, rng=stats.generator(c.name))
        return self._est[c.key]

    def config(self, kernel, workload, n, threads):
        return self.run.configs.get((kernel, workload, n, threads))

    def counter_est(self, c, name):
        rounds = c.counter_rounds(name)
        if not rounds or not any(len(r) for r in rounds):
            return None
        return stats.bootstrap(rounds, rng=stats.generator(c.name + "/" + name))

    def mark(self, *configs):
        """ROUNDS_MARK when a figure rests on a configuration timed in fewer rounds
        than the run (None: none there)."""
        return mark(any(c is not None and fewer_rounds(c, self.run) for c in configs))

    def text(self, e, *configs, scale=1.0):
        """stats.text of an Estimate, marked when it rests on one of configs timed in
        fewer rounds than the run."""
        return show(e, scale) + (self.mark(*configs) if e is not None else "")

    def floor_configs(self, c, which):
        """The configurations of floor_est(c, which)."""
        key = (c.workload, c.n, c.threads)
        return [self.config(k, *key) for k in ((BOUND,) if which == "bound" else FLOORS)]

    def floor_est(self, c, which):
        """The floor configurations at c's workload, n and threads."""
        if which == "bound":
            return self.est(self.config(BOUND, c.workload, c.n, c.threads))
        b = self.est(self.config(BOUND, c.workload, c.n, c.threads))
        w = self.est(self.config(WRITE, c.workload, c.n, c.threads))
        return stats.derived(lambda x, y: x + y, b, w) if b and w else None

    def over(self, c, den):
        """c's time over an Estimate (None when either is missing)."""
        e = self.est(c)
        return stats.derived(lambda x, y: x / y, e, den) if e and den else None

    def speedup_vs_reference(self, c):
        """The reference kernel's time (1 thread) over c's, at the same n."""
        ref = self.est(self.config(self.run.reference_kernel(), c.workload, c.n, 1))
        e = self.est(c)
        return stats.derived(lambda x, y: x / y, ref, e) if ref and e else None

    def fit_range(self, workload=None):
        workload = workload or self.run.headline_workload()
        lines = [(k, t) for k, t in self.run.lines(workload, peers=False) if k not in FLOORS]
        tops = [max((c.n for c in self.run.series(workload, k, t)), default=0) for k, t in lines]
        top = min((x for x in tops if x >= FIT_MIN_N), default=0)
        return (FIT_MIN_N, top) if top > FIT_MIN_N else None

    def fit_configs(self, kernel, threads, workload=None):
        """The configurations the exponent of a line is fitted on ([] when none)."""
        workload = workload or self.run.headline_workload()
        rng = self.fit_range(workload)
        if not rng:
            return []
        return [c for c in self.run.series(workload, kernel, threads) if rng[0] <= c.n <= rng[1]]

    def exponent(self, kernel, threads, workload=None):
        s = self.fit_configs(kernel, threads, workload)
        if len({c.n for c in s}) < 2:
            return None
        return stats.slope([c.n for c in s], [self.est(c) for c in s])


def line_name(kernel, threads, run):
    return f"{kernel} T={threads}" if run.parallel(kernel) else kernel


# A repetition whose memory probe (mem_probe_ms, timed after its loop) took
# PROBE_SLOW times the run's quick probe at its thread count (its PROBE_QUICK
# quantile) or more ran while the machine's memory was slow (a neighbour on the
# shared cache or memory, or the cores placed apart). On the 2-vCPU Zen 4 VM the
# probe sat either near 0.6 ms or near 1.5 (2.3 at times), most often the latter,
# so the median would not do as the reference: the quick state is the machine's
# own, the slow one what the host made of it.
PROBE_SLOW = 1.5
PROBE_QUICK = 0.10


def probe_of(b):
    """A repetition's memory probe in ms, or None (a file made before it was
    recorded, or no probe)."""
    p = b.get("mem_probe_ms")
    return float(p) if isinstance(p, (int, float)) and p > 0 else None


def probe_rounds(run):
    """The memory probes of the run's repetitions, by thread count and round:
    {threads: {round: [ms]}} (empty for a file without probes)."""
    out = {}
    for c in run.configs.values():
        for rnd, b in c.entries:
            p = probe_of(b)
            if p is not None:
                out.setdefault(c.threads, {}).setdefault(rnd, []).append(p)
    return out


def quick_of(rounds):
    """The quick probe (the PROBE_QUICK quantile) of one thread count's probes,
    {round: [ms]}."""
    return float(np.quantile(np.concatenate(list(rounds.values())), PROBE_QUICK))


def probe_quick(run):
    """The quick memory probe of the run's repetitions at each thread count:
    {threads: ms}."""
    return {t: quick_of(r) for t, r in probe_rounds(run).items()}


def disturbed(c, quick_probe=None, steal_ms=1.0, invol_csw=50):
    """What disturbed c's repetitions: how many met slow memory (a probe
    PROBE_SLOW times quick_probe or more), then the rounds with CPU steal or many
    involuntary context switches (per-repetition counters of nsearch-bench)."""
    notes = []
    probes = [p for p in (probe_of(b) for _, b in c.entries) if p is not None]
    slow = [p for p in probes if quick_probe and p >= PROBE_SLOW * quick_probe]
    if slow:
        notes.append(f"memory slow in {len(slow)} of {len(probes)} repetitions (the probe up "
                     f"to {max(slow) / quick_probe:.1f}x the quick one)")
    for rnd, b in c.entries:
        s, v = float(b.get("steal_ms", 0) or 0), float(b.get("invol_csw", 0) or 0)
        if s >= steal_ms or v >= invol_csw:
            notes.append(f"round {rnd}: steal {s:.1f} ms, {v:.0f} involuntary switches")
    return notes


def probe_lines(run, markdown, threads=None):
    """The memory probe through the run: at each thread count (of threads, when
    given) its median over the repetitions with its interval (a bootstrap over
    the rounds and the repetitions in them), its range, its quick value and how
    many repetitions were slow."""
    item = "- " if markdown else "  "
    out = []
    for t, rounds in sorted(probe_rounds(run).items()):
        if threads is not None and t not in threads:
            continue
        times = [np.asarray(r) for _, r in sorted(rounds.items())]
        e = stats.bootstrap(times, rng=stats.generator(f"mem_probe/{t}"))
        v, quick = np.concatenate(times), quick_of(rounds)
        slow = int(np.sum(v >= PROBE_SLOW * quick))
        out.append(f"{item}{t} thread{'s' if t != 1 else ''}: {show(e)}, "
                   f"{v.min():.3g}-{v.max():.3g} over {len(v)} repetitions; quick "
                   f"{quick:.3g}, {slow} slow")
    if out:
        out.insert(0, "Memory probe after each repetition (ms: median over the repetitions "
                      "[95 % interval, a bootstrap over the rounds and the repetitions in "
                      f"them], range; quick: its {PROBE_QUICK:.0%} quantile; slow: "
                      f"{PROBE_SLOW:.1f}x the quick one or more):")
    return out


# A process whose witness took this much longer than its slot's median over
# the run started in a slower state of the machine than most.
WITNESS_SLOW = 1.10


def witness_estimate(rounds, slot, B=stats.DEFAULT_B):
    """The median of a witness slot's times with its interval (bootstrap over the
    rounds and the processes in them), or None for too few processes."""
    if sum(len(r) for r in rounds) < benchdata.WITNESS_MIN_PROCESSES:
        return None
    return stats.bootstrap(rounds, B, stats.generator("witness/" + slot))


def witness_lines(run, markdown):
    """The machine's state through the run as the witness tells it: that of each
    slot (median over the processes, with its interval, and range) and the
    processes that started slow, named by the configurations they measured."""
    slots = run.witness_rounds()
    if not slots:
        return []
    item = "- " if markdown else "  "
    what = benchdata.WITNESS_WHAT
    out = [f"{what[0].upper()}{what[1:]} (ms: median over the processes [95 % interval, a "
           "bootstrap over the rounds and the processes in them], range):"]
    medians = {}
    for slot, rounds in slots.items():
        values = np.concatenate(rounds)
        e = witness_estimate(rounds, slot)
        medians[slot] = e.value if e else float(np.median(values))
        count = f"{len(values)} process{'es' if len(values) != 1 else ''}"
        out.append(f"{item}{slot}: {show(e) if e else f'{medians[slot]:.4g} (no interval)'}, "
                   f"{values.min():.4g}-{values.max():.4g} over {count}")
    measured = {}  # part -> (round, workload, n, threads) it measured
    for c in run.configs.values():
        for rnd, part in c.parts.items():
            measured[part] = (rnd, c.workload, c.n, c.threads)
    slow = []
    for part, (rnd, times) in run.witness().items():
        worst = max(x / medians[benchdata.witness_slot(len(times), t)]
                    for t, x in enumerate(times))
        if worst < WITNESS_SLOW:
            continue
        if part in measured:
            _, w, n, t = measured[part]
            key, what = (rnd, run.workload_order(w), n, t), f"{w} n={n} threads={t}"
        else:
            key, what = (rnd, (-1, ""), 0, 0), f"process {part} (no configuration timed)"
        slow.append((key, f"{item}round {rnd}, {what}: the witness {worst:.2f}x its median"))
    if slow:
        out.append(f"{len(slow)} of {len(run.witness())} processes started with a witness "
                   f"{WITNESS_SLOW:.2f}x or more its median (a slower state of the machine at "
                   "their start; a snapshot, which predicts the process's own times only "
                   "weakly):")
        out += [line for _, line in sorted(slow)]
    return out


def peer_ratio(f, c, kernel, threads):
    """c's time over kernel's at c's workload and n with `threads` threads, as text
    (marked when either was timed in fewer rounds than the run)."""
    k = f.config(kernel, c.workload, c.n, threads)
    return f.text(f.over(c, f.est(k)), c, k)


def failed_text(c):
    """How many of c's repetitions failed, and why: '2 of 9 repetitions failed
    (round 3: skipped: ...)'."""
    whys = {}
    for rnd, why in c.errors:
        whys.setdefault(why, set()).add(rnd)
    return (f"{len(c.errors)} of {len(c.errors) + c.repetitions} repetitions failed ("
            + "; ".join(f"{rounds_text(sorted(r))}: {why}" for why, r in whys.items()) + ")")


def peer_lines(f, markdown):
    """The other libraries against the featured kernels: per workload and peer, at
    100,000 particles and at the largest n measured, the peer's time and its
    ratio to each featured kernel at the same thread count and at all threads
    (a serial peer is compared at both)."""
    run = f.run
    peers, featured = run.peer_names(), run.featured_kernels()
    missing = run.peers_missing()
    ran = any(run.is_peer(c.kernel) for c in run.configs.values())
    if not ran and not missing:
        return []  # no peer was selected for this run
    out = [f"\n{'## ' if markdown else ''}Peers: other libraries in the same run\n"]
    if ran:
        libs = "; ".join(f"{p['name']}: {p['library']} ({p['tuning']})" for p in run.peer_table)
        out.append(f"Each peer is validated like a kernel and timed the same way (build + query "
                   f"+ contacts). A ratio is the peer's time over the kernel's at the same n: "
                   f"above 1 the kernel is faster. {libs}.")
    if missing:
        out.append(f"Not in this build (their packages were missing): {missing}.")
    top = run.max_threads()
    head = ["workload", "peer", "threads", "n", "median ms"]
    for k in featured:
        head += [f"x {k} (same threads)", f"x {k} ({top} threads)"]
    rows = [head]
    for w in run.workloads():
        for peer, threads in [(k, t) for k, t in run.lines(w) if run.is_peer(k)]:
            timed = run.series(w, peer, threads)
            if not timed:
                continue
            for c in {c.n: c for c in timed if c.n in (100000, max(x.n for x in timed))}.values():
                row = [w, peer, threads, c.n, f.text(f.est(c), c)]
                for k in featured:
                    row += [peer_ratio(f, c, k, threads), peer_ratio(f, c, k, top)]
                rows.append(row)
    if len(rows) > 1:
        out.append(table(rows, markdown))
    item = "- " if markdown else "  "
    # not timed: no repetition timed at all; a configuration with some failed
    # repetitions (skipped in one round) keeps its figures from the others
    peers = [c for c in run.configs.values() if run.is_peer(c.kernel)]
    untimed = sorted((c.name, c.verdict or "no repetitions") for c in peers if not c.rounds)
    if untimed:
        out.append("Not timed (refused by the library, or skipped: one search over the "
                   "per-search limit of nsearch-bench's --peer-limit):")
        out += [f"{item}{name}: {verdict}" for name, verdict in untimed]
    partly = sorted((c.name, failed_text(c)) for c in peers if c.rounds and c.errors)
    if partly:
        out.append("Partly timed (the figures above rest on the repetitions that were timed):")
        out += [f"{item}{name}: {failed}" for name, failed in partly]
    return out


def oneshot_lines(f, markdown):
    """The one-call search (a new index and contact list, first touch timed)
    against the same kernel with its index and list reused, per workload, n and
    thread count."""
    run = f.run
    kernel = run.bound_kernel()
    rows = [["workload", "threads", "n", "oneshot ms", f"{kernel} ms (reused)",
             f"oneshot / {kernel}"]]
    for w in run.workloads():
        for c in sorted((c for c in run.configs.values()
                         if c.kernel == benchdata.ONESHOT and c.workload == w and c.rounds),
                        key=lambda c: (c.threads, c.n)):
            rc = f.config(kernel, w, c.n, c.threads)
            reused = f.est(rc)
            rows.append([w, c.threads, c.n, f.text(f.est(c), c), f.text(reused, rc),
                         f.text(f.over(c, reused), c, rc)])
    if len(rows) == 1:
        return []
    return [f"\n{'## ' if markdown else ''}One-shot search\n",
            f"oneshot is {kernel} through ns_find_contacts: a new index and a new contact list "
            "in every search, from memory given back to the system, so the first touch of that "
            "memory (the system zeroing its pages) is timed. The reused search keeps both "
            "from frame to frame.", table(rows, markdown)]


def workload_lines(f, markdown):
    """Each workload against the headline one for the featured kernels at all
    threads, at 100,000 particles and at the largest n measured: the time
    over the headline's at the same n, scaled up by the contact count where
    the workload has more contacts (t_w / (t_h * max(1, C_w / C_h))): above 1
    a contact of that workload costs more than one of the headline's, at 1 or
    below it costs no more."""
    run = f.run
    head, top = run.headline_workload(), run.max_threads()
    rows = [["kernel", "workload", "n", "median ms", f"{head} ms", "contacts / " + head,
             f"x {head} per contact"]]
    for k in run.featured_kernels():
        for w in (w for w in run.workloads() if w != head):
            timed = [c for c in run.series(w, k, top) if c.rounds]
            for c in (c for c in timed if c.n in (100000, max(x.n for x in timed))):
                h = f.config(k, head, c.n, top)
                ch, cw = (h.counters.get("contacts") if h else None), c.counters.get("contacts")
                e, eh = f.est(c), f.est(h)
                if not (e and eh and ch and cw):
                    continue
                scale = max(1.0, cw / ch)
                rows.append([k, w, c.n, f.text(e, c), f.text(eh, h), f"{cw / ch:.2f}",
                             f.text(stats.derived(lambda x, y: x / (y * scale), e, eh), c, h)])
    if len(rows) == 1:
        return []
    return [f"\n{'## ' if markdown else ''}Workloads against {head}\n",
            f"Each workload's time over {head}'s at the same n and {top} threads, scaled up by "
            "its contact count where it has more contacts than " + head + " (t_w / (t_" + head
            + " x max(1, C_w / C_" + head + "))): above 1, that workload's layout or radii cost "
            "more per contact.", table(rows, markdown)]


PROVENANCE_KEYS = ("cpu_model", "cpu_signature", "cores_online", "isa", "isa_path", "compiler",
                   "compile_flags", "path_flags", "build_type", "openmp", "benchmark_version",
                   "kernel_release", "git_commit", "git_modified", "OMP_PROC_BIND", "OMP_PLACES",
                   "OMP_WAIT_POLICY", "transparent_hugepages", "cpu_governor", "load_average")
# Distinct values of a field shown when the processes differ; the rest are counted.
PROVENANCE_SHOWN = 4


def process_threads(ctx):
    """A process's thread count from its context: OMP_NUM_THREADS (the sweep sets
    it per process), else its part's name (rR-gGGG-tT); None when neither says."""
    for text in (str(ctx.get("OMP_NUM_THREADS", "")), str(ctx.get("part", "")).rpartition("-t")[2]):
        if text.isdigit():
            return int(text)
    return None


def processes(count):
    return f"{count} process{'es' if count != 1 else ''}"


def field_text(contexts, key):
    """One field as the processes recorded it: its value where they all agree;
    else its value per thread count where that accounts for the difference
    (OMP_WAIT_POLICY: passive for 1 thread, active for more), else each value with
    how many processes had it."""
    values = [str(ctx.get(key, "not recorded")) for ctx in contexts]
    counts = Counter(values)
    if len(counts) == 1:
        return f"{key} {values[0]}"
    by_threads = {}
    for ctx, v in zip(contexts, values):
        by_threads.setdefault(process_threads(ctx), set()).add(v)
    if None not in by_threads and all(len(v) == 1 for v in by_threads.values()):
        n = Counter(process_threads(ctx) for ctx in contexts)
        return f"{key} " + ", ".join(
            f"{next(iter(v))} with {t} thread{'s' if t != 1 else ''} ({processes(n[t])})"
            for t, v in sorted(by_threads.items()))
    common = counts.most_common()
    text = ", ".join(f"{v} ({processes(k)})" for v, k in common[:PROVENANCE_SHOWN])
    if len(common) > PROVENANCE_SHOWN:
        rest = common[PROVENANCE_SHOWN:]
        text += f" and {len(rest)} other values ({processes(sum(k for _, k in rest))})"
    return f"{key} differs between the {len(contexts)} processes: {text}"


def load_text(contexts):
    """The load average at the processes' start: where one or two processes
    recorded it, their values; from WITNESS_MIN_PROCESSES on, the 1-minute load's
    median over the processes with its interval (a bootstrap over the rounds and
    the processes in them) and range."""
    recorded = [ctx for ctx in contexts if "load_average" in ctx]
    if len(recorded) < benchdata.WITNESS_MIN_PROCESSES:
        return "load_average " + " / ".join(str(ctx["load_average"]) for ctx in recorded)
    rounds = {}
    for ctx in recorded:
        try:
            one_minute = float(str(ctx["load_average"]).split()[0])
        except (ValueError, IndexError):  # 'not visible': no load to count
            continue
        rounds.setdefault(ctx.get("round", 1), []).append(one_minute)
    values = [x for _, v in sorted(rounds.items()) for x in v]
    if len(values) < benchdata.WITNESS_MIN_PROCESSES:
        return field_text(recorded, "load_average")
    e = stats.bootstrap([np.asarray(v) for _, v in sorted(rounds.items())],
                        rng=stats.generator("load_average"))
    return (f"load_average (1 min at each process's start: median over the "
            f"{processes(len(values))} [95 % interval], range) {show(e)}, "
            f"{min(values):.3g}-{max(values):.3g}")


def provenance(run, keys=PROVENANCE_KEYS):
    """The build and the machine as the run's processes recorded them in their
    contexts (every process's, not the first's), field after field (field_text;
    load_average by load_text); fields no process recorded are left out."""
    contexts = run.contexts or [run.context]
    out = []
    for key in keys:
        if not any(key in ctx for ctx in contexts):
            continue
        out.append(load_text(contexts) if key == "load_average" else field_text(contexts, key))
    return "; ".join(out)


def rounds_text(rounds):
    """'round 2' or 'rounds 1, 3'."""
    return f"round{'s' if len(rounds) > 1 else ''} {', '.join(map(str, rounds))}"


def rounds_lines(f, markdown):
    """The configurations timed in fewer rounds than the run, whose figures the
    tables mark with ROUNDS_MARK: each with the rounds it was timed in, and how
    many of its repetitions failed where some did."""
    run = f.run
    short = sorted((c for c in run.configs.values() if fewer_rounds(c, run)),
                   key=lambda c: run.sort_key(c.key))
    if not short:
        return []
    item = "- " if markdown else "  "
    # the note does not start its line with the mark: Markdown would take it for a list
    out = [f"\n{'## ' if markdown else ''}Timed in fewer rounds\n",
           f"A figure marked {ROUNDS_MARK} rests on a configuration timed in fewer rounds "
           f"than the run's {run.rounds} (below): its interval covers fewer processes; with "
           "one round, only the spread of the repetitions within one process, too narrow to "
           "decide between processes (or machines)."]
    for c in short:
        line = (f"{item}{c.name}: timed in {len(c.rounds)} of {run.rounds} "
                f"({rounds_text(c.round_ids)})")
        out.append(line + (f"; {failed_text(c)}" if c.errors else ""))
    return out


def summary(f, markdown=False, headline=False):
    """The summary; with headline, its first table alone (what the console
    shows at the end of a run: the rest is in summary.md)."""
    run = f.run
    fit = f.fit_range()
    out = ["# nsearch-bench summary\n" if markdown else "nsearch-bench summary",
           f"Machine: {run.machine_label()}; date {run.date()}. {provenance(run)}.",
           f"{run.rounds} round(s) (separate processes) of "
           f"{max((len(r) for c in run.configs.values() for r in c.rounds), default=0)} "
           "repetitions. Every figure is a median with its 95 % interval [low, high] from a "
           "bootstrap over rounds and the repetitions inside them"
           + (" (one round: the interval covers one process only)" if run.rounds < 2 else "")
           + ". Absolute times are for this machine at this moment; ratios within one run "
           "are the figures to compare.",
           f"Exponent k of time ~ n^k: fitted on {run.headline_workload()}, n from "
           + (f"{fit[0]:,} to {fit[1]:,} (the range every kernel reaches)" if fit else "-")
           + f"; speed-up: over {run.reference_kernel()} (1 thread) at the same n; x bound: "
           "the time over "
           "bound's (grid_sorted's binning plus its contact count, no output) at the same n "
           "and threads; x floor: over bound plus write (streaming the same number of "
           "contacts' bytes to memory), the least any kernel that writes its contacts "
           "could take."]
    def figures(c):
        """median ms, ns/particle, speed-up, x bound, x floor of a configuration."""
        e, kernel = f.est(c), c.kernel
        ref = f.config(run.reference_kernel(), c.workload, c.n, 1)
        floor = f.floor_est(c, "floor") if kernel not in FLOORS else None
        return [f.text(e, c), f.text(e, c, scale=1e6 / c.n if c.n else 1.0),
                f.text(f.speedup_vs_reference(c), c, ref)
                if kernel not in (run.reference_kernel(),) + FLOORS else "-",
                f.text(f.over(c, f.floor_est(c, "bound")), c,
                       *f.floor_configs(c, "bound")) if kernel not in FLOORS else "-",
                f.text(f.over(c, floor), c, *f.floor_configs(c, "floor"))]

    speedup = f"speed-up vs {run.reference_kernel()}"
    for w in [run.headline_workload()] if headline else run.workloads():
        out.append(f"\n{'## ' if markdown else ''}{w}\n")
        rows = [["kernel", "threads", "largest n", "median ms", "ns/particle", "exponent k",
                 speedup, "x bound", "x floor", "verdict"]]
        for kernel, threads in run.lines(w):
            all_rows = [c for c in run.configs.values()
                        if c.workload == w and c.kernel == kernel and c.threads == threads]
            timed = [c for c in all_rows if c.rounds]
            c = max(timed or all_rows, key=lambda c: c.n)
            k = (f.exponent(kernel, threads)
                 if w == run.headline_workload() and kernel not in FLOORS else None)
            verdicts = {x.verdict for x in all_rows if x.verdict}
            verdict = c.verdict or "-"
            if not all(v.startswith("VALID") for v in verdicts):  # e.g. refused at large n
                verdict = "; ".join(sorted(verdicts))
            ms, per, up, bound, floor = figures(c)
            rows.append([kernel, threads, c.n, ms, per,
                         f.text(k, *f.fit_configs(kernel, threads)), up, bound, floor, verdict])
        out.append(table(rows, markdown))
    if headline:
        return "\n".join(out) + "\n"
    # the headline workload again at one n every line reaches, so the rows
    # compare (the table above gives each line at its own largest n)
    fit = f.fit_range()
    if fit:
        w, n = run.headline_workload(), fit[1]
        out.append(f"\n{'## ' if markdown else ''}{w} at n = {n:,}\n")
        out.append(f"Every kernel at the largest n all of them reach on {w}.\n")
        rows = [["kernel", "threads", "median ms", "ns/particle", speedup, "x bound", "x floor"]]
        for kernel, threads in run.lines(w, peers=False):
            c = f.config(kernel, w, n, threads)
            if c and c.rounds:
                rows.append([kernel, threads, *figures(c)])
        out.append(table(rows, markdown))
    out += workload_lines(f, markdown)
    out += oneshot_lines(f, markdown)
    out += peer_lines(f, markdown)
    out += rounds_lines(f, markdown)
    state = witness_lines(run, markdown) + probe_lines(run, markdown)
    if state:
        out += [f"\n{'## ' if markdown else ''}Machine state\n"] + state
    quick = probe_quick(run)
    notes = {c.name: disturbed(c, quick.get(c.threads)) for c in run.configs.values()}
    notes = {k: v for k, v in notes.items() if v}
    wide = sorted((c.name, f.text(f.est(c), c), f.est(c))
                  for c in run.configs.values() if f.est(c))
    wide = [(name, e) for name, e, est in wide
            if (est.interval()[2] - est.interval()[1]) > 0.10 * est.value]
    if notes or wide:
        out.append(f"\n{'## ' if markdown else ''}Disturbances\n")
    if notes:
        out.append(f"{len(notes)} configurations had repetitions disturbed from outside "
                   "(CPU steal of 1 ms or more, 50 or more involuntary context switches, or a "
                   f"memory probe {PROBE_SLOW:.1f}x the run's quick one or more):")
        out += [f"{'- ' if markdown else '  '}{name}: {'; '.join(v[:3])}"
                for name, v in sorted(notes.items())]
    if wide:
        out.append(f"{len(wide)} configurations have a 95 % interval wider than 10 % of "
                   "their median: compare them with care.")
        out += [f"{'- ' if markdown else '  '}{name}: {e}" for name, e in wide]
    return "\n".join(out) + "\n"


# bench.tsv. A figure of the repetitions (a time, a rate, a phase, the peak
# memory) is their median followed by its 95 % interval's low and high, like
# median_ms, low_ms, high_ms: no column holds one repetition's figure. A count
# every repetition shares (SHARED) is one value; `varying` names any that
# differed between the repetitions, its range and whose value the row shows.
SHARED = ("contacts", "contacts_per_particle", "index_bytes", "candidates_per_contact",
          "table_size", "nonempty_bucket_fraction")
FLAT_COLUMNS = ["kernel", "workload", "n", "threads", "rounds", "repetitions",
                "failed_repetitions", "median_ms", "low_ms", "high_ms",
                "ns_per_particle", "ns_per_particle_low", "ns_per_particle_high",
                "contacts", "contacts_per_particle",
                "contacts_per_s", "contacts_per_s_low", "contacts_per_s_high",
                "build_ms", "build_ms_low", "build_ms_high",
                "query_ms", "query_ms_low", "query_ms_high",
                "index_bytes", "candidates_per_contact", "table_size", "nonempty_bucket_fraction",
                "peak_rss_bytes", "peak_rss_bytes_low", "peak_rss_bytes_high",
                "steal_ms_max", "invol_csw_max", "mem_probe_ms_max", "varying", "verdict"]


def shared_counter(c, name):
    """A counter every repetition should share (contacts, index_bytes): (value,
    note). The value where the timed repetitions agree, note ''; where they differ,
    the first's in file order and a note with the range and the round it is from;
    (None, '') when no repetition has it."""
    found = [(rnd, b[name]) for rnd, b in c.entries if name in b]
    if not found:
        return None, ""
    values = {float(v) for _, v in found}
    if len(values) == 1:
        return found[0][1], ""
    rnd, first = found[0]
    return first, (f"{name} {min(values):.6g}-{max(values):.6g} over {len(found)} repetitions "
                   f"(shown: round {rnd}'s first, {float(first):.6g})")


def interval_cells(e):
    """value, low, high of an Estimate; three empty cells for None."""
    return list(e.interval()) if e is not None else [None] * 3


def flat_row(f, c):
    """One configuration's cells, in FLAT_COLUMNS's order."""
    e = f.est(c)
    reported = lambda name: any(name in b for _, b in c.entries)
    shared, varying = {}, []
    for name in SHARED:
        shared[name], note = shared_counter(c, name)
        varying += [note] if note else []
    # the rates come from the median time and its replicates, as the benchmark
    # derives them from each repetition's time; a median of 0 ms has none
    timed = e is not None and e.reps.min() > 0
    contacts = shared["contacts"]
    per_particle = (stats.derived(lambda t: t * 1e6 / c.n, e)
                    if timed and c.n and reported("ns_per_particle") else None)
    per_s = (stats.derived(lambda t: float(contacts) * 1e3 / t, e)
             if timed and contacts is not None and reported("contacts_per_s") else None)
    row = [c.kernel, c.workload, c.n, c.threads, len(c.rounds), c.repetitions, len(c.errors)]
    row += interval_cells(e) + interval_cells(per_particle)
    row += [contacts, shared["contacts_per_particle"]] + interval_cells(per_s)
    for phase in ("build_ms", "query_ms"):
        row += interval_cells(f.counter_est(c, phase))
    row += [shared[k] for k in SHARED[2:]] + interval_cells(f.counter_est(c, "peak_rss_bytes"))
    row += [max((float(b.get(k, 0) or 0) for _, b in c.entries), default=None)
            for k in ("steal_ms", "invol_csw", "mem_probe_ms")]
    return row + ["; ".join(varying), c.verdict or ""]


def flatten(f):
    """bench.tsv: a header of FLAT_COLUMNS, then one row per configuration."""
    lines = ["\t".join(FLAT_COLUMNS)]
    for key in sorted(f.run.configs, key=f.run.sort_key):
        row = flat_row(f, f.run.configs[key])
        lines.append("\t".join("" if x is None else (f"{x:.6g}" if isinstance(x, float) else str(x))
                               for x in row))
    return "\n".join(lines) + "\n"


# Plot data: one file per figure, blocks separated by two blank lines (gnuplot's
# `index`), each block's first line its legend title (`title columnheader(1)`).
# A figure's value is followed by its interval's low and high.

def write_blocks(path, blocks, titled=True):
    """titled: each block's first line is its legend title (columnheader);
    otherwise a comment (histograms read every line as a bar)."""
    with open(path, "w") as out:
        for title, rows in blocks:
            out.write(f'"{title}"\n' if titled else f"# {title}\n")
            for r in rows:
                out.write(" ".join(str(x) for x in r) + "\n")
            out.write("\n\n")
    return len(blocks)


def vlh(e, scale=1.0):
    """value low high of an Estimate (NaN NaN NaN when missing)."""
    if e is None:
        return ("NaN", "NaN", "NaN")
    return tuple(x * scale for x in e.interval())


def plotdata(all_figures, out):
    os.makedirs(out, exist_ok=True)
    f = all_figures[0]
    r = f.run
    hw = r.headline_workload()  # uniform
    meta = {"subtitle": f"{r.machine_label()}, {r.date()}, {r.rounds} round(s)", "blocks": {},
            "headline": hw}
    lines = [(k, t) for k, t in r.lines(hw, peers=False) if k != WRITE]
    ref = r.reference_kernel()  # naive
    naive = {c.n: c for c in r.series(hw, ref, 1)}

    # scaling: n, median, low, high
    blocks = []
    for kernel, threads in lines:
        s = r.series(hw, kernel, threads)
        k = f.exponent(kernel, threads) if kernel not in FLOORS else None
        title = line_name(kernel, threads, r) + (f", k = {show(k)}" if k is not None else "")
        blocks.append((title, [(c.n, *vlh(f.est(c))) for c in s]))
    meta["blocks"]["scaling"] = write_blocks(os.path.join(out, "scaling.dat"), blocks)
    # peers: n, median, low, high of every peer and the featured kernels
    blocks = []
    for kernel, threads in r.lines(hw):
        if r.is_peer(kernel) or kernel in r.featured_kernels():
            blocks.append((line_name(kernel, threads, r),
                           [(c.n, *vlh(f.est(c))) for c in r.series(hw, kernel, threads)]))
    meta["blocks"]["peers"] = write_blocks(os.path.join(out, "peers.dat"), blocks)
    # guides: O(n) through the fastest line at its smallest n >= FIT_MIN_N, O(n^2)
    # through naive there
    anchors = [c for k, t in lines if k != ref for c in r.series(hw, k, t)
               if c.n >= FIT_MIN_N]
    if anchors:
        n0 = min(c.n for c in anchors)
        meta["lin"] = (n0, min(c.median for c in anchors if c.n == n0))
    quad = [c for c in r.series(hw, ref, 1) if c.n >= FIT_MIN_N]
    if quad:
        meta["quad"] = (quad[0].n, quad[0].median)

    # per_particle: n, ns per particle, low, high; the first n where a kernel's
    # interval lies wholly below naive's is marked and named in its legend entry
    blocks, cross = [], []
    for kernel, threads in lines:
        s = r.series(hw, kernel, threads)
        title = line_name(kernel, threads, r)
        if kernel != ref:
            faster = [c for c in s if c.n in naive and
                      f.est(c).interval()[2] < f.est(naive[c.n]).interval()[1]]
            if faster:
                c = faster[0]
                title += f", beats naive from n = {c.n}"
                cross.append((c.n, f.est(c).value * 1e6 / c.n))
        blocks.append((title, [(c.n, *vlh(f.est(c), 1e6 / c.n)) for c in s]))
    blocks.append(("beats naive from", cross))
    meta["blocks"]["per_particle"] = write_blocks(os.path.join(out, "per_particle.dat"), blocks)

    # doubling: n, t(2n)/t(n), low, high
    blocks = []
    for kernel, threads in lines:
        by_n = {c.n: c for c in r.series(hw, kernel, threads)}
        rows = [(n, *vlh(f.over(by_n[2 * n], f.est(by_n[n])))) for n in sorted(by_n)
                if 2 * n in by_n]
        blocks.append((line_name(kernel, threads, r), rows))
    written = write_blocks(os.path.join(out, "doubling.dat"), blocks)
    # a run of one n per line (--max-n 100) has no ratio to draw: nothing, not an error
    meta["blocks"]["doubling"] = written if any(rows for _, rows in blocks) else 0

    # bound: n, time / bound's time at the same n and threads, low, high
    blocks = []
    for kernel, threads in lines:
        if kernel in FLOORS:
            continue
        rows = [(c.n, *vlh(x)) for c in r.series(hw, kernel, threads)
                for x in [f.over(c, f.floor_est(c, "bound"))] if x is not None]
        if rows:
            blocks.append((line_name(kernel, threads, r), rows))
    meta["blocks"]["bound"] = write_blocks(os.path.join(out, "bound.dat"), blocks)

    # speedup: n, t(1 thread) / t(T threads), low, high, parallel kernels on uniform
    blocks = []
    for kernel, threads in lines:
        if threads == 1:
            continue
        one = {c.n: c for c in r.series(hw, kernel, 1)}
        rows = [(c.n, *vlh(f.over(one[c.n], f.est(c))))
                for c in r.series(hw, kernel, threads) if c.n in one]
        if rows:  # not when the run had one thread count only
            blocks.append((f"{kernel}, {threads} threads vs 1", rows))
    meta["blocks"]["speedup"] = write_blocks(os.path.join(out, "speedup.dat"), blocks)
    meta["threads"] = r.max_threads()

    # breakdown: the largest n every kernel line has on uniform; label, build
    # (value low high), query (value low high); not oneshot, one call with no
    # build of its own to time
    kernel_lines = [(k, t) for k, t in lines if k not in FLOORS and k != benchdata.ONESHOT]
    common = set.intersection(*[{c.n for c in r.series(hw, k, t)}
                                for k, t in kernel_lines]) if kernel_lines else set()
    n_common = max(common) if common else 0
    rows = []
    for kernel, threads in kernel_lines:
        c = f.config(kernel, hw, n_common, threads)
        if c and c.rounds:
            rows.append((f'"{line_name(kernel, threads, r)}"',
                         *vlh(f.counter_est(c, "build_ms")), *vlh(f.counter_est(c, "query_ms"))))
    meta["blocks"]["breakdown"] = write_blocks(os.path.join(out, "breakdown.dat"),
                                               [("build and query", rows)], titled=False)
    breakdown_rows = len(rows)
    meta["breakdown_n"] = n_common

    # workloads: per kernel line, each workload's time (value low high) and then
    # index bytes per particle at the largest n measured on every workload
    wl = r.workloads()
    n_w = max((n for n in {c.n for c in r.configs.values()}
               if all(any(c.n == n and c.workload == w and c.rounds for c in r.configs.values())
                      for w in wl)), default=0)
    rows = []
    for kernel, threads in r.lines():
        if kernel in FLOORS:
            continue
        row = [f'"{line_name(kernel, threads, r)}"']
        for w in wl:
            row += vlh(f.est(f.config(kernel, w, n_w, threads)))
        for w in wl:
            c = f.config(kernel, w, n_w, threads)
            row.append(c.counters["index_bytes"] / n_w if c and c.rounds and n_w
                       and "index_bytes" in c.counters else "NaN")
        rows.append(row)
    meta["blocks"]["workloads"] = write_blocks(os.path.join(out, "workloads.dat"),
                                               [(" ".join(wl), rows)], titled=False)
    meta["workloads"] = wl
    meta["workloads_n"] = n_w
    # the figures these results cannot draw (say, a run without uniform), each
    # with why: run_all.sh skips them and says so, rather than have gnuplot
    # fail on an empty plot
    no_uniform = "" if hw in r.workloads() else f"no {hw} workload"
    why = {"scaling": "no kernel", "doubling": "no n measured with its double",
           "speedup": "one thread count"}
    empty = {name: no_uniform or why[name] for name in why if meta["blocks"][name] == 0}
    if not lines:  # its last block (the markers) is always there
        empty["per_particle"] = no_uniform or "no kernel"
    if breakdown_rows == 0:
        empty["breakdown"] = no_uniform or "no kernel"
    if n_w == 0 or not rows:
        empty["workloads"] = "no n measured on every workload"
    if not any(r.is_peer(k) for k, _ in r.lines(hw)):
        empty["peers"] = no_uniform or "no other library measured"
    with open(os.path.join(out, "empty.txt"), "w") as fh:
        fh.write("".join(f"{name}: {why}\n" for name, why in empty.items()))

    # machines: each result file's time at the largest uniform n common to all, per
    # kernel; parallel kernels once with 1 thread and once with all of each
    # machine's cores, whatever the core counts
    if len(all_figures) > 1:
        runs = [x.run for x in all_figures]
        ns = set.intersection(*[{c.n for c in x.configs.values() if c.workload == hw
                                 and c.rounds} for x in runs])
        n_m = max(ns) if ns else 0
        kernels = sorted({k for x in runs for k, _ in x.lines(hw) if k != WRITE},
                         key=runs[0].kernel_order)
        rows = []
        for kernel in kernels:
            parallel = any(x.parallel(kernel) for x in runs)
            for all_cores in ((False, True) if parallel else (False,)):
                label = f"{kernel} T={'all' if all_cores else 1}" if parallel else kernel
                row = [f'"{label}"']
                for x in all_figures:
                    c = x.config(kernel, hw, n_m, x.run.max_threads() if all_cores else 1)
                    row += vlh(x.est(c))
                rows.append(row)
        meta["blocks"]["machines"] = write_blocks(os.path.join(out, "machines.dat"),
                                                  [("machines", rows)], titled=False)
        meta["machines"] = [x.machine_label() for x in runs]
        meta["machines_n"] = n_m
    with open(os.path.join(out, "meta.gp"), "w") as fh:
        fh.write(f'subtitle = {gp_text(meta["subtitle"])}\n')
        fh.write(f'headline = {gp_text(meta["headline"])}\n')
        lin, quad = meta.get("lin", (1000, 1.0)), meta.get("quad", (1000, 10.0))
        fh.write(f"lin_n0 = {lin[0]}.0\nlin_t0 = {lin[1]}\nquad_n0 = {quad[0]}.0\n"
                 f"quad_t0 = {quad[1]}\n")
        fh.write(f'threads = {meta["threads"]}\n')
        fh.write(f'breakdown_n = {meta["breakdown_n"]}\n')
        fh.write(f'workloads_n = {meta["workloads_n"]}\n')
        fh.write(f'workloads = "{" ".join(meta["workloads"])}"\n')
        for name, count in meta["blocks"].items():
            fh.write(f"blocks_{name} = {count}\n")
        if "machines" in meta:
            for i, m in enumerate(meta["machines"]):
                fh.write(f"machine_{i + 1} = {gp_text(m)}\n")
            fh.write(f'machines_count = {len(meta["machines"])}\n')
            fh.write(f'machines_n = {meta["machines_n"]}\n')
    return meta


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
    try:
        if cmd == "summary":
            f = Figures(args[0])
            sys.stdout.write(summary(f, "--markdown" in args, "--headline" in args))
            return 1 if any(c.verdict and c.verdict.startswith("INVALID")
                            for c in f.run.configs.values()) else 0
        if cmd == "flatten":
            sys.stdout.write(flatten(Figures(args[0])))
            return 0
        if cmd == "report":
            run = args[0]
            f = Figures(os.path.join(run, "bench.json"))
            program.write_all({os.path.join(run, "bench.tsv"): flatten(f),
                               os.path.join(run, "summary.md"): summary(f, True)},
                              then="free some space, then ./run_all.sh --resume finishes the run")
            return 0
        if cmd == "plotdata":
            plotdata([Figures(p) for p in args], out)
            return 0
    except benchdata.FormatError as e:
        print(f"results.py: {e}", file=sys.stderr)
        return 2
    print(f"results.py: unknown command '{cmd}'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(program.run("results.py", main, sys.argv))
