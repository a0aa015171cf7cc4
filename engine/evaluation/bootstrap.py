"""Bootstrap confidence intervals for per-question means, and for paired differences between two evaluations.

Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) over questions, with a fixed seed so the same results
always print the same interval. Paired: both evaluations' scores of one question are resampled together, so
what questions happen to be drawn cancels out of the difference — the interval of a regression view, far
narrower than two separate intervals when two runs mostly agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95
SEED = 0


@dataclass(frozen=True)
class Interval:
    """A mean (or mean difference) over `n` questions and its bootstrap interval at `level`."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = LEVEL

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def mean_interval(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL,
                  seed: int = SEED) -> Interval:
    """The mean of `values` and its percentile bootstrap interval; one value (or none) has a zero-width one."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no values to bootstrap")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level} is not between 0 and 1")
    estimate = float(data.mean())
    if data.size == 1:
        return Interval(estimate, estimate, estimate, 1, level)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(estimate, float(low), float(high), int(data.size), level)


def paired_difference(before: Sequence[float], after: Sequence[float], *, resamples: int = RESAMPLES,
                      level: float = LEVEL, seed: int = SEED) -> Interval:
    """after − before, question by question (`before[i]` and `after[i]` score one question), and its interval."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} scores before but {len(after)} after: pair them by question first")
    deltas = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    return mean_interval(deltas, resamples=resamples, level=level, seed=seed)
