#!/usr/bin/env python3
"""Two builds of the library side by side: nsearch-ab on each configuration,
then each build's median time and the ratio b / a with 95 % intervals.

    ab.py --tool NSEARCH_AB --a LIB --b LIB [--a-name A] [--b-name B] --out DIR
          [--kernel K] [--workloads W,...] [--n N,...] [--threads T,...]
          [--rounds R] [--repetitions M] [--min-time S]
    ab.py --summary DIR/ab.json

The two libraries run in one process, their repetitions interleaved (see
harness/ab.c), so a state of the machine that lasts minutes falls on both;
the process is pinned and waits as the sweep's are (sweep.process_env).
Each build's median and its interval come from the nested bootstrap of
stats.py over the rounds; the ratio b / a from the paired one
(stats.paired_ratio: the rounds drawn once for both). The verdict is
compare.py's: faster or slower when the interval lies beyond 1 -+ the band
(5 %), equivalent when it lies inside it, else inconclusive. The interval
describes these rounds in this process: on another day, or another
machine, the ratio may differ. DIR/ab.json holds every repetition and what
made them (the two names, how they were built, the CPU, the date, each
process's load average and OpenMP environment); DIR/ab.md the table.

Exit status: 0 done, 1 nsearch-ab failed (a library failed, or the two
gave different contacts), 2 a usage error.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import argparse
import datetime
import json
import os
import subprocess
import sys

import benchdata
import report
import stats
import sweep

COLUMNS = ("workload", "n", "threads", "contacts", "a ms", "b ms", "b / a", "verdict")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ab.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--summary", metavar="AB_JSON", help="only print the table of a run")
    p.add_argument("--tool")
    p.add_argument("--a")
    p.add_argument("--b")
    p.add_argument("--a-name", default="a")
    p.add_argument("--b-name", default="b")
    p.add_argument("--build", default="", help="how the two libraries were built (recorded)")
    p.add_argument("--out")
    p.add_argument("--kernel", default="grid_sorted")
    p.add_argument("--workloads", default="uniform")
    p.add_argument("--n", default="100000")
    p.add_argument("--threads", default=str(sweep.usable_cpus()))
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.02)
    a = p.parse_args(argv)
    if a.summary:
        return a
    for name in ("tool", "a", "b", "out"):
        if not getattr(a, name):
            p.error(f"--{name} is needed")
    try:
        a.n = [int(x) for x in a.n.split(",")]
        a.threads = [int(x) for x in a.threads.split(",")]
    except ValueError:
        p.error("--n and --threads take whole numbers separated by commas")
    a.workloads = a.workloads.split(",")
    if a.rounds < 2 or a.repetitions < 1:
        p.error("--rounds must be at least 2 and --repetitions at least 1")
    return a


def measure(a, workload, n, threads):
    """One nsearch-ab process: its JSON, or None when it failed (its message on stderr)."""
    cmd = [a.tool, "--a", a.a, "--b", a.b, "--kernel", a.kernel, "--workload", workload,
           "--n", str(n), "--threads", str(threads), "--rounds", str(a.rounds),
           "--repetitions", str(a.repetitions), "--min-time", str(a.min_time)]
    env = sweep.process_env(threads)
    load = list(os.getloadavg())  # before the process, as the sweep records it
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        return None
    run = json.loads(out.stdout)
    run["load_average"] = load
    run["environment"] = {k: env.get(k) for k in ("OMP_PROC_BIND", "OMP_PLACES",
                                                 "OMP_WAIT_POLICY")}
    return run


def rows(doc):
    """The table's rows: per configuration the two medians and the ratio."""
    out = []
    for run in doc["runs"]:
        name = f"{run['workload']}/n:{run['n']}/threads:{run['threads']}"
        a_rounds = [r["a_ms"] for r in run["rounds"]]
        b_rounds = [r["b_ms"] for r in run["rounds"]]
        ea = stats.bootstrap(a_rounds, rng=stats.generator(name + "/a"))
        eb = stats.bootstrap(b_rounds, rng=stats.generator(name + "/b"))
        ratio = stats.paired_ratio(b_rounds, a_rounds, rng=stats.generator(name))
        _, low, high = ratio.interval()
        out.append([run["workload"], str(run["n"]), str(run["threads"]), str(run["contacts"]),
                    stats.text(ea), stats.text(eb), stats.text(ratio, digits=2),
                    stats.verdict(low, high)])
    return out


def table(doc):
    head = (f"a = {doc['a_name']}, b = {doc['b_name']}; {doc['kernel']}, build + query of a "
            f"reused index, {doc['rounds']} rounds x {doc['repetitions']} repetitions in one "
            f"process per row, the two builds interleaved; medians and b / a with 95 % "
            f"intervals (nested bootstrap, the ratio's paired by round). {doc['cpu']}, "
            f"{doc['date']}" + (f"; built {doc['build']}" if doc.get("build") else "") + ".")
    return head + "\n\n" + report.table([COLUMNS] + rows(doc), markdown=True) + "\n"


def main(argv):
    a = parse_args(argv)
    if a.summary:
        try:
            sys.stdout.write(table(benchdata.read_json(a.summary)))
        except (benchdata.FormatError, KeyError, TypeError) as e:
            print(f"ab.py: {a.summary}: not an A/B result file ({e})", file=sys.stderr)
            return 2
        return 0
    doc = {"a_name": a.a_name, "b_name": a.b_name, "a": a.a, "b": a.b, "build": a.build,
           "kernel": a.kernel,
           "rounds": a.rounds, "repetitions": a.repetitions, "min_time": a.min_time,
           "cpu": sweep.cpu_identity(), "machine": sweep.machine_label(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "runs": []}
    status = 0
    for w in a.workloads:
        for n in a.n:
            for t in a.threads:
                print(f"[ab] {w} n={n} threads={t} ...", flush=True)
                run = measure(a, w, n, t)
                if run is None:
                    status = 1
                    continue
                doc["runs"].append(run)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "ab.json"), "w") as f:
        json.dump(doc, f, indent=1)
    if doc["runs"]:
        text = table(doc)
        with open(os.path.join(a.out, "ab.md"), "w") as f:
            f.write(text)
        print(text)
    return status


if __name__ == "__main__":
    sys.exit(program.run("ab.py", main, sys.argv[1:]))
