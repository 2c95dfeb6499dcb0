"""nsearch-bench results: the one loader of Google Benchmark JSON result files.

    run = benchdata.load("results/HOST/STAMP/bench.json")
    c = run.configs[("grid_sorted", "uniform", 100000, 2)]
    c.rounds      # [array of repetition times in ms, one per round], rounds in order

read_json() is how the harness reads any JSON file of its own (UTF-8, one-line
errors); program.write_all() is how it writes files.

Two layouts load the same way:

  * one process (today's files, parts merged by jq): {"context": {...},
    "benchmarks": [...]}; every entry belongs to round 1.
  * the sweep's rounds: {"context": {..., "rounds": R}, "contexts": [{"part": P,
    "round": r, ...}, ...], "benchmarks": [{..., "round": r, "part": P}, ...]}.
    A round runs every configuration once, in one process per part; rounds are
    separate processes, so the spread between rounds shows what one process alone
    cannot (placement, frequency, memory layout).

Only the iteration entries (`run_type: "iteration"`, one per repetition) are
timings; Google Benchmark's aggregates (mean, median, stddev, ...) are ignored.
In files without run_type (older Google Benchmark), an entry with an
aggregate_name, or whose name ends in an aggregate's suffix (_mean, _median,
_stddev, _cv, _min, _max), is an aggregate. A repetition that failed
(error_occurred: refused, skipped, INVALID) is no timing: its message is the
configuration's verdict and it is kept in Config.errors.
A file that cannot be read, is not UTF-8 JSON, or has a field the loader reads of
the wrong type raises FormatError, one line naming the file, the entry and the
field. So does a file that breaks what the tools take for granted:

  * a repetition's field of another kind than Google Benchmark gives it: every
    field is a finite number but its text and flags (TEXT_FIELDS, FLAG_FIELDS);
  * a repetition's time that is not above 0 and finite in ms (after its time_unit);
  * a configuration's name with an n or threads under 1 (or over MAX_COUNT);
  * a repetition listed twice (the same configuration, round, part and
    repetition_index; without repetition_index, an entry the same as an earlier
    one), named with the entry it repeats;
  * a process's round or part that is null (the summary reads them as they are),
    a field of the machine's label that is not text (MACHINE_TEXT), or a library
    table (kernel_table, workload_table, peer_table) that is a JSON list of
    anything but objects with the names (and a peer's library and tuning) as text.
"""
import json
import math
import os
import re
from collections import defaultdict

import numpy as np

NAME = re.compile(r"^(?P<kernel>[^/]+)/(?P<workload>[^/]+)/n:(?P<n>\d+)/threads:(?P<threads>\d+)")
# The configurations of nsearch-bench that are not kernels, listed after them:
# the one-call search of the bound kernel (a new index and list per search),
# then the floors.
ONESHOT = "oneshot"
FLOORS = ["bound", "write"]
# The tables of files written before nsearch-bench recorded the library's own
# (the context's kernel_table and workload_table): the names in table order,
# and the reference kernel.
OLD_KERNELS = ["naive", "naive_omp", "grid_dense", "hash_serial", "hash_parallel", "grid_sorted"]
OLD_WORKLOADS = ["uniform", "dambreak", "clusters", "polydisperse", "sheet", "settled"]
OLD_REFERENCE = "naive"
OLD_HEADLINE = "uniform"
OLD_FEATURED = ["grid_sorted", "hash_parallel"]
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
# The suffixes Google Benchmark gives its aggregates' names (the statistics of
# --benchmark_repetitions), what tells them apart in files without run_type.
AGGREGATE_SUFFIXES = ("_mean", "_median", "_stddev", "_cv", "_min", "_max")
# The fields of a repetition that are no numbers: Google Benchmark's text and
# flags (its json_reporter) and the sweep's part. Every other field is a count,
# a time or a counter, and the committed files hold none that is not finite.
TEXT_FIELDS = {"name", "run_name", "run_type", "aggregate_name", "aggregate_unit", "time_unit",
               "label", "error_message", "skip_message", "big_o", "part"}
FLAG_FIELDS = {"error_occurred", "skipped"}
# The context's fields of the machine's label (Run.machine_label), text where given.
MACHINE_TEXT = ("cpu_model", "cpu_signature", "cores_online", "host_name", "isa")
# The largest n or threads of a configuration's name (a C int64_t holds it).
MAX_COUNT = 2 ** 63 - 1


class Config:
    """One kernel/workload/n/threads configuration: its repetition times per round."""

    def __init__(self, kernel, workload, n, threads):
        self.kernel, self.workload, self.n, self.threads = kernel, workload, n, threads
        self.rounds = []        # np.ndarray of times in ms per round, in round order
        self.round_ids = []     # the round number of each entry of rounds
        self.counters = {}      # the first iteration entry (contacts, index_bytes, ...)
        self.entries = []       # (round, iteration entry) of every repetition, for
                                # per-repetition counters (build_ms, steal_ms, ...)
        self.parts = {}         # round -> the part (process) that measured it, or None
        self.verdict = None     # the check's label, or the error message
        self.errors = []        # (round, error message) of each repetition that failed

    @property
    def key(self):
        return (self.kernel, self.workload, self.n, self.threads)

    @property
    def name(self):
        return f"{self.kernel}/{self.workload}/n:{self.n}/threads:{self.threads}"

    @property
    def repetitions(self):
        return sum(len(r) for r in self.rounds)

    @property
    def times(self):
        """Every repetition of every round, pooled."""
        return np.concatenate(self.rounds) if self.rounds else np.empty(0)

    @property
    def median(self):
        """Median of the pooled repetitions; None when nothing was timed."""
        return float(np.median(self.times)) if self.rounds else None

    def counter_rounds(self, name):
        """A per-repetition counter (e.g. build_ms) as rounds, like rounds; [] when
        the entries lack it."""
        per = defaultdict(list)
        for rnd, b in self.entries:
            if name in b:
                per[rnd].append(float(b[name]))
        return [np.asarray(per[r]) for r in sorted(per)]

    @property
    def valid(self):
        return bool(self.verdict and self.verdict.startswith("VALID"))

    def __repr__(self):
        return f"Config({self.name}, rounds={[len(r) for r in self.rounds]})"


class Run:
    """One result file: its context(s) and configurations."""

    def __init__(self, path, context, contexts, configs):
        self.path, self.context, self.contexts, self.configs = path, context, contexts, configs
        # the library's tables, read once (None in files written before them)
        self.kernel_table = context_table(context, "kernel_table")
        self.workload_table = context_table(context, "workload_table")
        self.peer_table = context_table(context, "peer_table") or []

    def peer_names(self):
        """The other libraries' searches of this build (nsearch-bench's peers)."""
        return [p["name"] for p in self.peer_table]

    def is_peer(self, name):
        return name in self.peer_names()

    def peers_missing(self):
        """The peers the build lacked, with their packages ("" when none)."""
        return self.context.get("peers_missing", "")

    def featured_kernels(self):
        """The kernels the peers are compared with: the table's bound kernel (the
        fastest, grid_sorted) and its parallel hash (hash_parallel)."""
        if self.kernel_table is None:
            return OLD_FEATURED
        table = self.kernel_table
        hashed = [k["name"] for k in table if k.get("parallel") and k.get("uses_table_size")]
        return [self.bound_kernel()] + hashed[:1]

    def kernel_names(self):
        """The kernels in the library's table order, then the peers, oneshot, bound and
        write."""
        table = self.kernel_table
        return ((OLD_KERNELS if table is None else [k["name"] for k in table]) + self.peer_names()
                + [ONESHOT] + FLOORS)

    def bound_kernel(self):
        """The kernel bound and oneshot run (grid_sorted), from the table."""
        table = self.kernel_table or []
        return next((k["name"] for k in table if k.get("bound")), OLD_FEATURED[0])

    def workload_names(self):
        """The workloads in the library's table order."""
        table = self.workload_table
        return OLD_WORKLOADS if table is None else [w["name"] for w in table]

    def reference_kernel(self):
        """The kernel every other is validated against and sped up over (naive)."""
        if self.kernel_table is None:
            return OLD_REFERENCE
        return next((k["name"] for k in self.kernel_table if k.get("reference") == 1),
                    OLD_REFERENCE)

    def headline_workload(self):
        """The workload the scaling figures are drawn on (uniform)."""
        if self.workload_table is None:
            return OLD_HEADLINE
        return next((w["name"] for w in self.workload_table if w.get("headline")), OLD_HEADLINE)

    def kernel_order(self, kernel):
        return order_key(self.kernel_names(), kernel)

    def workload_order(self, workload):
        return order_key(self.workload_names(), workload)

    def sort_key(self, key):
        """Table order of a (kernel, workload, n, threads) key: workload, kernel,
        threads, n."""
        kernel, workload, n, threads = key
        return (self.workload_order(workload), self.kernel_order(kernel), threads, n)

    @property
    def rounds(self):
        """Distinct rounds measured (1 for a file without rounds)."""
        return len({r for c in self.configs.values() for r in c.round_ids}) or 1

    def machine_label(self):
        """CPU model, signature and widest vector ISA, cores, and host:
        'AMD EPYC (family 25 model 1 stepping 1, AVX2), 2 cores (host vm)'."""
        ctx = self.context
        cores = ctx.get("cores_online", ctx.get("num_cpus", "?"))
        sig = ctx.get("cpu_signature", "not visible")
        cpu = ", ".join(x for x in (sig != "not visible" and sig, cpu_vector_isa(ctx)) if x)
        return (f"{ctx.get('cpu_model', '?')}{f' ({cpu})' if cpu else ''}, {cores} cores "
                f"(host {ctx.get('host_name', '?')})")

    def witness(self):
        """Each process's witness times (ms, thread 0 first) and round, by part name
        (the context's index where a context has none): the fixed work
        nsearch-bench times on every thread before its benchmarks. Processes that
        did not record it (older files, 'not measured') are left out."""
        out = {}
        for k, ctx in enumerate(self.contexts):
            try:
                times = [float(x) for x in str(ctx["witness_ms"]).split()]
            except (KeyError, ValueError):
                continue
            if times and all(np.isfinite(x) and x > 0 for x in times):
                out[ctx.get("part", k)] = (int(ctx.get("round", 1)), times)
        return out

    def witness_rounds(self):
        """The witness times by slot, a process's thread count and a thread of it
        ('1 thread', '2 threads: thread 1'), then by round: {slot: [np.ndarray of
        the round's processes' times, ...]}. Slots are never pooled (a thread alone
        and one beside busy others see a neighbour differently); rounds are the
        clusters of the bootstrap, as a neighbour's presence lasts a while."""
        out = {}
        for rnd, times in self.witness().values():
            for t, x in enumerate(times):
                out.setdefault((len(times), t), {}).setdefault(rnd, []).append(x)
        return {witness_slot(*slot): [np.asarray(v) for _, v in sorted(rounds.items())]
                for slot, rounds in sorted(out.items())}

    def witness_comparable(self, other):
        """Why this run's witness cannot be set beside other's ('' when it can):
        what was timed, the compiler and the flags must be the same."""
        for key in ("witness", "compiler", "compile_flags"):
            if self.context.get(key) != other.context.get(key):
                return f"{key} differs"
        return ""

    def date(self):
        return str(self.context.get("date", "?"))[:10]

    def max_threads(self):
        return max((c.threads for c in self.configs.values()), default=1)

    def parallel(self, kernel):
        """Whether the kernel was measured with more than one thread."""
        return any(c.threads > 1 for c in self.configs.values() if c.kernel == kernel)

    def workloads(self):
        found = {c.workload for c in self.configs.values()}
        return sorted(found, key=self.workload_order)

    def lines(self, workload=None, peers=True):
        """(kernel, threads) pairs in table order, for a workload or all (without
        the peers when peers is False)."""
        return sorted({(c.kernel, c.threads) for c in self.configs.values()
                       if (workload is None or c.workload == workload)
                       and (peers or not self.is_peer(c.kernel))},
                      key=lambda kt: (self.kernel_order(kt[0]), kt[1]))

    def series(self, workload, kernel, threads):
        """The timed configurations of one line, by n."""
        return sorted((c for c in self.configs.values() if c.rounds and c.workload == workload
                       and c.kernel == kernel and c.threads == threads), key=lambda c: c.n)


# What the witness is, for the reports (nsearch-bench's context_witness)
WITNESS_WHAT = ("the witness, a fixed all-pairs count of 1,024 points timed on every thread "
                "at the start of every process")


# Below this many processes in a slot the witness gets no interval and no verdict.
WITNESS_MIN_PROCESSES = 3


def witness_slot(threads, t):
    """The name of thread t of a process of `threads` threads, for the witness."""
    return "1 thread" if threads == 1 else f"{threads} threads: thread {t}"


def cpu_vector_isa(ctx):
    """The widest vector extension the context's CPU reports ('AVX-512', 'AVX2',
    'SVE', 'NEON'), from the 'cpu:' half of its isa field; '' when not recorded."""
    cpu = str(ctx.get("isa", "")).partition("cpu:")[2]
    for name, flag in (("AVX-512", "avx512f yes"), ("AVX2", "avx2 yes"), ("SVE", "sve yes"),
                       ("NEON", "asimd yes")):
        if flag in cpu:
            return name
    return ""


def context_table(context, key):
    """A table the context records as JSON (nsearch-bench's kernel_table,
    workload_table); None when it has none or it is not a JSON list."""
    try:
        table = json.loads(context[key])
    except (KeyError, TypeError, ValueError):
        return None
    return table if isinstance(table, list) else None


def order_key(names, name):
    """Sorts names by their place in a table, others after them by name."""
    return (names.index(name) if name in names else len(names), name)


class FormatError(ValueError):
    """A result file this loader cannot read: its message is one line naming the
    file, and the entry and field where there is one."""


def shown(value):
    """A JSON value as the file has it, cut short, for an error message."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_json(path):
    """The file's JSON; FormatError when it cannot be read or is not UTF-8 JSON."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise FormatError(f"{path}: cannot read: {e.strerror}") from None
    try:
        # JSON is UTF-8 (RFC 8259), whatever the locale
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise FormatError(f"{path}: not JSON (not UTF-8 text: byte 0x{raw[e.start]:02x} on "
                          f"line {line})") from None
    try:
        return json.loads(text)
    except ValueError as e:  # JSONDecodeError, or an integer of too many digits
        raise FormatError(f"{path}: not JSON ({e})") from None
    except RecursionError:
        raise FormatError(f"{path}: not JSON (nested too deeply)") from None


def optional(where, entry, key, kind, what, default=None):
    """entry[key] when it is of kind, default when absent or null; FormatError
    (where: file and entry) otherwise. bool is not a number here, though Python
    counts it as one."""
    value = entry.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise FormatError(f"{where}: {key} is {shown(value)}, not {what}")
    return value


def present(where, entry, key, kind, what, default=None):
    """optional(), but null is not absent: for a field that is read as the file has
    it, not through the loader."""
    if key in entry and entry[key] is None:
        raise FormatError(f"{where}: {key} is null, not {what}")
    return optional(where, entry, key, kind, what, default)


def whole(where, entry, key, read=optional):
    """A round number: a whole number, at least 1 (1 when absent)."""
    value = read(where, entry, key, int, "a whole number", 1)
    if value < 1:
        raise FormatError(f"{where}: {key} is {value}, not a whole number of at least 1")
    return value


def number(where, entry, key, what="a finite number"):
    """entry[key] as a float: a finite number (bool is none, nor an integer too
    large for a float); FormatError (where: file and entry) otherwise."""
    value = entry[key]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise FormatError(f"{where}: {key} is {shown(value)}, not a number")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise FormatError(f"{where}: {key} is {shown(value)}, not {what}")
    return x


def real_time(where, entry):
    """The entry's time in ms: real_time in time_unit, a finite time above 0 in ms
    too. No search takes no time (the committed files' shortest is 0.0006 ms),
    and every ratio of the summary divides by a time."""
    if "real_time" not in entry:
        raise FormatError(f"{where}: real_time is missing")
    what = "a finite time above 0"
    value = number(where, entry, "real_time", what)
    unit = optional(where, entry, "time_unit", str, "a string", "ms")
    if unit not in TO_MS:
        raise FormatError(f"{where}: time_unit is {shown(unit)}, not one of "
                          f"{', '.join(TO_MS)}")
    ms = value * TO_MS[unit]
    if not 0 < ms < math.inf:
        raise FormatError(f"{where}: real_time is {shown(entry['real_time'])} {unit}, not "
                          f"{what} in ms")
    return ms


def fields(where, entry):
    """Every field of a repetition is a finite number but Google Benchmark's own
    text and flags (and the sweep's part): the counters are read as numbers
    wherever a figure needs them."""
    for key in entry:
        if key in TEXT_FIELDS:
            optional(where, entry, key, str, "a string")
        elif key in FLAG_FIELDS:
            optional(where, entry, key, bool, "true or false")
        else:
            number(where, entry, key)


def count(where, entry, m, key):
    """n or threads of a configuration's name: a whole number from 1 to MAX_COUNT."""
    digits = m[key]
    value = int(digits) if len(digits.lstrip("0")) <= len(str(MAX_COUNT)) else MAX_COUNT + 1
    if not 1 <= value <= MAX_COUNT:
        field = "run_name" if entry.get("run_name") else "name"  # as load() matched it
        text = digits if len(digits) <= 20 else digits[:17] + "..."
        raise FormatError(f"{where}: {field}'s {key} is {text}, not a whole number from 1 to "
                          f"{MAX_COUNT}")
    return value


def repetition(key, rnd, part, entry):
    """What tells a repetition from every other in a file: its configuration,
    round, part and repetition_index; an entry without repetition_index (older
    Google Benchmark) only by being itself."""
    if "repetition_index" in entry:
        return (key, rnd, part, entry["repetition_index"])
    return json.dumps(entry, sort_keys=True)


def twice(entry, rnd, part):
    """What makes an entry the repetition of an earlier one, for the error."""
    if "repetition_index" not in entry:
        return "the same entry"
    where = f"round {rnd}" + (f", part {part}" if part is not None else "")
    return f"repetition_index {shown(entry['repetition_index'])} of the same {where}"


def tables(where, context):
    """The library's tables (Run reads them): where one is a JSON list, each of its
    entries is an object with a name, and a peer's with its library and tuning,
    all text. A table that is no JSON list is none (context_table)."""
    for key, needs in (("kernel_table", ("name",)), ("workload_table", ("name",)),
                       ("peer_table", ("name", "library", "tuning"))):
        for j, row in enumerate(context_table(context, key) or []):
            if not isinstance(row, dict):
                raise FormatError(f"{where}: {key}[{j}] is {shown(row)}, not an object")
            for field in needs:
                if field not in row:
                    raise FormatError(f"{where}: {key}[{j}]: {field} is missing")
                present(f"{where}: {key}[{j}]", row, field, str, "a string")


def is_aggregate(where, entry, name):
    """Whether an entry is one of Google Benchmark's aggregates, not a repetition:
    its run_type says so where it has one; older files have none, so then an
    aggregate_name or a name ending in an aggregate's suffix does."""
    run_type = optional(where, entry, "run_type", str, "a string")
    if run_type is not None:
        return run_type == "aggregate"
    if entry.get("aggregate_name") is not None:
        return True
    return name.rsplit("/", 1)[-1].endswith(AGGREGATE_SUFFIXES)


def load(path):
    """Reads a result file (one process or the sweep's rounds) into a Run;
    FormatError when it cannot be read or a field the loader uses is malformed."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise FormatError(f"{path}: no 'benchmarks' list (not a Google Benchmark result file)")
    context, contexts = data.get("context"), data.get("contexts")
    if context is not None and not isinstance(context, dict):
        raise FormatError(f"{path}: context is {shown(context)}, not an object")
    if contexts is not None and not isinstance(contexts, list):
        raise FormatError(f"{path}: contexts is {shown(contexts)}, not a list")
    context = context or {}
    for key in MACHINE_TEXT:
        optional(f"{path}: context", context, key, str, "a string")
    tables(f"{path}: context", context)
    contexts = contexts or [context]  # one process: its context is the only one
    for k, ctx in enumerate(contexts):
        # witness() and the summary read each process's round and part as recorded
        where = f"{path}: contexts[{k}]"
        if not isinstance(ctx, dict):
            raise FormatError(f"{where} is {shown(ctx)}, not an object")
        whole(where, ctx, "round", present)
        present(where, ctx, "part", str, "a string")
    configs = {}
    times = defaultdict(lambda: defaultdict(list))  # key -> round -> [ms]
    parts = defaultdict(dict)                       # key -> round -> part
    seen = {}                                       # repetition -> its entry's index
    for i, b in enumerate(data["benchmarks"]):
        where = f"{path}: benchmarks[{i}]"
        if not isinstance(b, dict):
            raise FormatError(f"{where} is {shown(b)}, not an object")
        name = optional(where, b, "name", str, "a string", "")
        where += f" {json.dumps(name)}" if name else ""
        m = NAME.match(optional(where, b, "run_name", str, "a string") or name)
        if not m or is_aggregate(where, b, name):
            continue
        key = (m["kernel"], m["workload"], count(where, b, m, "n"),
               count(where, b, m, "threads"))
        c = configs.get(key) or Config(*key)
        configs[key] = c
        rnd, part = whole(where, b, "round", present), optional(where, b, "part", str, "a string")
        if parts[key].setdefault(rnd, part) != part:
            raise FormatError(f"{path}: {c.name} measured by two processes in round {rnd} "
                              f"({parts[key][rnd]} and {part})")
        fields(where, b)
        first = seen.setdefault(repetition(key, rnd, part, b), i)
        if first != i:
            raise FormatError(f"{where}: {twice(b, rnd, part)} as benchmarks[{first}]: a "
                              "repetition listed twice")
        if optional(where, b, "error_occurred", bool, "true or false"):
            c.verdict = optional(where, b, "error_message", str, "a string") or "error"
            c.errors.append((rnd, c.verdict))
            continue
        label = optional(where, b, "label", str, "a string")
        # a failed check in any round outweighs the others' VALID
        if label and (c.verdict is None or (label.startswith("INVALID")
                                            and c.verdict.startswith("VALID"))):
            c.verdict = label
        times[key][rnd].append(real_time(where, b))
        c.entries.append((rnd, b))
        if not c.counters:
            c.counters = b
    for key, per_round in times.items():
        c = configs[key]
        c.round_ids = sorted(per_round)
        c.rounds = [np.asarray(per_round[r]) for r in c.round_ids]
        c.parts = dict(parts[key])
    return Run(path, context, contexts, configs)
