#!/usr/bin/env python3
"""The simulation sweep: frames per second of `nsearch sim`, per kernel and n.

    sim_sweep.py --tool NSEARCH --out SIM.TSV [--kernels A,B+skin] [--max-n N]
                 [--runs R] [--skin D] [--threads T] [--layout NAME] [--cache-dir DIR]

For each n of the sweep up to --max-n, each kernel (`+skin`: the same kernel
reusing its searches with a skin of D) and each run, one `nsearch sim`
process starts from the layout's particles (default: settled piles, made once
and kept in --cache-dir) and runs enough frames for about 500,000
particle-frames (50 to 2,000). Its statistics are read from
`nsearch sim --stats-json`; the kernels' properties from
`nsearch kernels --json` (a quadratic kernel stops at 20,000 particles).

SIM.TSV gets one line per run: kernel, threads, skin, n, run, frames, fps,
search_ms, resolve_ms, integrate_ms, contacts_per_frame, rebuilds, host. It
is written through a temporary and renamed into place at the end, so an
interrupted sweep leaves no partial table. Beside it, sim_run.json says what
made it: the UTC date it started, the commit, `nsearch --version` (version
and code path), the CPU model, the threads, the host and the load average at
the start (harness/sim_results.py puts them in the summary). Exit status: 0
done, 1 a run failed, 2 a usage error.
"""
import program  # noqa: I001  (first: a stop signal while the others load ends quietly)
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys

import benchdata
from sim_results import run_path
from sweep import cpu_identity, git_commit

SIZES = [100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
         1000000]
QUADRATIC_MAX_N = 20000
COLUMNS = ["kernel", "threads", "skin", "n", "run", "frames", "fps", "search_ms", "resolve_ms",
           "integrate_ms", "contacts_per_frame", "rebuilds", "host"]


def frames_for(n):
    """At least 50 frames and about 500,000 particle-frames per run."""
    return min(max(500000 // n, 50), 2000)


def kernel_table(tool):
    out = subprocess.run([tool, "kernels", "--json"], check=True, capture_output=True, text=True)
    return {k["name"]: k for k in json.loads(out.stdout)}


def default_kernel(tool):
    """The kernel `nsearch sim` runs when it is given none (one tiny run)."""
    out = subprocess.run([tool, "sim", "--layout", "uniform", "--n", "10", "--frames", "1",
                          "--stats-json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["kernel"]


def run_sim(tool, args, kernel, skin, n):
    """One `nsearch sim` process; its --stats-json."""
    cmd = [tool, "sim", "--layout", args.layout, "--n", str(n), "--seed", "1", "--kernel", kernel,
           "--frames", str(frames_for(n)), "--threads", str(args.threads), "--skin", skin,
           "--stats-json"]
    if args.cache_dir:
        cmd += ["--cache-dir", args.cache_dir]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"sim_sweep.py: nsearch sim failed: {kernel} n={n}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def row(kernel, threads, skin, n, run, s, host):
    """A TSV line, with the precision --stats prints."""
    return [kernel, str(threads), skin, str(n), str(run), str(s["frames"]), f"{s['fps']:.2f}",
            f"{s['search_ms']:.4f}", f"{s['resolve_ms']:.4f}", f"{s['integrate_ms']:.4f}",
            f"{s['contacts_per_frame']:.1f}", str(int(s["searches_rebuilt"])), host]


def main():
    p = argparse.ArgumentParser(prog="sim_sweep.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--tool", required=True, help="the nsearch binary")
    p.add_argument("--out", required=True, help="the TSV to write")
    p.add_argument("--kernels", default="", help="kernels, K+skin for K with a skin "
                   "(default: every kernel, and the simulation's default kernel with a skin)")
    p.add_argument("--max-n", type=int, default=100000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--skin", default="0.1")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--layout", default="settled")
    p.add_argument("--cache-dir", default=None)
    args = p.parse_args()
    if args.runs < 1:
        p.error("--runs must be at least 1")
    table = kernel_table(args.tool)
    kernels = (args.kernels.split(",") if args.kernels else
               list(table) + [default_kernel(args.tool) + "+skin"])
    for k in kernels:
        if k.removesuffix("+skin") not in table:
            p.error(f"unknown kernel '{k}' in --kernels")
    tmp = args.out + ".tmp"
    run = provenance(args)
    try:
        sweep(args, table, kernels, tmp)
        program.write_all({run_path(args.out): json.dumps(run, indent=1)})
        os.replace(tmp, args.out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def provenance(args):
    """What makes this sweep, taken as it starts."""
    version = subprocess.run([args.tool, "--version"], capture_output=True, text=True)
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "unknown"
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": git_commit(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            "tool": version.stdout.strip() or "unknown", "cpu": cpu_identity(),
            "threads": args.threads, "host": socket.gethostname(), "load_average": load}


def sweep(args, table, kernels, tmp):
    host = socket.gethostname()
    with open(tmp, "w") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for n in (n for n in SIZES if n <= args.max_n):
            for k in kernels:
                kernel = k.removesuffix("+skin")
                skin = args.skin if k != kernel else "0"
                if table[kernel]["quadratic"] and n > QUADRATIC_MAX_N:
                    continue
                fps = []
                for run in range(1, args.runs + 1):
                    s = run_sim(args.tool, args, kernel, skin, n)
                    f.write("\t".join(row(kernel, args.threads, skin, n, run, s, host)) + "\n")
                    fps.append(f"{s['fps']:.2f} fps")
                f.flush()
                print(f"sim_sweep.py: {k:<17} n={n:<8} {' '.join(fps)}", file=sys.stderr,
                      flush=True)


if __name__ == "__main__":
    sys.exit(program.run("sim_sweep.py", main))
