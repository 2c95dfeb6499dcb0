#!/usr/bin/env python3
"""What made a simulation sweep: sim_sweep.py writes sim_run.json beside its
table, and sim_results.py's summary takes the date and provenance from it (not
from the table's file time, which a copy changes).

    test_sim_provenance.py [Provenance]
"""
import json
import os
import shutil
import tempfile
import unittest

import helpers  # puts harness/ on the path
import benchdata  # noqa: E402
import program  # noqa: E402
import sim_results  # noqa: E402
import sim_sweep  # noqa: E402

SIM_RESULTS = os.path.join(helpers.HARNESS, "sim_results.py")
FIXTURE = os.path.join(helpers.ROOT, "tests", "plots", "sim", "sim.tsv")


class Provenance(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stats-simrun-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.tsv = os.path.join(self.tmp, "sim.tsv")
        shutil.copy(FIXTURE, self.tsv)

    def summary(self):
        p = helpers.run_script(SIM_RESULTS, "summary", self.tsv)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_without_a_record(self):
        os.utime(self.tsv, (86400 * 365, 86400 * 365))  # a file time in 1971
        out = self.summary()
        self.assertIn("date not recorded", out)
        self.assertIn("No sim_run.json beside the table", out)
        self.assertNotIn("1971", out)

    def test_from_the_record(self):
        tool = os.path.join(self.tmp, "nsearch")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho 'nsearch 9.9 (code path generic; paths: generic)'\n")
        os.chmod(tool, 0o755)

        class Args:
            pass
        args = Args()
        args.tool, args.threads = tool, 3
        run = sim_sweep.provenance(args)
        for key in ("date", "commit", "tool", "cpu", "threads", "host", "load_average"):
            self.assertIn(key, run)
        self.assertEqual(run["tool"], "nsearch 9.9 (code path generic; paths: generic)")
        run["date"], run["commit"] = "2026-01-02T03:04:05Z", "abc123"
        path = sim_results.run_path(self.tsv)
        self.assertEqual(path, os.path.join(self.tmp, "sim_run.json"))
        program.write_all({path: json.dumps(run, indent=1)})
        out = self.summary()
        self.assertIn("2026-01-02", out)
        self.assertIn("commit abc123", out)
        self.assertIn("tool nsearch 9.9 (code path generic", out)
        self.assertIn("threads 3", out)

    def test_a_bad_record(self):
        with open(os.path.join(self.tmp, "sim_run.json"), "w") as f:
            f.write("[1, 2]")
        p = helpers.run_script(SIM_RESULTS, "summary", self.tsv)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("sim_run.json: not a JSON object", p.stderr)


if __name__ == "__main__":
    unittest.main()
