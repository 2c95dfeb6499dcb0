#!/usr/bin/env python3
"""Two builds side by side: the paired ratio of harness/stats.py, the table of
harness/ab.py, and the tool nsearch-ab (harness/ab.c; ctest sets NS_AB_TOOL
and NS_AB_LIBRARY, a shared build of the library).

    test_ab.py [PairedRatio | Summary | Tool]
"""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import helpers
import stats

AB = os.path.join(helpers.HARNESS, "ab.py")


def paired_rounds(rng, median, ratio, rounds, reps, state_sigma, rep_sigma):
    """Rounds of a and b measured side by side: each round a state of the machine
    (lognormal, state_sigma) that both meet, then noise per repetition."""
    a, b = [], []
    for _ in range(rounds):
        state = median * rng.lognormal(0, state_sigma)
        a.append(state * rng.lognormal(0, rep_sigma, reps))
        b.append(state * ratio * rng.lognormal(0, rep_sigma, reps))
    return a, b


class PairedRatio(unittest.TestCase):
    """States of the machine five times the noise within a round, shared by both
    builds, a true ratio of 0.95: the paired interval contains it in at least 90
    of 100 seeded trials, and is narrower than the unpaired one, which
    resamples the states of the two apart."""

    def test_coverage_and_width(self):
        true_ratio, trials, covered, narrower = 0.95, 100, 0, 0
        for t in range(trials):
            rng = np.random.default_rng(500 + t)
            a, b = paired_rounds(rng, 10.0, true_ratio, 12, 5, 0.10, 0.02)
            _, low, high = stats.paired_ratio(b, a, rng=f"paired {t}").interval()
            covered += low <= true_ratio <= high
            _, ulow, uhigh = stats.ratio_interval(b, a, rng=f"paired {t}")
            narrower += (high - low) < (uhigh - ulow)
        print(f"paired coverage {covered}/{trials}, narrower than unpaired in {narrower}")
        self.assertGreaterEqual(covered, 90)
        self.assertEqual(narrower, trials)

    def test_value_and_refusal(self):
        a = [np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])]
        b = [np.array([2.0, 4.0, 6.0]), np.array([4.0, 6.0, 8.0])]
        est = stats.paired_ratio(b, a, rng="x")
        self.assertEqual(est.value, 2.0)
        _, low, high = est.interval()
        self.assertTrue(low <= 2.0 <= high)
        self.assertTrue(np.array_equal(est.reps, stats.paired_ratio(b, a, rng="x").reps))
        with self.assertRaises(ValueError):
            stats.paired_ratio(b, a[:1])


def synthetic_run(workload, ratio, rounds=8, reps=3):
    rng = np.random.default_rng(9)
    a, b = paired_rounds(rng, 5.0, ratio, rounds, reps, 0.1, 0.01)
    return {"workload": workload, "n": 1000, "threads": 2, "contacts": 123,
            "rounds": [{"first": "ab"[r % 2], "a_ms": list(a[r]), "b_ms": list(b[r])}
                       for r in range(rounds)]}


class Summary(unittest.TestCase):
    """ab.py --summary on a synthetic ab.json: a clear speed-up is 'faster', no
    change 'equivalent'; the header names both builds, the CPU and the date."""

    def test_table(self):
        doc = {"a_name": "HEAD (abc1234)", "b_name": "the working tree (abc1234+modified)",
               "kernel": "grid_sorted", "rounds": 8, "repetitions": 3, "cpu": "Some CPU",
               "date": "2026-01-01T00:00:00+00:00",
               "runs": [synthetic_run("uniform", 0.8), synthetic_run("powder", 1.0)]}
        path = helpers.temp_fixture(self, doc)
        out = helpers.run_script(AB, "--summary", path)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = [line for line in out.stdout.splitlines() if line.startswith("| ")]
        self.assertEqual(len(rows), 3, out.stdout)
        self.assertIn("| uniform | 1000 | 2 | 123 |", rows[1])
        self.assertTrue(rows[1].endswith("| faster |"), rows[1])
        self.assertTrue(rows[2].endswith("| equivalent |"), rows[2])
        for part in ("HEAD (abc1234)", "abc1234+modified", "Some CPU", "2026-01-01"):
            self.assertIn(part, out.stdout)

    def test_usage(self):
        out = helpers.run_script(AB, "--a", "x.so")
        self.assertEqual(out.returncode, 2)
        self.assertIn("is needed", out.stderr)


class Tool(unittest.TestCase):
    """nsearch-ab with the same library as both builds: one JSON object with the
    options, the contacts and every round's repetitions of each, the first
    build alternating; its usage errors exit 2 with one line."""

    def setUp(self):
        self.tool, self.lib = os.environ.get("NS_AB_TOOL"), os.environ.get("NS_AB_LIBRARY")
        if not (self.tool and self.lib):
            self.fail("NS_AB_TOOL and NS_AB_LIBRARY are not set (ctest sets them)")

    def run_tool(self, *args):
        return subprocess.run([self.tool, *args], capture_output=True, text=True, timeout=120)

    def test_rounds(self):
        out = self.run_tool("--a", self.lib, "--b", self.lib, "--workload", "powder", "--n",
                            "3000", "--threads", "2", "--rounds", "3", "--repetitions", "2",
                            "--min-time", "0")
        self.assertEqual(out.returncode, 0, out.stderr)
        run = json.loads(out.stdout)
        self.assertEqual((run["workload"], run["n"], run["threads"]), ("powder", 3000, 2))
        self.assertGreater(run["contacts"], 0)
        self.assertEqual([r["first"] for r in run["rounds"]], ["a", "b", "a"])
        for r in run["rounds"]:
            self.assertEqual(len(r["a_ms"]), 2)
            self.assertEqual(len(r["b_ms"]), 2)
            self.assertTrue(all(t > 0 for t in r["a_ms"] + r["b_ms"]))

    def test_usage_errors(self):
        with tempfile.TemporaryDirectory() as d:
            missing = os.path.join(d, "no such library.so")
            for args, says in ((["--a", self.lib], "--a and --b"),
                               (["--a", self.lib, "--b", self.lib, "--n", "1"], "--n '1'"),
                               (["--a", self.lib, "--b", self.lib, "--kernel", "nope"],
                                "no kernel nope"),
                               (["--a", self.lib, "--b", missing], "cannot load"),
                               (["--a", self.lib, "--b", self.lib, "--bogus", "1"],
                                "unknown option --bogus")):
                out = self.run_tool(*args)
                self.assertEqual(out.returncode, 2, args)
                self.assertIn(says, out.stderr)
                self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
                self.assertEqual(out.stdout, "")


if __name__ == "__main__":
    unittest.main()
