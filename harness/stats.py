"""nsearch-bench statistics: medians and their intervals by a nested bootstrap.

A configuration is measured in R rounds (separate processes) of M repetitions
each. Repetitions inside one process share its placement, clock and memory
layout, so they vary less than processes do; treating the R x M times as
independent would give intervals that are too narrow. The nested bootstrap
resamples at both levels: the rounds with replacement, then inside each chosen
round its repetitions with replacement; the median of the pooled sample is one
replicate. The 2.5 % and 97.5 % quantiles of the replicates bound the 95 %
percentile interval.

Every derived figure takes its interval from the same replicates:

    a = bootstrap(config_a.rounds, rng=config_a.name)       # Estimate: value, reps
    b = bootstrap(config_b.rounds, rng=config_b.name)
    derived(np.divide, a, b).interval()                     # speed-up of b over a,
                                                            # x bound, 1 -> all cores,
                                                            # doubling t(2n) / t(n)
    geometric_mean(*ratios).interval()                      # over n
    paired_ratio(b_rounds, a_rounds).interval()             # b / a measured side by
                                                            # side (nsearch-ab)
    slope(ns, estimates).interval()                         # exponent k of t ~ n^k

A configuration's replicates come from a Generator seeded by its name, so a
figure is the same from run to run, and two configurations draw independently.
"""
import math
import zlib

import numpy as np
from scipy import stats as scipy_stats

# The sweep's defaults: rounds (processes) per configuration and repetitions per round.
DEFAULT_ROUNDS = 3
DEFAULT_REPETITIONS = 3
# Replicates per bootstrap: with 2000, each tail of the 95 % interval rests on 50
# replicates, so its 2.5 % and 97.5 % quantiles move by a few percent of the
# interval's width from one seed to another (more buys little; fewer makes the
# endpoints jitter).
DEFAULT_B = 2000
CONFIDENCE = 0.95
# Ratios within 1 +- BAND count as equivalent.
BAND = 0.05

VERDICTS = ("equivalent", "faster", "slower", "inconclusive")


def generator(name):
    """A Generator seeded by a stable hash of a name (a configuration's)."""
    return np.random.default_rng(zlib.crc32(str(name).encode()))


def _generator(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    return generator("" if rng is None else rng)


def _rounds(rounds):
    out = [np.asarray(r, dtype=float).ravel() for r in rounds]
    out = [r for r in out if r.size]
    if not out:
        raise ValueError("no repetitions to bootstrap")
    return out


def replicates(rounds, B=DEFAULT_B, rng=None, chosen=None):
    """B bootstrap medians of rounds (a list of arrays of repetition times): rounds
    resampled with replacement, inside each chosen round its repetitions with
    replacement, pooled, np.median. rng: a Generator, or a name to seed one.
    chosen: the rounds each replicate takes (B x rounds indices), when they
    are drawn elsewhere (paired_ratio())."""
    rounds = _rounds(rounds)
    rng = _generator(rng)
    sizes = np.array([r.size for r in rounds])
    table = np.full((len(rounds), sizes.max()), np.nan)
    for i, r in enumerate(rounds):
        table[i, :r.size] = r
    if chosen is None:
        chosen = rng.integers(0, len(rounds), size=(B, len(rounds)))    # rounds
    chosen_sizes = sizes[chosen][..., None]
    picks = rng.integers(0, chosen_sizes, size=(B, len(rounds), sizes.max()))  # repetitions
    sample = table[chosen[..., None], picks]
    if (sizes == sizes[0]).all():
        return np.median(sample.reshape(B, -1), axis=1)
    # rounds of different sizes: a chosen round contributes its own size
    sample[np.arange(sizes.max()) >= chosen_sizes] = np.nan
    return np.nanmedian(sample.reshape(B, -1), axis=1)


class Estimate:
    """A figure (value) and its bootstrap replicates (reps)."""

    def __init__(self, value, reps):
        self.value, self.reps = float(value), np.asarray(reps, dtype=float)

    def interval(self, confidence=CONFIDENCE):
        """(value, low, high): the percentile interval of the replicates."""
        tail = (1 - confidence) / 2
        low, high = np.quantile(self.reps, [tail, 1 - tail])
        return self.value, float(low), float(high)

    def __repr__(self):
        return "Estimate(%s)" % format_interval(*self.interval())


def bootstrap(rounds, B=DEFAULT_B, rng=None):
    """The median of the pooled repetitions and its nested bootstrap replicates."""
    return Estimate(np.median(np.concatenate(_rounds(rounds))), replicates(rounds, B, rng))


def derived(fn, *estimates):
    """fn of estimates (numpy-vectorised: it gets floats, then arrays of
    replicates): its value from the estimates' values, its replicates from theirs."""
    return Estimate(fn(*(e.value for e in estimates)), fn(*(e.reps for e in estimates)))


def geometric_mean(*estimates):
    """Geometric mean of estimates (e.g. one kernel's ratios over n)."""
    return derived(lambda *x: scipy_stats.gmean(np.stack(x), axis=0), *estimates)


def slope(ns, estimates):
    """Exponent k of time ~ n^k: np.polyfit of log(time) on log(n), on the values
    and on each replicate."""
    if len(set(ns)) < 2:
        raise ValueError("a slope needs at least two different n")
    x = np.log(np.asarray(ns, dtype=float))
    value = np.polyfit(x, np.log([e.value for e in estimates]), 1)[0]
    reps = np.polyfit(x, np.log(np.stack([e.reps for e in estimates])), 1)[0]
    return Estimate(value, reps)


def median_interval(rounds, B=DEFAULT_B, rng=None, confidence=CONFIDENCE):
    """(median, low, high) of one configuration's rounds."""
    return bootstrap(rounds, B, rng).interval(confidence)


def ratio(num_rounds, den_rounds, B=DEFAULT_B, rng=None):
    """Estimate of median(num) / median(den), from independent replicates of each
    (drawn one after the other from the one Generator)."""
    rng = _generator(rng)
    num = bootstrap(num_rounds, B, rng)
    return derived(np.divide, num, bootstrap(den_rounds, B, rng))


def paired_ratio(num_rounds, den_rounds, B=DEFAULT_B, rng=None):
    """Estimate of median(num) / median(den) where round i of each was measured
    side by side (the same process, the same minutes: nsearch-ab): a replicate
    draws the rounds once for both, then each round's repetitions of each
    anew, so what a round shares between the two (the machine's state then)
    stays paired and the interval is that of the difference between them."""
    num, den = _rounds(num_rounds), _rounds(den_rounds)
    if len(num) != len(den):
        raise ValueError("paired rounds: as many of each")
    rng = _generator(rng)
    chosen = rng.integers(0, len(num), size=(B, len(num)))
    value = np.median(np.concatenate(num)) / np.median(np.concatenate(den))
    return Estimate(value, replicates(num, B, rng, chosen) / replicates(den, B, rng, chosen))


def ratio_interval(num_rounds, den_rounds, B=DEFAULT_B, rng=None, confidence=CONFIDENCE):
    """(ratio of medians, low, high), e.g. B's time over A's."""
    return ratio(num_rounds, den_rounds, B, rng).interval(confidence)


def slope_interval(ns, rounds_per_n, B=DEFAULT_B, rng=None, confidence=CONFIDENCE):
    """(exponent k, low, high) of time ~ n^k over configurations at ns."""
    rng = _generator(rng)
    return slope(ns, [bootstrap(r, B, rng) for r in rounds_per_n]).interval(confidence)


def verdict(low, high, band=BAND):
    """A ratio B / A's verdict from its interval: 'faster' (B) when the interval lies
    wholly below 1 - band, 'slower' wholly above 1 + band, 'equivalent' wholly
    inside [1 - band, 1 + band], else 'inconclusive'."""
    if high < 1 - band:
        return "faster"
    if low > 1 + band:
        return "slower"
    if low >= 1 - band and high <= 1 + band:
        return "equivalent"
    return "inconclusive"


def format_interval(est, low, high, digits=2):
    """'value [low, high]' rounded to the decimal place of the interval width's
    second significant digit (4 significant digits when the width is 0)."""
    width = high - low
    if not all(map(math.isfinite, (est, low, high))) or width <= 0:
        return f"{est:.4g} [{low:.4g}, {high:.4g}]"
    # the width's decimal exponent as Python's correctly rounded %e gives it (7
    # significant digits): floor(log10(width)) lands a decade low when the
    # subtraction leaves a width like 1e-4 a hair under a power of ten
    # (0.3591 - 0.359 = 9.99999999999e-05), an extra digit in every figure
    decimals = digits - 1 - int(f"{width:e}".split("e")[1])
    if decimals > 0:
        return f"{est:.{decimals}f} [{low:.{decimals}f}, {high:.{decimals}f}]"
    return "%.0f [%.0f, %.0f]" % tuple(round(x, decimals) for x in (est, low, high))


def text(est, scale=1.0, digits=2):
    """'value [low, high]' of an Estimate (times scale), or '-' for None."""
    if est is None:
        return "-"
    v, lo, hi = est.interval()
    return format_interval(v * scale, lo * scale, hi * scale, digits)
