#!/usr/bin/env python3
"""harness/benchdata.py: the sweep's merged files with rounds, and today's files
without them (tests/plots/*.json).

    test_benchdata.py [Loader]
"""
import json
import os
import tempfile
import unittest

import numpy as np

import helpers
import benchdata
import stats


class Loader(unittest.TestCase):

    def test_rounds(self):
        run = benchdata.load(helpers.fixture("aa_a.json"))
        self.assertEqual(run.rounds, stats.DEFAULT_ROUNDS)
        self.assertEqual(run.context["rounds"], stats.DEFAULT_ROUNDS)
        self.assertGreater(len(run.contexts), 1)
        self.assertEqual({c["round"] for c in run.contexts}, {1, 2, 3})
        self.assertEqual(run.machine_label(), "Synthetic CPU A, 2 cores (host alpha)")
        c = run.configs[("grid_sorted", "uniform", 10000, 2)]
        self.assertEqual(c.name, "grid_sorted/uniform/n:10000/threads:2")
        self.assertEqual(c.round_ids, [1, 2, 3])
        self.assertEqual([len(r) for r in c.rounds], [stats.DEFAULT_REPETITIONS] * 3)
        self.assertEqual(c.repetitions, stats.DEFAULT_ROUNDS * stats.DEFAULT_REPETITIONS)
        self.assertEqual(c.verdict, "VALID vs naive")
        self.assertEqual(c.counters["contacts"], 70000)
        # the aggregates (a median per round) are not repetitions
        with open(helpers.fixture("aa_a.json")) as f:
            first = [b["real_time"] for b in json.load(f)["benchmarks"]
                     if b["run_name"].startswith(c.name + "/") and b["round"] == 1
                     and b["run_type"] == "iteration"]
        self.assertEqual(list(c.rounds[0]), first)
        self.assertAlmostEqual(c.median, float(np.median(np.concatenate(c.rounds))))
        self.assertEqual([k for k, _ in run.lines("uniform")][:1], ["naive"])
        self.assertEqual(run.workloads(), ["uniform", "dambreak"])

    def test_errors(self):
        run = benchdata.load(helpers.fixture("twox_b.json"))
        c = run.configs[("grid_dense", "uniform", 100000, 1)]
        self.assertEqual(c.rounds, [])
        self.assertIsNone(c.median)
        self.assertTrue(c.verdict.startswith("grid_dense: refused"))
        self.assertEqual(run.max_threads(), 4)

    def test_old_format(self):
        run = benchdata.load(os.path.join(helpers.ROOT, "tests", "plots", "a.json"))
        self.assertEqual(run.rounds, 1)
        self.assertEqual(run.contexts, [run.context])
        c = run.configs[("hash_parallel", "uniform", 1000, 2)]
        self.assertEqual(len(c.rounds), 1)
        self.assertEqual(c.repetitions, 3)  # the aggregates are not counted
        self.assertEqual(run.machine_label(), "AMD EPYC, 2 cores (host vm)")  # no ISA recorded

    def test_machine_label(self):
        """Two CPUs a hypervisor names alike are told apart by signature and ISA."""
        ctx = {"cpu_model": "AMD EPYC", "cores_online": "2", "host_name": "vm",
               "cpu_signature": "family 25 model 1 stepping 1",
               "isa": "build: avx2 avx sse4.2; cpu: avx2 yes, avx512f no"}
        zen3 = benchdata.Run("a", ctx, [ctx], {})
        self.assertEqual(zen3.machine_label(),
                         "AMD EPYC (family 25 model 1 stepping 1, AVX2), 2 cores (host vm)")
        ctx = dict(ctx, cpu_signature="not visible", isa="build: avx2; cpu: avx2 yes, avx512f yes")
        self.assertEqual(benchdata.Run("b", ctx, [ctx], {}).machine_label(),
                         "AMD EPYC (AVX-512), 2 cores (host vm)")

    def test_units_and_refusals(self):
        entry = {"name": "naive/uniform/n:100/threads:1/manual_time", "run_type": "iteration",
                 "real_time": 2500.0, "time_unit": "us"}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w") as f:
                json.dump({"context": {}, "benchmarks": [entry]}, f)
            self.assertEqual(list(benchdata.load(path).configs.values())[0].rounds[0][0], 2.5)
            # one configuration in two processes of the same round
            with open(path, "w") as f:
                json.dump({"benchmarks": [dict(entry, round=1, part="r1-g001-t1"),
                                          dict(entry, round=1, part="r1-g002-t1")]}, f)
            with self.assertRaisesRegex(benchdata.FormatError, "two processes in round 1"):
                benchdata.load(path)
            with open(path, "w") as f:
                f.write("[1, 2]")
            with self.assertRaises(benchdata.FormatError):
                benchdata.load(path)


if __name__ == "__main__":
    unittest.main()
