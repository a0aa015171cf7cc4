"""Calibration of answer confidence: a reliability diagram's bins and the expected calibration error.

Definitions (one for every method, as DESIGN §10's metrics are):

- Only **answered** questions count: a refused answer makes no claim, so its confidence is not scored
  here; refusals are reported beside the figures as a count instead.
- A question is **accurate** when its CRAG outcome is "correct" (DESIGN §10).
- **Bins**: `bins` equal-width confidence intervals over [0, 1]; bin i holds confidences in
  [i/bins, (i+1)/bins), the last one also holds 1.0. A confidence outside [0, 1] counts in the nearest
  end bin, so a method's bug shows up in the diagram rather than being dropped.
- **Expected calibration error** (Guo et al. 2017, "On Calibration of Modern Neural Networks", §2):
  ECE = Σ_b (n_b / n) · |accuracy_b − mean confidence_b| over the non-empty bins, n = answered
  questions. 0 is perfectly calibrated; always answering with confidence 1.0 while half right gives 0.5.
  None when nothing was answered: no claim, nothing to be calibrated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the runner's aggregate uses this module
    from engine.evaluation.runner import QuestionResult

BINS = 10


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence interval of a reliability diagram; `confidence` and `accuracy` are None when empty."""

    lower: float
    upper: float
    count: int
    confidence: float | None  # mean confidence of the answers in the bin
    accuracy: float | None    # share of them that are correct


@dataclass(frozen=True)
class Reliability:
    """A method's reliability diagram (every bin, empty ones included), its ECE and how many it refused."""

    bins: tuple[ReliabilityBin, ...]
    answered: int
    refused: int
    ece: float | None

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON form (means rounded as the other metrics are)."""
        return {"ece": self.ece, "answered": self.answered, "refused": self.refused,
                "bins": [{"lower": b.lower, "upper": b.upper, "count": b.count,
                          "confidence": _rounded(b.confidence), "accuracy": _rounded(b.accuracy)}
                         for b in self.bins]}


def reliability(results: Sequence[QuestionResult], bins: int = BINS) -> Reliability:
    """Bin the answered results by confidence (see the module docstring for the definitions)."""
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    answered = [r for r in results if not r.refused]
    members: list[list[QuestionResult]] = [[] for _ in range(bins)]
    for result in answered:
        members[_bin_index(result.confidence, bins)].append(result)
    table = tuple(_bin(i, bins, chosen) for i, chosen in enumerate(members))
    return Reliability(bins=table, answered=len(answered), refused=len(results) - len(answered),
                       ece=expected_calibration_error(table))


def reliability_by_method(results: Sequence[QuestionResult], bins: int = BINS) -> dict[str, Reliability]:
    """One diagram per method, in the order the methods first appear in `results`."""
    methods = dict.fromkeys(r.method for r in results)
    return {m: reliability([r for r in results if r.method == m], bins) for m in methods}


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float | None:
    """Σ count/n · |accuracy − mean confidence| over the non-empty bins; None when all are empty."""
    n = sum(b.count for b in bins)
    if n == 0:
        return None
    gaps = (b.count / n * abs(b.accuracy - b.confidence) for b in bins
            if b.count and b.accuracy is not None and b.confidence is not None)
    return round(sum(gaps), 4)


def mean_confidence(results: Sequence[QuestionResult]) -> float | None:
    """The mean confidence of the answered results; None when none was answered."""
    answered = [r.confidence for r in results if not r.refused]
    return round(sum(answered) / len(answered), 4) if answered else None


def _bin_index(confidence: float, bins: int) -> int:
    # round() first: 0.7 * 10 is 7.000000000000001 but 0.57 * 100 is 56.99999999999999, and an answer
    # whose confidence is exactly an edge belongs to the bin that starts there.
    return min(bins - 1, max(0, int(round(confidence * bins, 9))))


def _bin(index: int, bins: int, chosen: Sequence[QuestionResult]) -> ReliabilityBin:
    count = len(chosen)
    return ReliabilityBin(
        lower=round(index / bins, 6), upper=round((index + 1) / bins, 6), count=count,
        confidence=sum(r.confidence for r in chosen) / count if count else None,
        accuracy=sum(r.outcome == "correct" for r in chosen) / count if count else None,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
