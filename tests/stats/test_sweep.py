#!/usr/bin/env python3
"""harness/sweep.py's progress lines (part_medians) on hand-made part files; the
sweep itself, with nsearch-bench, is tests/sweep/sweep_test.sh.

    test_sweep.py [PartMedians]
"""
import unittest

import numpy as np

import helpers  # noqa: I001  (first: puts harness/ on the path)
import benchdata
import stats
import sweep

NAME = "grid_sorted/uniform/n:1000/threads:1"


def entry(real_time, unit="ms", **more):
    return dict({"name": NAME + "/manual_time", "run_name": NAME + "/manual_time",
                 "run_type": "iteration", "real_time": real_time, "time_unit": unit}, **more)


class PartMedians(unittest.TestCase):
    """A part's median per configuration: numpy's (the mean of the middle two for
    an even count, not the upper one), in ms whatever time_unit the part used,
    with its interval from stats.py's bootstrap; an error where nothing was timed,
    and the failed repetitions beside the median where some were."""

    def medians(self, benchmarks):
        # each entry a repetition of its own, as Google Benchmark numbers them
        benchmarks = [dict(b, repetition_index=k) for k, b in enumerate(benchmarks)]
        path = helpers.temp_fixture(self, {"context": {}, "benchmarks": benchmarks})
        return sweep.part_medians(benchdata.load(path))

    def expected(self, ms):
        e = stats.bootstrap([np.asarray(ms)], rng=stats.generator(NAME))
        self.assertEqual(e.value, float(np.median(ms)))
        return f"{stats.text(e)} ms"

    def test_even_count(self):
        got = self.medians([entry(x) for x in (4.0, 1.0, 3.0, 2.0)])
        self.assertEqual(got, {NAME: self.expected([1.0, 2.0, 3.0, 4.0])})
        self.assertTrue(got[NAME].startswith("2.5 "), got)  # not 3, the upper median

    def test_units(self):
        got = self.medians([entry(500.0, "us"), entry(0.5, "ms"), entry(500000.0, "ns")])
        self.assertEqual(got, {NAME: self.expected([0.5, 0.5, 0.5])})
        self.assertTrue(got[NAME].startswith("0.5 "), got)  # not 500 ms
        got = self.medians([entry(2.0, "s"), entry(2.0, "s"), entry(2.0, "s")])
        self.assertTrue(got[NAME].startswith("2000 "), got)

    def test_aggregates_and_errors(self):
        median = dict(entry(99.0), name=NAME + "/manual_time_median", run_type="aggregate")
        failed = entry(0.0, error_occurred=True, error_message="skipped: over the limit")
        got = self.medians([entry(1.0), entry(3.0), median, failed])
        self.assertEqual(got, {NAME: self.expected([1.0, 3.0]) + " (1 of 3 repetitions failed: "
                                                                 "skipped: over the limit)"})
        self.assertEqual(self.medians([failed, failed]), {NAME: "skipped: over the limit"})


if __name__ == "__main__":
    unittest.main()
