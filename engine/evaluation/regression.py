"""Two evaluations compared question by question (a regression view): metric deltas with a paired bootstrap
interval, the questions whose answer flipped right ↔ wrong, and what differs between the two settings.

Results are paired by (method, question id), so both sides' scores of one question move together and the
interval of a delta is the paired one (engine.evaluation.bootstrap.paired_difference). A pair present on one
side only is counted and left out of every delta: a mean over different questions is no regression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from engine.evaluation.bootstrap import Interval, paired_difference
from engine.evaluation.compare import OVERALL
from engine.evaluation.metrics import crag_score
from engine.evaluation.runner import QuestionResult
from engine.evaluation.saved import SavedEvaluation
from engine.knowledge.records import QUESTION_TYPES
from engine.trace import Trace

# Per-question scores compared, in the order they are shown. rr and ndcg_10 are read only when the results
# carry them (QuestionResult fields added in issue 28); a metric a result lacks or holds None for is skipped.
METRICS = ("em", "f1", "acc", "crag", "coverage", "recall_5", "ap", "rr", "ndcg_10")
FIXED, BROKEN, NOW_REFUSES, NOW_ANSWERS = "fixed", "broken", "now refuses", "now answers"
PairKey = tuple[str, str]  # (method, question id)


def metric_value(result: QuestionResult, metric: str) -> float | None:
    """One question's score on `metric`; None when it has none (no gold documents, a field it lacks)."""
    if metric == "crag":
        return crag_score(result.outcome)
    if metric == "coverage":
        return 0.0 if result.refused else 1.0
    value = getattr(result, metric, None)
    return None if value is None else float(value)


@dataclass(frozen=True)
class MetricDelta:
    """One metric of one method over one scope: means before and after over the `n` questions scored on both
    sides, and the paired bootstrap interval of after − before."""

    method: str
    scope: str  # OVERALL or a question type
    metric: str
    before: float
    after: float
    delta: Interval
    changed: int  # of the n questions, how many scored differently after

    @property
    def n(self) -> int:
        return self.delta.n


@dataclass(frozen=True)
class Flip:
    """A question whose CRAG outcome changed between right and not right (or between refusing and answering)."""

    kind: str  # FIXED, BROKEN, NOW_REFUSES or NOW_ANSWERS
    method: str
    question_id: str
    type: str
    question: str
    gold: str
    answer_before: str
    answer_after: str
    outcome_before: str
    outcome_after: str
    confidence_before: float
    confidence_after: float
    trace_before: str  # trace ids: each opens its run
    trace_after: str


@dataclass(frozen=True)
class Unpaired:
    """Per method, how many questions only one side answered; they are left out of every delta."""

    method: str
    only_before: int
    only_after: int


@dataclass(frozen=True)
class Setting:
    """What an evaluation ran on, as far as it can be told: what `setting_differences` lists."""

    pack: str
    fingerprint: str = ""  # the pack's content hash; "" when unknown (a report written before run cards)
    models: tuple[str, ...] = ()  # "backend model" of its runs
    params: tuple[tuple[str, str, str], ...] = ()  # (method, name, value as shown), sorted
    options: tuple[tuple[str, str], ...] = ()  # backend options besides the model (quantization, device, …), sorted


@dataclass(frozen=True)
class EvaluationComparison:
    rows: tuple[MetricDelta, ...]
    flips: tuple[Flip, ...]
    unpaired: tuple[Unpaired, ...]
    paired: int  # (method, question) pairs found on both sides
    differences: tuple[str, ...] = ()  # how the two settings differ: listed, never refused
    warnings: tuple[str, ...] = ()  # differences that make the deltas doubtful (another pack's documents)
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_evaluations(before: Sequence[QuestionResult], after: Sequence[QuestionResult], *, seed: int = 0,
                        settings: tuple[Setting, Setting] | None = None) -> EvaluationComparison:
    """`after` against `before`, pair by pair; `settings` (before's, after's) adds their differences."""
    mine, theirs = _by_pair(before), _by_pair(after)
    pairs = [key for key in mine if key in theirs]
    methods = list(dict.fromkeys([m for m, _ in mine] + [m for m, _ in theirs]))
    unpaired = tuple(Unpaired(method, sum(k[0] == method and k not in theirs for k in mine),
                              sum(k[0] == method and k not in mine for k in theirs)) for method in methods)
    rows = tuple(row for method in methods for row in _method_rows(
        [(mine[k], theirs[k]) for k in pairs if k[0] == method], method, seed))
    flips = tuple(sorted((flip for k in pairs if (flip := _flip(mine[k], theirs[k])) is not None),
                         key=lambda f: [BROKEN, FIXED, NOW_REFUSES, NOW_ANSWERS].index(f.kind)))
    differences, warnings = setting_differences(*settings) if settings else ((), ())
    return EvaluationComparison(rows, flips, tuple(u for u in unpaired if u.only_before or u.only_after),
                                len(pairs), differences, warnings, seed)


def _by_pair(results: Sequence[QuestionResult]) -> dict[PairKey, QuestionResult]:
    """Results by (method, question id); the first of a repeated pair wins, as in runner.evaluate."""
    found: dict[PairKey, QuestionResult] = {}
    for result in results:
        found.setdefault((result.method, result.question_id), result)
    return found


def _method_rows(pairs: list[tuple[QuestionResult, QuestionResult]], method: str, seed: int) -> list[MetricDelta]:
    present = {before.type for before, _ in pairs}
    types = [t for t in QUESTION_TYPES if t in present] + sorted(present - set(QUESTION_TYPES))
    rows = []
    for scope in [OVERALL, *types]:
        mine = [p for p in pairs if scope == OVERALL or p[0].type == scope]
        for metric in METRICS:
            scored = [(b, a) for before, after in mine
                      if (b := metric_value(before, metric)) is not None
                      and (a := metric_value(after, metric)) is not None]
            if scored:
                olds, news = [b for b, _ in scored], [a for _, a in scored]
                rows.append(MetricDelta(method, scope, metric, sum(olds) / len(olds), sum(news) / len(news),
                                        paired_difference(olds, news, seed=seed),
                                        sum(b != a for b, a in scored)))
    return rows


def _flip(before: QuestionResult, after: QuestionResult) -> Flip | None:
    right_before, right_after = before.outcome == "correct", after.outcome == "correct"
    if right_before != right_after:
        kind = FIXED if right_after else BROKEN
    elif not right_before and before.refused != after.refused:
        kind = NOW_REFUSES if after.refused else NOW_ANSWERS
    else:
        return None
    return Flip(kind, before.method, before.question_id, before.type, before.question, before.gold,
                before.answer, after.answer, before.outcome, after.outcome, before.confidence, after.confidence,
                before.trace_id, after.trace_id)


# ---- what the two evaluations ran on ---------------------------------------------------------------

def setting_of(traces: Sequence[Trace], *, pack: str = "", fingerprint: str = "",
               options: Mapping[str, Any] | Sequence[tuple[str, Any]] = ()) -> Setting:
    """An evaluation's setting read from its traces (each carries its backend, model, the method's resolved
    parameters and the answer policy), with the pack's name and fingerprint where a journal plan or a run card
    gives them."""
    params = {(t.method, name, _shown(value)) for t in traces
              for name, value in [*t.params.items(), *(asdict(t.policy).items() if t.policy else ())]}
    models = tuple(sorted({f"{t.backend} {t.model}".strip() for t in traces}))
    kept = sorted((str(name), str(value)) for name, value in (dict(options).items())
                  if name not in ("model", "api_key"))  # the model is in `models`; a key is never shown
    return Setting(pack or next((t.pack for t in traces), ""), fingerprint, models, tuple(sorted(params)),
                   tuple(kept))


def saved_setting(saved: SavedEvaluation) -> Setting:
    """An `eval --out` report's setting: its run card's pack fingerprint and backend options, when it has a card."""
    options = (saved.card or {}).get("backend_options")
    return setting_of(saved.traces, fingerprint=card_fingerprint(saved.card),
                      options=options if isinstance(options, Mapping) else ())


def card_fingerprint(card: Mapping[str, Any] | None) -> str:
    """The pack fingerprint a run card holds ("" when none: a report written before run cards)."""
    return str((card or {}).get("pack_fingerprint") or "")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def setting_differences(before: Setting, after: Setting) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(differences, warnings): comparing two models or parameter sets is the point, so nothing is refused; a
    different pack fingerprint is also a warning, since the questions' documents (maybe gold) changed."""
    differences, warnings = [], []
    if before.pack != after.pack:
        differences.append(f"pack: {before.pack} → {after.pack}")
    if before.fingerprint and after.fingerprint and before.fingerprint != after.fingerprint:
        warnings.append(f"the packs' documents differ (fingerprint {before.fingerprint} → {after.fingerprint}): "
                        "a delta may come from the documents, not the method")
    elif not (before.fingerprint and after.fingerprint):
        differences.append("pack fingerprint: unknown on "
                           f"{'both sides' if not (before.fingerprint or after.fingerprint) else 'one side'}, "
                           "so a changed pack cannot be ruled out")
    if before.models != after.models:
        differences.append(f"model: {', '.join(before.models) or 'none'} → {', '.join(after.models) or 'none'}")
    if before.options != after.options:
        differences.append(f"backend options: {_shown_options(before.options)} → {_shown_options(after.options)}")
    differences.extend(_param_differences(before.params, after.params))
    return tuple(differences), tuple(warnings)


def _shown_options(options: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{name}={value}" for name, value in options) or "none"


def _param_differences(before: tuple[tuple[str, str, str], ...],
                       after: tuple[tuple[str, str, str], ...]) -> list[str]:
    """'vanilla k: 5 → 1' for each parameter of a method on both sides whose value changed (a method's runs
    with several values show them all)."""
    def values(params: tuple[tuple[str, str, str], ...]) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], list[str]] = {}
        for method, name, value in params:
            found.setdefault((method, name), []).append(value)
        return {key: " / ".join(shown) for key, shown in found.items()}

    old, new = values(before), values(after)
    both_methods = {m for m, _ in old} & {m for m, _ in new}
    keys = sorted((k for k in old.keys() | new.keys() if k[0] in both_methods), key=lambda k: k)
    return [f"{method} {name}: {old.get((method, name), 'unset')} → {new.get((method, name), 'unset')}"
            for method, name in keys if old.get((method, name)) != new.get((method, name))]


# ---- for a terminal ---------------------------------------------------------------------------------

def format_delta(row: MetricDelta) -> str:
    """'+0.125 [-0.250, +0.500] n=8'."""
    return f"{row.delta} n={row.n}"


def format_comparison(comparison: EvaluationComparison, before: str = "before", after: str = "after") -> str:
    """Tables for a terminal: what differs, the unpaired counts, per method the deltas, then the flips."""
    lines = [f"before: {before}", f"after:  {after}",
             f"{comparison.paired} (method, question) pairs on both sides; deltas are after − before with a "
             f"paired bootstrap 95 % interval (seed {comparison.seed})"]
    lines += [f"warning: {w}" for w in comparison.warnings]
    lines += [f"differs: {d}" for d in comparison.differences] or ["differs: nothing found in pack, model "
                                                                   "or parameters"]
    lines += [f"{u.method}: {u.only_before} question(s) only before, {u.only_after} only after — left out of "
              "every delta" for u in comparison.unpaired]
    for method in dict.fromkeys(r.method for r in comparison.rows):
        lines += ["", method, f"  {'scope':<14} {'metric':<9} {'before':>7} {'after':>7}  delta [95 % interval]"]
        for scope in dict.fromkeys(r.scope for r in comparison.rows if r.method == method):
            rows = [r for r in comparison.rows if (r.method, r.scope) == (method, scope)]
            lines += [f"  {scope:<14} {r.metric:<9} {r.before:>7.3f} {r.after:>7.3f}  {format_delta(r)}"
                      for r in rows if r.changed]
            same = [r.metric for r in rows if not r.changed]
            if same:  # metrics no question moved on: one line, not a row of +0.000 each
                lines.append(f"  {scope:<14} {'unchanged':<9} on every question: {', '.join(same)}")
    lines += ["", f"flipped questions: {len(comparison.flips)}"]
    lines += [f"  {f.kind:<11} {f.method} {f.question_id} ({f.type}): {f.outcome_before} → {f.outcome_after}; "
              f"{_quoted(f.answer_before)} → {_quoted(f.answer_after)}; traces {f.trace_before} → {f.trace_after}"
              for f in comparison.flips]
    return "\n".join(lines)


def _quoted(text: str, width: int = 40) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")
