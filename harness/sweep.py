#!/usr/bin/env python3
"""The benchmark sweep: independent rounds of nsearch-bench processes, merged.

    sweep.py --bench BIN --results DIR [--rounds R] [--repetitions N] [--min-time S]
             [--quick] [--resume] [--kernels A,B] [--workloads A,B] [--threads 1,T]
             [--max-n N] [--cache-dir DIR] [--shuffle-seed S] [--wait-policy P]
    sweep.py --machine-label

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
commit, the options, the CPU model), parts/ (one JSON and log per process,
named r<round>-g<group>-t<threads>), reference/ while the run lasts (the
naive reference of each (workload, n), found by the first process that needs
it and read by the others), and at the end bench.json: every
process's repetitions, each tagged with its round and part, and every
process's context. --resume continues the latest unfinished run in DIR, and
refuses when it was made at another commit, with other options or on
another CPU model.

Exit status: 0 done, every configuration valid or refused; 1 a configuration
INVALID or a process failing; 2 a usage error or a run that cannot resume.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

# The defaults (README, "The two commands"): stats.DEFAULT_ROUNDS independent
# rounds of stats.DEFAULT_REPETITIONS repetitions, the design the statistics
# are tested at.
import benchdata  # noqa: E402
import stats  # noqa: E402
from benchdata import NAME  # noqa: E402  (kernel/workload/n:N/threads:T)
from stats import DEFAULT_REPETITIONS, DEFAULT_ROUNDS  # noqa: E402
# Seconds each repetition runs at least: 0.2 s holds many iterations of a fast
# search and one of a slow one (Google Benchmark's own default, 0.5 s, would
# make the default sweep, already about an hour on 2 cores, longer still).
DEFAULT_MIN_TIME = 0.2
QUICK = {"rounds": 2, "repetitions": 3, "min_time": 0.01, "max_n": 20000}


class UsageError(Exception):
    """A usage error or a run that cannot be resumed: exit 2."""


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
        a.threads = ",".join(sorted({"1", str(os.cpu_count() or 1)}, key=int))
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", a.threads):
        raise UsageError(f"--threads '{a.threads}' is not a comma list of whole numbers >= 1")
    return a


def bench_args(a, threads=None):
    """The options of an nsearch-bench process: every thread count of the run
    (to list the configurations), or one (a process measures one count; with
    1 it also runs the serial kernels, with more only the parallel ones)."""
    args = ["--threads", str(threads) if threads else a.threads]
    for opt in ("kernels", "workloads", "cache_dir"):
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
                        "wait_policy": a.wait_policy}}


def find_resumable(results, conf):
    runs = sorted((d for d in (os.listdir(results) if os.path.isdir(results) else [])
                   if os.path.isfile(os.path.join(results, d, "run.json"))
                   and not os.path.isfile(os.path.join(results, d, "bench.json"))), reverse=True)
    if not runs:
        raise UsageError(f"--resume: no unfinished run under {results}")
    d = os.path.join(results, runs[0])
    with open(os.path.join(d, "run.json")) as f:
        old = json.load(f)
    for field, what in (("commit", "commit"), ("cpu_model", "CPU model"), ("options", "options")):
        if old.get(field) != conf[field]:
            raise UsageError(f"--resume: the unfinished run {d} was made with another {what} "
                             f"({old.get(field)!r}, now {conf[field]!r}); start a new run")
    return d


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


def run_unit(a, dir_, unit):
    r, g, w, n, t, names = unit
    part = os.path.join(dir_, "parts", part_name(r, g, t))
    env = process_env(t, a.wait_policy)
    args = [a.bench] + bench_args(a, t) + [
        "--no-results", "--reference-dir", os.path.join(dir_, "reference"),
        f"--benchmark_filter=^[^/]+/{re.escape(w)}/n:{n}/threads:{t}/",
        f"--benchmark_repetitions={a.repetitions}",
        "--benchmark_enable_random_interleaving=true",
        "--benchmark_display_aggregates_only=true",
        f"--benchmark_out={part}.json.tmp", "--benchmark_out_format=json"]
    if a.min_time:
        args.append(f"--benchmark_min_time={a.min_time}")
    if "OMP_WAIT_POLICY" not in env:  # default: else nsearch-bench would set its own, active
        args += ["--wait-policy", "default"]
    with open(part + ".log", "w") as logf:
        rc = subprocess.run(args, stdout=logf, stderr=subprocess.STDOUT, env=env).returncode
    if not os.path.isfile(part + ".json.tmp") or os.path.getsize(part + ".json.tmp") == 0:
        with open(part + ".log") as f:
            tail = f.read()[-600:]
        raise RuntimeError(f"nsearch-bench failed on {w} n={n} threads={t} (exit {rc}):\n{tail}")
    os.replace(part + ".json.tmp", part + ".json")
    return rc


def part_medians(path):
    """name -> the median of one part's repetitions in ms with its 95 % interval
    (stats.bootstrap over this one process's repetitions; the value is np.median),
    or the error when none was timed, for the progress lines. The part is read as
    every result file is (benchdata.load: time units, aggregates, failed
    repetitions)."""
    out = {}
    for c in benchdata.load(path).configs.values():
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
    """bench.json: every part's repetitions tagged with round and part, every context."""
    contexts, benchmarks = [], []
    for r, g, _w, _n, t, _names in sorted(units_done):
        name = part_name(r, g, t)
        with open(os.path.join(dir_, "parts", name + ".json")) as f:
            data = json.load(f)
        ctx = dict(data.get("context", {}), part=name, round=r)
        contexts.append(ctx)
        for b in data.get("benchmarks", []):
            benchmarks.append(dict(b, round=r, part=name))
    first = dict(contexts[0]) if contexts else {}
    first.pop("part", None)
    first.pop("round", None)
    first["rounds"] = rounds
    out = {"context": first, "contexts": contexts, "benchmarks": benchmarks}
    tmp = os.path.join(dir_, "bench.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, os.path.join(dir_, "bench.json"))


def load_warning():
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    cores = os.cpu_count() or 1
    if load > cores / 2:
        log(f"WARNING: load average {load} is above half the {cores} cores: timings will be "
            "disturbed")


def sweep(a):
    conf = run_conf(a)
    # the options checked by nsearch-bench before anything is written: a
    # refused one leaves no run folder behind for --resume to find
    configs = list_configs(a)
    if a.resume:
        dir_ = find_resumable(a.results, conf)
        for f in os.listdir(os.path.join(dir_, "parts")):
            if f.endswith(".tmp"):
                os.remove(os.path.join(dir_, "parts", f))
        log(f"resuming {dir_}")
    else:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        dir_ = os.path.join(a.results, stamp)
        os.makedirs(os.path.join(dir_, "parts"))
        with open(os.path.join(dir_, "run.json"), "w") as f:
            json.dump(conf, f, indent=1)
    plan = units(configs, a.rounds, a.shuffle_seed)
    total = sum(len(u[5]) for u in plan)
    log(f"{len(configs)} configurations x {a.rounds} rounds in {len(plan)} processes, "
        f"{a.repetitions} repetitions each, into {dir_} ({os.cpu_count()} cores)")
    load_warning()
    status, done, start = 0, 0, time.monotonic()
    measured_before = None
    for unit in plan:
        r, g, w, n, t, names = unit
        path = os.path.join(dir_, "parts", part_name(r, g, t) + ".json")
        if os.path.isfile(path):
            done += len(names)
            continue
        if measured_before is None:
            measured_before = done
        rc = run_unit(a, dir_, unit)
        status = status or (1 if rc != 0 else 0)
        medians = part_medians(path)
        elapsed = time.monotonic() - start
        for name in names:
            done += 1
            rate = elapsed / max(done - measured_before, 1)
            print(f"[{done}/{total}] {name} (round {r}) ... {medians.get(name, 'not run')} "
                  f"(elapsed {duration(elapsed)}, about {duration((total - done) * rate)} left)",
                  flush=True)
    merge(dir_, plan, a.rounds)
    shutil.rmtree(os.path.join(dir_, "reference"), ignore_errors=True)
    log(f"merged {len(plan)} processes into {os.path.join(dir_, 'bench.json')} in "
        f"{duration(time.monotonic() - start)}")
    if a.dir_file:
        with open(a.dir_file, "w") as f:
            f.write(dir_ + "\n")
    return status


def main(argv):
    if argv == ["--machine-label"]:
        print(machine_label())
        return 0
    try:
        a = parse_args(argv)
        return sweep(a)
    except UsageError as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 2
    except (RuntimeError, OSError) as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
