"""AUROC: the chance a random right answer's confidence outranks a random wrong one's, ties counting half."""

from __future__ import annotations

import itertools
import random

import pytest

from engine.evaluation.metrics import auroc


def test_a_perfect_ordering_scores_one_a_reversed_one_zero():
    assert auroc([0.9, 0.8, 0.3, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.3, 0.8, 0.9], [True, True, False, False]) == 0.0


def test_ties_between_a_right_and_a_wrong_answer_count_one_half():
    assert auroc([0.5, 0.5], [True, False]) == 0.5
    # pairs (right, wrong): (0.7, 0.7) tie ½, (0.7, 0.2) 1, (0.4, 0.7) 0, (0.4, 0.2) 1 → 2.5 / 4
    assert auroc([0.7, 0.4, 0.7, 0.2], [True, True, False, False]) == 0.625


def test_it_is_the_share_of_right_wrong_pairs_ordered_well_on_any_sample():
    rng = random.Random(7)
    for _ in range(50):
        confidences = [rng.choice((0.1, 0.3, 0.5, 0.9)) for _ in range(12)]
        right = [rng.random() < 0.5 for _ in range(12)]
        pairs = [(c, d) for (c, r), (d, s) in itertools.product(zip(confidences, right), repeat=2) if r and not s]
        if not pairs:
            assert auroc(confidences, right) is None
            continue
        expected = sum(1.0 if c > d else 0.5 if c == d else 0.0 for c, d in pairs) / len(pairs)
        assert auroc(confidences, right) == pytest.approx(expected, abs=1e-4)


def test_with_only_right_or_only_wrong_answers_there_is_nothing_to_order():
    assert auroc([], []) is None
    assert auroc([0.2, 0.9], [True, True]) is None and auroc([0.2], [False]) is None
    with pytest.raises(ValueError, match="2 confidences for 1 outcomes"):
        auroc([0.2, 0.3], [True])
