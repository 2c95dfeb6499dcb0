#!/usr/bin/env python3
"""Writes the synthetic result files of the stats tests (tests/stats/*.json) in the
sweep's merged format: the sweep's default rounds and repetitions (stats.py), one
process per round, group and thread count.

    aa_a.json, aa_b.json   the same machine and build measured twice (an A/A pair)
    twox_b.json            a machine with 4 cores, every time twice aa_a.json's; it
                           lacks naive/dambreak/n:10000 and has grid_dense/uniform/
                           n:100000, refused (an error entry) in every round

Times: a power law of n per kernel and thread count, a lognormal round effect
(sigma 0.02, shared by a round's repetitions) and lognormal noise per repetition
(sigma 0.03). Every process's context has a witness (witness_ms, one time per
thread, 0.2 ms with lognormal noise of sigma 0.02, times the file's scale),
drawn from a generator of its own so the times do not depend on it. Seeded:
running this again writes the same files.

    /usr/bin/python3 tests/stats/make_fixtures.py [DIR]
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import stats  # noqa: E402  (the sweep's defaults)

ROUNDS, REPETITIONS = stats.DEFAULT_ROUNDS, stats.DEFAULT_REPETITIONS
ROUND_SIGMA, REP_SIGMA, WITNESS_SIGMA = 0.02, 0.03, 0.02
COMMIT = "5f0c2a9e1d7b4c3a8e6f0b1d2c3e4f5a6b7c8d9e"
FLAGS = "-ffp-contract=off -fno-math-errno -march=native"
# kernel: (ms at n = 1000 with 1 thread, exponent, speed-up with all cores)
KERNELS = {"naive": (0.8, 2.0, None), "grid_sorted": (0.05, 1.0, 1.8),
           "hash_parallel": (0.3, 1.1, 1.6)}
UNIFORM_NS = [1000, 10000, 100000]


def context(host, cpu, cores, date):
    return {"date": date, "host_name": host, "executable": "build/release/nsearch-bench",
            "num_cpus": cores, "compile_flags": FLAGS, "compiler": "GNU 12.2.0",
            "cores_online": str(cores), "cpu_model": cpu, "git_commit": COMMIT,
            "git_modified": "false", "results_format_version": "1",
            "witness": "v1: every pair of 1024 points against a distance, 31 times per thread "
                       "in step, median"}


def configs(cores, extra=()):
    """(kernel, workload, n, threads, ms) of a sweep on a machine with `cores`."""
    out = []
    for kernel, (t0, k, speedup) in KERNELS.items():
        for n in UNIFORM_NS:
            ms = t0 * (n / 1000) ** k
            out.append((kernel, "uniform", n, 1, ms))
            if speedup:
                out.append((kernel, "uniform", n, cores, ms / speedup))
    out.append(("naive", "dambreak", 10000, 1, 0.8 * 10 ** 2 * 0.9))
    out.append(("grid_sorted", "dambreak", 10000, 1, 0.05 * 10 * 1.2))
    return out + list(extra)


def write(path, ctx, entries_of, seed, scale=1.0, drop=(), refused=()):
    rng = np.random.default_rng(seed)
    witness = np.random.default_rng(seed + 100)
    groups = sorted({(w, n) for _, w, n, _, _ in entries_of},
                    key=lambda g: (g[0] != "uniform", g[0], g[1]))
    benchmarks, contexts = [], []
    for r in range(1, ROUNDS + 1):
        for g, (workload, n) in enumerate(groups, 1):
            for threads in sorted({t for _, w, m, t, _ in entries_of if (w, m) == (workload, n)}):
                part = f"r{r}-g{g:03d}-t{threads}"
                witness_times = scale * 0.2 * witness.lognormal(0, WITNESS_SIGMA, threads)
                contexts.append(dict(ctx, part=part, round=r,
                                     witness_ms=" ".join(f"{x:.4g}" for x in witness_times)))
                for kernel, w, m, t, ms in entries_of:
                    if (w, m, t) != (workload, n, threads) or (kernel, w, m, t) in drop:
                        continue
                    name = f"{kernel}/{w}/n:{m}/threads:{t}/manual_time"
                    base = {"name": name, "run_name": name, "round": r, "part": part}
                    if (kernel, w, m, t) in refused:
                        benchmarks.append(dict(base, run_type="iteration", repetitions=REPETITIONS,
                                               repetition_index=0, real_time=0.0, time_unit="ms",
                                               error_occurred=True,
                                               error_message="grid_dense: refused, the grid "
                                               "would need more than grid_max_bytes"))
                        continue
                    effect = rng.lognormal(0, ROUND_SIGMA)
                    times = scale * ms * effect * rng.lognormal(0, REP_SIGMA, REPETITIONS)
                    for i, x in enumerate(times):
                        benchmarks.append(dict(base, run_type="iteration", repetitions=REPETITIONS,
                                               repetition_index=i, real_time=float(f"{x:.6g}"),
                                               time_unit="ms", contacts=7 * m,
                                               label="VALID vs naive"))
                    # Google Benchmark's aggregate of the round: ignored by the loader
                    benchmarks.append(dict(base, name=name + "_median", run_type="aggregate",
                                           aggregate_name="median", repetitions=REPETITIONS,
                                           real_time=float(f"{np.median(times):.6g}"),
                                           time_unit="ms", label="VALID vs naive"))
    # the file's context: the first part's, without its part and round, with the rounds
    first = {k: v for k, v in contexts[0].items() if k not in ("part", "round")}
    data = {"context": first | {"rounds": ROUNDS}, "contexts": contexts,
            "benchmarks": benchmarks}
    with open(path, "w") as f:
        f.write('{"context": ' + json.dumps(data["context"]) + ',\n "contexts": [\n  ')
        f.write(",\n  ".join(json.dumps(c) for c in contexts) + '],\n "benchmarks": [\n  ')
        f.write(",\n  ".join(json.dumps(b) for b in benchmarks) + "]}\n")


def main(out):
    a = context("alpha", "Synthetic CPU A", 2, "2026-01-05T10:00:00+00:00")
    write(os.path.join(out, "aa_a.json"), a, configs(2), seed=1)
    write(os.path.join(out, "aa_b.json"), dict(a, date="2026-01-05T12:00:00+00:00"),
          configs(2), seed=2)
    refused = ("grid_dense", "uniform", 100000, 1)
    write(os.path.join(out, "twox_b.json"), context("beta", "Synthetic CPU B", 4,
                                                    "2026-01-06T10:00:00+00:00"),
          configs(4, extra=[refused + (1.0,)]), seed=3, scale=2.0,
          drop={("naive", "dambreak", 10000, 1)}, refused={refused})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
