#!/usr/bin/env python3
"""The benchmark sweep: independent rounds of nsearch-bench processes, merged.

    sweep.py --bench BIN --results DIR [--rounds R] [--repetitions N] [--min-time S]
             [--quick] [--resume] [--kernels A,B] [--workloads A,B] [--threads 1,T]
             [--max-n N] [--cache-dir DIR] [--shuffle-seed S] [--wait-policy P]
    sweep.py --machine-label
    sweep.py --finish RUN_DIR

The configurations of nsearch-bench (kernel/workload/n:N/threads:T) are
grouped by (workload, n) and, inside a group, by thread count: one process
per (round, group, thread count). So a 1-thread measurement never shares its
process with an idle OpenMP worker (its process runs with OMP_NUM_THREADS=1),
and every round measures every configuration in a fresh process. Each round
runs the processes in its own shuffled order, so a slow phase of the machine
falls on different configurations in different rounds; inside a process,
Google Benchmark interleaves the repetitions of its configurations at random.
Threads are pinned (OMP_PROC_BIND=close, OMP_PLACES=cores); --wait-policy
sets OMP_WAIT_POLICY (auto: passive for 1 thread, where no worker waits,
active for more, so a search does not pay for waking its workers).

The run folder DIR/<UTC timestamp>/ holds run.json (what makes the run: the
commit, the options, the CPU model; finished, set by --finish once every stage
after the merge is done), parts/ (one JSON and log per process, named
r<round>-g<group>-t<threads>), reference/ while the run lasts (the naive
reference of each (workload, n), found by the first process that needs it and
read by the others), and at the end bench.json: every process's repetitions,
each tagged with its round and part, and every process's context.

A part is kept only when its process exited 0 or 1 and its file parses and
holds every configuration it was given (check_part); anything else is
discarded and measured again once, after the others; a process that fails
twice stops the run before the merge. Every file is written whole or not at
all (program.write_all). --resume continues the latest run in DIR that is not
finished, at its first stage not done, and refuses when it was made at
another commit, with other options or on another CPU model, when its run.json
is damaged, or while another sweep measures it (DIR/.sweep.lock). What a run
survives: docs/running.md.

Exit status: 0 done, every configuration valid or refused; 1 a configuration
INVALID or failing, or the run cannot go on (processes that failed twice, a
full disk: one line says how to continue); 2 a usage error or a run that
cannot resume; 128 + N stopped by signal N.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import argparse
import datetime
import fcntl
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

# The defaults (docs/usage.md, "Sweep options"): stats.DEFAULT_ROUNDS independent
# rounds of stats.DEFAULT_REPETITIONS repetitions, the design the statistics
# are tested at.
import benchdata  # noqa: E402
import stats  # noqa: E402
from benchdata import NAME  # noqa: E402  (kernel/workload/n:N/threads:T)
from stats import DEFAULT_REPETITIONS, DEFAULT_ROUNDS  # noqa: E402
# Seconds each repetition runs at least. A repetition is one sample of the
# statistics (stats.py): the spread the intervals show comes from the
# repetitions and rounds, each in its own state of the machine, not from how
# many searches a repetition averages; 0.1 s holds a dozen searches of
# 100,000 particles by the fast kernels and thousands of small ones. Three rounds of three repetitions then keep the default sweep
# within its budget on 2 cores (docs/running.md). The committed reference
# runs were made with 0.2 (--min-time 0.2 repeats their design).
DEFAULT_MIN_TIME = 0.1
RUN_FILE = "run.json"
LOCK_FILE = ".sweep.lock"
# --quick: a first look in under two minutes on 2 cores (docs/running.md):
# n to 10,000, and the peers, whose libraries take half a second to start in
# every process, on uniform at two sizes only.
QUICK = {"rounds": 2, "repetitions": 3, "min_time": 0.01, "max_n": 10000,
         "peer_workloads": "uniform", "peer_sizes": "1000,10000"}


class UsageError(Exception):
    """A usage error or a run that cannot be resumed: exit 2."""


class RunError(RuntimeError):
    """The run cannot go on (processes that did not complete): exit 1."""


def log(msg):
    print(f"sweep: {msg}", flush=True)


def duration(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s"


def cpu_info():
    """The fields of /proc/cpuinfo's first processor that identify the CPU."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    if info:
                        break
                    continue
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return info


def vector_isa(info):
    """The widest vector extension the CPU reports (cpu_info's flags, or Features
    on ARM): what most separates two CPUs that a hypervisor names alike ('AMD
    EPYC' is Zen 3 without AVX-512 one day, Zen 4 with it the next)."""
    words = set(info.get("flags", info.get("Features", "")).split())
    for isa, flag in (("avx512", "avx512f"), ("avx2", "avx2"), ("sve", "sve"), ("neon", "asimd")):
        if flag in words:
            return isa
    return ""


def cpu_model(info=None):
    info = cpu_info() if info is None else info
    for key in ("model name", "Model", "cpu model"):
        if info.get(key):
            return info[key]
    return "unknown"


def cpu_identity(info=None):
    """What a resumed run must share with the run it continues: the model name,
    the family/model/stepping (or ARM implementer/part) and the vector ISA."""
    info = cpu_info() if info is None else info
    sig = ", ".join(f"{k} {info[k]}" for k in ("cpu family", "model", "stepping",
                                                "CPU implementer", "CPU part") if k in info)
    isa = vector_isa(info)
    return f"{cpu_model(info)} ({sig}; {isa or 'no vector ISA seen'})"


def cpu_generation(info=None):
    """The family and model numbers of an x86 CPU ('family26-model2'), or ''
    where /proc/cpuinfo has none (ARM names its part in the model already)."""
    info = cpu_info() if info is None else info
    if "cpu family" in info and "model" in info:
        return f"family{info['cpu family']}-model{info['model']}"
    return ""


def machine_label(model=None, cpus=None, isa=None, generation=None):
    """The folder name of this machine's results: its CPU model, widest vector
    ISA and logical CPU count, what distinguishes machines (host names do not:
    VMs are all 'vm'). 'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz', 2,
    'avx512' -> 'intel-xeon-platinum-8375c-avx512-2cpu'. A model name without
    a model number, as a hypervisor may report it ('AMD EPYC' for a Zen 3, 4
    and 5 alike), gets the family and model (cpu_generation()), so that two
    CPUs never share a folder: 'AMD EPYC', 2, 'avx512', 'family26-model2' ->
    'amd-epyc-family26-model2-avx512-2cpu'."""
    if model is None or isa is None:
        info = cpu_info()
        model = cpu_model(info) if model is None else model
        isa = vector_isa(info) if isa is None else isa
        generation = cpu_generation(info) if generation is None else generation
    cpus = (os.cpu_count() or 1) if cpus is None else cpus
    model = re.sub(r"\((R|TM|tm)\)|\bCPU\b|\bProcessor\b|@.*$|\b\d+-Core\b", " ", model)
    if generation and not re.search(r"\d", model):
        model = f"{model} {generation}"
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "unknown"
    return f"{slug}{'-' + isa if isa else ''}-{cpus}cpu"


def git_commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return out + ("+modified" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sweep.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", required=True, help="the nsearch-bench binary")
    p.add_argument("--results", required=True, help="the folder of this machine's runs")
    p.add_argument("--rounds", type=int)
    p.add_argument("--repetitions", type=int)
    p.add_argument("--min-time", type=float, help="seconds per repetition (Google Benchmark)")
    p.add_argument("--quick", action="store_true")
    p.set_defaults(peer_workloads=None, peer_sizes=None)  # set by --quick alone
    p.add_argument("--resume", action="store_true")
    p.add_argument("--kernels")
    p.add_argument("--workloads")
    p.add_argument("--threads", help="thread counts, e.g. 1,2 (default 1 and all cores)")
    p.add_argument("--max-n", type=int)
    p.add_argument("--cache-dir")
    p.add_argument("--shuffle-seed", type=int, default=1)
    p.add_argument("--wait-policy", choices=("auto", "active", "passive", "default"),
                   default="auto",
                   help="OMP_WAIT_POLICY of the processes: auto (the default) is passive "
                        "for 1 thread, active for more; default leaves OpenMP's own")
    p.add_argument("--dir-file", help="write the run folder's path to this file")
    p.add_argument("--machine-label", action="store_true",
                   help="print this machine's label (the folder of its results) and exit")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        raise UsageError("see sweep.py --help") from e
    defaults = dict(QUICK) if a.quick else {"rounds": DEFAULT_ROUNDS,
                                            "repetitions": DEFAULT_REPETITIONS,
                                            "min_time": DEFAULT_MIN_TIME}
    for name, value in defaults.items():
        if getattr(a, name) is None:
            setattr(a, name, value)
    for name in ("rounds", "repetitions", "max_n"):
        v = getattr(a, name)
        if v is not None and v < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if a.min_time is not None and not a.min_time > 0:
        raise UsageError("--min-time must be positive")
    if a.threads is None:
        a.threads = ",".join(sorted({"1", str(usable_cpus())}, key=int))
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", a.threads):
        raise UsageError(f"--threads '{a.threads}' is not a comma list of whole numbers >= 1")
    return a


def bench_args(a, threads=None):
    """The options of an nsearch-bench process: every thread count of the run
    (to list the configurations), or one (a process measures one count; with
    1 it also runs the serial kernels, with more only the parallel ones)."""
    args = ["--threads", str(threads) if threads else a.threads]
    for opt in ("kernels", "workloads", "peer_workloads", "peer_sizes", "cache_dir"):
        v = getattr(a, opt)
        if v:
            args += [f"--{opt.replace('_', '-')}", v]
    if a.max_n:
        args += ["--max-n", str(a.max_n)]
    return args


def list_configs(a):
    out = subprocess.run([a.bench] + bench_args(a) + ["--benchmark_list_tests"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise UsageError(f"nsearch-bench refused the options: {out.stderr.strip()}")
    names = [line.strip().removesuffix("/manual_time") for line in out.stdout.splitlines()
             if line.strip()]
    configs = []
    for name in names:
        m = NAME.match(name)
        if m:
            configs.append((m["workload"], int(m["n"]), int(m["threads"]), name))
    return configs


def units(configs, rounds, seed):
    """(round, group, workload, n, threads, names) in the order they run: the
    groups of every round, each round in its own shuffled order."""
    groups = {}
    for w, n, t, name in configs:
        groups.setdefault((w, n, t), []).append(name)
    keys = list(groups)
    out = []
    for r in range(1, rounds + 1):
        order = list(range(len(keys)))
        random.Random(seed * 1000003 + r).shuffle(order)
        out += [(r, g + 1, *keys[g], groups[keys[g]]) for g in order]
    return out


def run_conf(a):
    """What must match for --resume."""
    return {"commit": git_commit(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            "cpu_model": cpu_identity(),
            "options": {"rounds": a.rounds, "repetitions": a.repetitions, "min_time": a.min_time,
                        "kernels": a.kernels, "workloads": a.workloads, "threads": a.threads,
                        "max_n": a.max_n, "shuffle_seed": a.shuffle_seed,
                        "wait_policy": a.wait_policy,
                        "peer_workloads": a.peer_workloads, "peer_sizes": a.peer_sizes}}


RESUME = "./run_all.sh --resume"


def read_run(d):
    """DIR/run.json; UsageError, in one line, when it is damaged."""
    path = os.path.join(d, RUN_FILE)
    cannot = f"the run in {d} cannot be continued; move it aside and start a new run"
    try:
        run = benchdata.read_json(path)
    except benchdata.FormatError as e:
        raise UsageError(f"{e}: {cannot}") from None
    if not isinstance(run, dict):
        raise UsageError(f"{path} is damaged (not an object): {cannot}")
    for key, kind, what in (("commit", str, "a string"), ("cpu_model", str, "a string"),
                            ("options", dict, "an object"), ("finished", (str, type(None)),
                                                             "a time or null")):
        if key in run or key != "finished":
            if not isinstance(run.get(key), kind):
                raise UsageError(f"{path} is damaged ({key} is {benchdata.shown(run.get(key))}, "
                                 f"not {what}): {cannot}")
    return run


def finished(d, run):
    """Whether a run is complete: every stage after the merge done (run.json's
    finished, set by --finish); a run from before that field, when merged."""
    if "finished" in run:
        return run["finished"] is not None
    return os.path.isfile(os.path.join(d, "bench.json"))


def lock_run(d):
    """Holds DIR/.sweep.lock for as long as this process lives, so no other
    sweep resumes the run it measures; UsageError when another holds it."""
    f = open(os.path.join(d, LOCK_FILE), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        f.close()
        raise UsageError(f"--resume: the run in {d} is being measured now ({holder}); "
                         "wait for it to end") from None
    f.truncate(0)
    f.write(f"pid {os.getpid()}\n")
    f.flush()
    return f


def find_resumable(results, conf):
    """The latest run under results that is not finished, locked for this
    process; UsageError when there is none, when its run.json is damaged or
    when it was made with another commit, CPU model or options."""
    runs = sorted((d for d in (os.listdir(results) if os.path.isdir(results) else [])
                   if os.path.isfile(os.path.join(results, d, RUN_FILE))), reverse=True)
    for name in runs:
        d = os.path.join(results, name)
        try:
            old = read_run(d)
        except UsageError as e:
            raise UsageError(f"--resume: {e}") from None
        if finished(d, old):
            continue
        for field, what in (("commit", "commit"), ("cpu_model", "CPU model"),
                            ("options", "options")):
            if old.get(field) != conf[field]:
                raise UsageError(f"--resume: the unfinished run {d} was made with another "
                                 f"{what} ({old.get(field)!r}, now {conf[field]!r}); start a "
                                 "new run")
        return d, lock_run(d)
    raise UsageError(f"--resume: no unfinished run under {results}")


def new_run(results, conf):
    """A new run folder, named by the UTC second it starts (a suffix -2, -3, ...
    when another run took that name), with its run.json, locked for this
    process. Where run.json cannot be written the folder is removed again."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    os.makedirs(results, exist_ok=True)
    for k in range(1, 1000):
        d = os.path.join(results, stamp + (f"-{k}" if k > 1 else ""))
        try:
            os.mkdir(d)
            break
        except FileExistsError:
            continue
    else:
        raise RunError(f"cannot name a new run under {results}: {stamp} to {stamp}-999 exist")
    try:
        os.mkdir(os.path.join(d, "parts"))
        lock = lock_run(d)
        program.write_all({os.path.join(d, RUN_FILE): json.dumps(dict(conf, finished=None),
                                                                 indent=1)},
                          then="free some space and start the run again")
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return d, lock


def finish(d):
    """--finish DIR: marks the run complete (run.json's finished: the UTC time),
    once every stage after the merge is done; --resume passes it by."""
    run = read_run(d)
    run["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    program.write_all({os.path.join(d, RUN_FILE): json.dumps(run, indent=1)})
    try:
        os.remove(os.path.join(d, LOCK_FILE))
    except FileNotFoundError:
        pass
    return 0


def part_name(r, g, t):
    return f"r{r}-g{g:03d}-t{t}"


def process_env(t, wait_policy="auto"):
    """The environment of a timed process of t threads: pinned, and the wait
    policy in the environment, so the process need not restart itself to
    apply it (auto: 1-thread processes have no worker to keep spinning)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(t), OMP_PROC_BIND="close", OMP_PLACES="cores")
    policy = wait_policy if wait_policy != "auto" else "passive" if t == 1 else "active"
    if policy == "default":
        env.pop("OMP_WAIT_POLICY", None)
    else:
        env["OMP_WAIT_POLICY"] = policy
    return env


def describe_exit(rc):
    return f"was killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in \
        signal.valid_signals() else f"exited with status {rc}"


def check_part(path, rc, names):
    """A process's results: (the loaded part, None) when complete, that is
    when nsearch-bench exited 0 (or 1: a configuration INVALID or failed, its
    results written all the same) and its file parses and holds every
    configuration it was given; else (None, why not)."""
    if rc not in (0, 1):
        return None, f"nsearch-bench {describe_exit(rc)}"
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None, f"nsearch-bench {describe_exit(rc)} and wrote no results"
    try:
        part = benchdata.load(path)
    except benchdata.FormatError as e:
        return None, f"its results are not complete ({str(e).partition(': ')[2]})"
    missing = set(names) - {c.name for c in part.configs.values()}
    if missing:
        return None, f"its results lack {len(missing)} of its {len(names)} configurations"
    return part, None


def keep_part(tmp, final, rc):
    """Writes a complete part (the process's file tmp) under its final name,
    its exit status added to its context (what says, on --resume, whether a
    configuration was INVALID)."""
    data = benchdata.read_json(tmp)
    data.setdefault("context", {})["exit_status"] = rc
    program.write_all({final: json.dumps(data, indent=1)},
                      then=f"free some space, then {RESUME} continues the run")


def stop_child(proc):
    """Ends a child process that is still measuring: SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_unit(a, dir_, unit):
    """One nsearch-bench process; (its exit status, its loaded part or None,
    why it is incomplete or None). A complete part is moved into place; an
    incomplete one is discarded."""
    r, g, w, n, t, names = unit
    part = os.path.join(dir_, "parts", part_name(r, g, t))
    tmp = part + ".bench.tmp"
    env = process_env(t, a.wait_policy)
    args = [a.bench] + bench_args(a, t) + [
        "--no-results", "--reference-dir", os.path.join(dir_, "reference"),
        f"--benchmark_filter=^[^/]+/{re.escape(w)}/n:{n}/threads:{t}/",
        f"--benchmark_repetitions={a.repetitions}",
        "--benchmark_enable_random_interleaving=true",
        "--benchmark_display_aggregates_only=true",
        f"--benchmark_out={tmp}", "--benchmark_out_format=json"]
    if a.min_time:
        args.append(f"--benchmark_min_time={a.min_time}")
    if "OMP_WAIT_POLICY" not in env:  # default: else nsearch-bench would set its own, active
        args += ["--wait-policy", "default"]
    try:
        proc = None
        with open(part + ".log", "w") as logf:
            try:
                with program.signals_held():  # a stop arrives once proc is known
                    proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT,
                                            env=env, preexec_fn=program.child_setup)
                rc = proc.wait()
            finally:  # stopped: the child goes too
                if proc is not None:
                    stop_child(proc)
        relay_warnings(part + ".log")
        loaded, why = check_part(tmp, rc, names)
        if not why:
            keep_part(tmp, part + ".json", rc)
            return rc, loaded, None
    finally:  # kept, discarded or stopped: the process's own file goes
        remove(tmp)
    return rc, None, why


def remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def relay_warnings(log_path):
    """nsearch-bench's warnings (a cache that failed its check and was made
    again) reach the console, not only the part's log."""
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if line.startswith("nsearch-bench: warning: "):
                    print(line.rstrip("\n"), flush=True)
    except OSError:
        pass


def part_medians(part):
    """name -> the median of one part's repetitions in ms with its 95 % interval
    (stats.bootstrap over this one process's repetitions; the value is np.median),
    or the error when none was timed, for the progress lines. The part is read as
    every result file is (benchdata.load: time units, aggregates, failed
    repetitions)."""
    out = {}
    for c in part.configs.values():
        if c.rounds:
            e = stats.bootstrap(c.rounds, rng=stats.generator(c.name))
            out[c.name] = f"{stats.text(e)} ms"
            if c.errors:  # some repetitions timed: their median, and what the others met
                out[c.name] += (f" ({len(c.errors)} of {len(c.errors) + c.repetitions} "
                                f"repetitions failed: {c.errors[0][1]})")
        elif c.errors:
            out[c.name] = c.errors[0][1]
    return out


def merge(dir_, units_done, rounds):
    """bench.json: every part's repetitions tagged with round and part, every
    context; its exit status: 1 when a process found a configuration INVALID
    or failing (the exit_status keep_part recorded), else 0."""
    contexts, benchmarks = [], []
    for r, g, _w, _n, t, _names in sorted(units_done):
        name = part_name(r, g, t)
        data = benchdata.read_json(os.path.join(dir_, "parts", name + ".json"))
        ctx = dict(data.get("context", {}), part=name, round=r)
        contexts.append(ctx)
        for b in data.get("benchmarks", []):
            benchmarks.append(dict(b, round=r, part=name))
    first = dict(contexts[0]) if contexts else {}
    for key in ("part", "round", "exit_status"):
        first.pop(key, None)
    first["rounds"] = rounds
    out = {"context": first, "contexts": contexts, "benchmarks": benchmarks}
    program.write_all({os.path.join(dir_, "bench.json"): json.dumps(out, indent=1)},
                      then=f"free some space, then {RESUME} merges the run")
    return merged_status(contexts)


def merged_status(contexts):
    return 1 if any(c.get("exit_status") == 1 for c in contexts) else 0


def load_warning():
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    cores = usable_cpus()
    if load > cores / 2:
        log(f"WARNING: load average {load} is above half the {cores} cores: timings will be "
            "disturbed")


def usable_cpus():
    """The CPUs this process may run on (its affinity; not OMP_NUM_THREADS)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Space:
    """The disk space a run needs: estimated from the parts written so far
    (their JSON and log per configuration), before any from a default."""
    DEFAULT_PER_CONFIG = 64 * 1024
    FIGURES = 8 * 1024 * 1024  # bench.tsv, summary.md and the figures, with room

    def __init__(self, dir_):
        self.dir, self.bytes, self.configs = dir_, 0, 0

    def add(self, name, configs):
        for ext in (".json", ".log"):
            try:
                self.bytes += os.path.getsize(os.path.join(self.dir, "parts", name + ext))
            except OSError:
                pass
        self.configs += configs

    def per_config(self):
        return self.bytes / self.configs if self.configs else self.DEFAULT_PER_CONFIG

    def check(self, path, configs_now, configs_left, times=2):
        """DiskFull (naming path) when the disk lacks room for a part of
        configs_now configurations, times its estimate (before the part: twice;
        after a part failed, once says the disk is why); the rest of the run's
        needs in the message."""
        free = program.free_bytes(self.dir)
        if free is not None and free < times * self.per_config() * configs_now:
            raise self.full(path, configs_left)

    def full(self, path, configs_left):
        # the parts still to come, then bench.json (about as large as the parts),
        # then the table, the summary and the figures
        needed = self.per_config() * configs_left + (self.bytes + self.per_config()
                                                     * configs_left) + self.FIGURES
        return program.disk_full(path, needed, f"free some space, then {RESUME} continues "
                                 "the run")


def measure(a, dir_, plan, total):
    """Runs every unit of the plan whose part is missing, each failed one once
    more at the end; RunError when some still fail (their parts discarded, so
    --resume measures them again)."""
    done, start, measured_before = 0, time.monotonic(), None
    space = Space(dir_)
    left = total
    failed = []
    for attempt in (1, 2):
        todo = plan if attempt == 1 else [u for u, _ in failed]
        if attempt == 2 and todo:
            log(f"measuring again the {len(todo)} process(es) that did not complete")
        failed = []
        for unit in todo:
            r, g, w, n, t, names = unit
            name = part_name(r, g, t)
            path = os.path.join(dir_, "parts", name + ".json")
            if os.path.isfile(path):
                done += len(names)
                left -= len(names)
                space.add(name, len(names))
                continue
            if measured_before is None:
                measured_before = done
            space.check(path, len(names), left)
            rc, part, why = run_unit(a, dir_, unit)
            elapsed = time.monotonic() - start
            if why:
                space.check(path, len(names), left, times=1)
                failed.append((unit, why))
                again = "measured again at the end" if attempt == 1 else "not measured"
                print(f"[{done}/{total}] {w} n={n} threads={t} (round {r}): {why}; {again}",
                      flush=True)
                continue
            left -= len(names)
            space.add(name, len(names))
            medians = part_medians(part)
            for cname in names:
                done += 1
                rate = elapsed / max(done - measured_before, 1)
                print(f"[{done}/{total}] {cname} (round {r}) ... {medians.get(cname, 'not run')} "
                      f"(elapsed {duration(elapsed)}, about {duration(left * rate)} left)",
                      flush=True)
    if failed:
        for (r, g, w, n, t, _names), why in failed:
            log(f"{part_name(r, g, t)} ({w}, n={n}, {t} thread{'s' * (t > 1)}): {why}; its "
                f"part was discarded (log: {os.path.join(dir_, 'parts', part_name(r, g, t))}.log)")
        raise RunError(f"{len(failed)} of {len(plan)} processes did not complete, twice: "
                       f"{RESUME} measures them again")
    return start


def measure_and_merge(a, configs, dir_):
    """The run's parts, then bench.json (both kept from before on --resume);
    the exit status (merge())."""
    merged = os.path.join(dir_, "bench.json")
    if os.path.isfile(merged):
        log("every process was measured and merged: what follows the merge is done again")
        return merged_status(benchdata.read_json(merged).get("contexts", []))
    plan = units(configs, a.rounds, a.shuffle_seed)
    total = sum(len(u[5]) for u in plan)
    log(f"{len(configs)} configurations x {a.rounds} rounds in {len(plan)} processes, "
        f"{a.repetitions} repetitions each, into {dir_} ({usable_cpus()} cores)")
    load_warning()
    start = measure(a, dir_, plan, total)
    status = merge(dir_, plan, a.rounds)
    shutil.rmtree(os.path.join(dir_, "reference"), ignore_errors=True)
    log(f"merged {len(plan)} processes into {merged} in {duration(time.monotonic() - start)}")
    return status


def sweep(a):
    conf = run_conf(a)
    # the options checked by nsearch-bench before anything is written: a
    # refused one leaves no run folder behind for --resume to find
    configs = list_configs(a)
    if a.resume:
        dir_, lock = find_resumable(a.results, conf)
        for f in os.listdir(os.path.join(dir_, "parts")):
            if f.endswith(".tmp"):
                os.remove(os.path.join(dir_, "parts", f))
        log(f"resuming {dir_}")
    else:
        dir_, lock = new_run(a.results, conf)
    try:
        status = measure_and_merge(a, configs, dir_)
    except program.Stopped as e:
        if not program.STOP_QUIET:  # run_all.sh, its parent, says it
            kept = len([f for f in os.listdir(os.path.join(dir_, "parts"))
                        if f.endswith(".json")])
            log(f"stopped by {e.name}: the {kept} processes measured are kept in {dir_}; "
                f"{RESUME} continues the run")
        return e.status
    if a.dir_file:
        with open(a.dir_file, "w") as f:
            f.write(dir_ + "\n")
    lock.close()
    return status


def main(argv):
    if argv == ["--machine-label"]:
        print(machine_label())
        return 0
    try:
        if argv[:1] == ["--finish"]:
            if len(argv) != 2:
                raise UsageError("--finish takes one run folder")
            return finish(argv[1])
        a = parse_args(argv)
        return sweep(a)
    except UsageError as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(program.run("sweep.py", main, sys.argv[1:]))
