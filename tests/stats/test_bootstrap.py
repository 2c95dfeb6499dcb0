#!/usr/bin/env python3
"""The nested bootstrap of harness/stats.py, at the sweep's defaults of
DEFAULT_ROUNDS rounds x DEFAULT_REPETITIONS repetitions.

    test_bootstrap.py [FlatData | Coverage | Slope | Verdicts]
"""
import unittest

import numpy as np
from scipy import stats as scipy_stats

import helpers  # noqa: F401  (harness/ on sys.path)
import stats

R, M = stats.DEFAULT_ROUNDS, stats.DEFAULT_REPETITIONS


def synthetic_rounds(rng, median, round_sigma, rep_sigma, rounds=R, reps=M):
    """Rounds of lognormal times: a round effect shared by a round's repetitions
    times noise per repetition; the population median is `median`."""
    return [median * rng.lognormal(0, round_sigma) * rng.lognormal(0, rep_sigma, reps)
            for _ in range(rounds)]


class FlatData(unittest.TestCase):
    """One round: the nested bootstrap is the ordinary bootstrap of the median, so
    its interval agrees with scipy.stats.bootstrap's percentile interval within
    the Monte Carlo error of the two."""

    def test_agrees_with_scipy(self):
        data = np.random.default_rng(7).lognormal(np.log(3.0), 0.1, R * M)
        seeds = 20
        ours = np.array([stats.median_interval([data], rng=f"flat {i}")[1:]
                         for i in range(seeds)])
        theirs = np.array([scipy_stats.bootstrap(
            (data,), np.median, n_resamples=stats.DEFAULT_B, method="percentile",
            confidence_level=stats.CONFIDENCE, random_state=np.random.default_rng(100 + i)
        ).confidence_interval for i in range(seeds)])
        # the means over seeds agree within 4 standard errors of their difference
        se = np.sqrt(ours.var(axis=0, ddof=1) / seeds + theirs.var(axis=0, ddof=1) / seeds)
        diff = np.abs(ours.mean(axis=0) - theirs.mean(axis=0))
        width = ours[:, 1].mean() - ours[:, 0].mean()
        self.assertTrue((diff <= 4 * se + 1e-3 * width).all(),
                        f"ours {ours.mean(axis=0)}, scipy {theirs.mean(axis=0)}, se {se}")
        # and the estimate is the sample's median
        self.assertEqual(stats.median_interval([data])[0], np.median(data))

    def test_deterministic(self):
        data = [np.arange(1.0, 6.0), np.arange(2.0, 7.0), np.arange(3.0, 8.0)]
        self.assertEqual(stats.median_interval(data, rng="x"), stats.median_interval(data, rng="x"))
        self.assertFalse(np.array_equal(stats.replicates(data, rng="x"),
                                        stats.replicates(data, rng="y")))

    def test_rounds_of_different_sizes(self):
        rng = np.random.default_rng(3)
        rounds = [rng.normal(10, 0.1, 5), rng.normal(10, 0.1, 3), rng.normal(10, 0.1, 5)]
        est, low, high = stats.median_interval(rounds, rng="uneven")
        self.assertTrue(low <= est <= high)
        self.assertTrue(9.5 < low < high < 10.5)


class Coverage(unittest.TestCase):
    """Rounds with a round-level random effect as large as the noise within a
    round (both lognormal, sigma 0.04), a known true ratio 1.3: the 95 % interval
    of the ratio of medians contains it in at least 90 of 100 seeded trials. A
    bootstrap that pools the repetitions and ignores the rounds covers less."""

    def test_coverage(self):
        true_ratio, trials = 1.3, 100
        nested = pooled = 0
        for t in range(trials):
            rng = np.random.default_rng(1000 + t)
            a = synthetic_rounds(rng, 2.0, 0.04, 0.04)
            b = synthetic_rounds(rng, 2.0 * true_ratio, 0.04, 0.04)
            _, low, high = stats.ratio_interval(b, a, rng=f"trial {t}")
            nested += low <= true_ratio <= high
            _, low, high = stats.ratio_interval([np.concatenate(b)], [np.concatenate(a)],
                                                rng=f"trial {t}")
            pooled += low <= true_ratio <= high
        print(f"coverage of the 95 % interval: nested {nested}/{trials}, "
              f"pooled (rounds ignored) {pooled}/{trials}")
        self.assertGreaterEqual(nested, 90)
        self.assertLess(pooled, nested)


class Slope(unittest.TestCase):
    """slope_interval recovers a known exponent of time ~ n^k."""

    def test_known_exponent(self):
        ns = [1000, 2000, 5000, 10000, 20000, 50000, 100000]
        for k in (1.0, 1.5, 2.0):
            rng = np.random.default_rng(int(k * 10))
            rounds = [synthetic_rounds(rng, 1e-3 * n ** k, 0.03, 0.03) for n in ns]
            est, low, high = stats.slope_interval(ns, rounds, rng=f"slope {k}")
            self.assertLess(abs(est - k), 0.02, (k, est))
            self.assertTrue(low <= k <= high, (k, low, high))
            self.assertLess(high - low, 0.05, (k, low, high))

    def test_needs_two_n(self):
        with self.assertRaises(ValueError):
            stats.slope_interval([1000, 1000], [[np.ones(5)], [np.ones(5)]])


class Verdicts(unittest.TestCase):
    """verdict, format_interval, derived figures and the geometric mean."""

    def test_verdict(self):
        self.assertEqual(stats.verdict(0.80, 0.90), "faster")
        self.assertEqual(stats.verdict(1.10, 1.30), "slower")
        self.assertEqual(stats.verdict(0.97, 1.04), "equivalent")
        self.assertEqual(stats.verdict(0.90, 1.02), "inconclusive")
        self.assertEqual(stats.verdict(0.98, 1.08), "inconclusive")
        self.assertEqual(stats.verdict(0.91, 0.97, band=0.1), "equivalent")

    def test_format_interval(self):
        self.assertEqual(stats.format_interval(1.00312, 0.9931, 1.0132), "1.003 [0.993, 1.013]")
        self.assertEqual(stats.format_interval(12345.6, 12100, 12600), "12350 [12100, 12600]")
        self.assertEqual(stats.format_interval(2.0, 1.5, 2.5), "2.0 [1.5, 2.5]")
        self.assertEqual(stats.format_interval(5.0, 5.0, 5.0), "5 [5, 5]")

    def test_format_interval_width_a_hair_under(self):
        """A width that is a power of ten but for the subtraction's rounding
        (0.3591 - 0.359 = 9.99999999999e-05) takes the decimals of that power: two
        significant digits of the width, not three."""
        self.assertEqual(stats.format_interval(0.359, 0.359, 0.3591),
                         "0.35900 [0.35900, 0.35910]")
        self.assertEqual(stats.format_interval(1.2, 1.1, 1.2), "1.20 [1.10, 1.20]")
        self.assertEqual(stats.format_interval(0.7, 0.3, 1.0), "0.70 [0.30, 1.00]")
        self.assertEqual(stats.format_interval(10.0, 9.9, 10.0), "10.00 [9.90, 10.00]")
        # a width truly below the power keeps its extra digit
        self.assertEqual(stats.format_interval(0.359, 0.359, 0.35909),
                         "0.359000 [0.359000, 0.359090]")

    def test_derived_and_geometric_mean(self):
        rng = np.random.default_rng(5)
        slow = stats.bootstrap(synthetic_rounds(rng, 8.0, 0.02, 0.02), rng="slow")
        fast = stats.bootstrap(synthetic_rounds(rng, 2.0, 0.02, 0.02), rng="fast")
        speedup = stats.derived(np.divide, slow, fast)
        est, low, high = speedup.interval()
        self.assertAlmostEqual(est, slow.value / fast.value)
        self.assertTrue(3.5 < low < est < high < 4.5)
        mean = stats.geometric_mean(speedup, stats.derived(np.divide, fast, slow))
        self.assertAlmostEqual(mean.value, 1.0)
        self.assertEqual(mean.reps.shape, (stats.DEFAULT_B,))


if __name__ == "__main__":
    unittest.main()
