#!/usr/bin/env python3
"""harness/sim_results.py on a table that is not UTF-8 text: one line naming the
file and the line, exit 2 (its other refusals: tests/plots/sim_test.sh).

    test_sim_results.py [Malformed]
"""
import os
import shutil
import tempfile
import unittest

import helpers

SIM_RESULTS = os.path.join(helpers.HARNESS, "sim_results.py")
FIXTURE = os.path.join(helpers.ROOT, "tests", "plots", "sim", "sim.tsv")


class Malformed(unittest.TestCase):
    """A byte that is not UTF-8 in the header or in a row: refused by both commands
    in one line naming the file and its line, never with a traceback."""

    def test_not_utf8(self):
        tmp = tempfile.mkdtemp(prefix="stats-sim-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        path = os.path.join(tmp, "sim.tsv")
        with open(FIXTURE, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        for line in (1, 3):
            broken = list(lines)
            broken[line - 1] = b"\xff" + broken[line - 1]
            with open(path, "wb") as f:
                f.write(b"".join(broken))
            for args in (["summary", path], ["data", path, "--out", os.path.join(tmp, "d")]):
                with self.subTest(line=line, command=args[0]):
                    p = helpers.run_script(SIM_RESULTS, *args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(p.stderr, f"sim_results.py: {path}: line {line}: not UTF-8 "
                                               "text (byte 0xff)\n")
                    self.assertEqual(p.stdout, "")
                    self.assertFalse(os.path.exists(os.path.join(tmp, "d")))


if __name__ == "__main__":
    unittest.main()
