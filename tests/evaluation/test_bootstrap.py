"""Bootstrap intervals: fixed seed → fixed interval; paired differences cancel what both runs share."""

from __future__ import annotations

import pytest

from engine.evaluation.bootstrap import mean_interval, paired_difference


def test_a_fixed_seed_gives_the_same_interval_and_another_seed_another():
    values = [1.0] * 30 + [0.0] * 70
    first, again = mean_interval(values), mean_interval(values)
    assert first == again and first.estimate == pytest.approx(0.3) and first.n == 100
    # Binomial mean 0.3 over 100: the normal approximation's 95 % interval is 0.3 ± 0.090.
    assert first.low == pytest.approx(0.21, abs=0.015) and first.high == pytest.approx(0.39, abs=0.015)
    graded = [i / 97 for i in range(40)]  # F1-like scores: the interval's ends move with the draws
    assert mean_interval(graded, seed=1) != mean_interval(graded) == mean_interval(graded, seed=0)


def test_pinned_interval_on_seed_zero():
    interval = paired_difference([0, 1, 0, 1, 1, 0, 0, 1], [1, 1, 0, 1, 1, 1, 0, 0])
    assert interval.estimate == pytest.approx(0.125)
    assert (round(interval.low, 3), round(interval.high, 3)) == (-0.25, 0.5)
    assert str(interval) == "+0.125 [-0.250, +0.500]"


def test_pairing_cancels_what_both_runs_share():
    before = [float(i % 2) for i in range(200)]
    after = [*before[:190], *(1.0 - v for v in before[190:])]  # 10 flips, 5 each way
    paired = paired_difference(before, after)
    assert paired.estimate == 0.0
    assert paired.high - paired.low < 0.07  # two unpaired intervals of a 0.5 mean over 200 are ≈0.14 wide each
    identical = paired_difference(before, before)
    assert (identical.low, identical.high) == (0.0, 0.0)


def test_unpaired_lengths_and_empty_input_are_refused():
    with pytest.raises(ValueError, match="pair them"):
        paired_difference([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="no values"):
        mean_interval([])
    assert mean_interval([0.4]).low == mean_interval([0.4]).high == 0.4
