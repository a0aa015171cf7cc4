"""Evaluate methods over a pack's questions: per-question rows and aggregated metrics (DESIGN §10)."""

from __future__ import annotations

import csv
import io
import json
import logging
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from threading import Event
from typing import Any

from engine.errors import BackendError, RagscopeError
from engine.evaluation.calibration import mean_confidence, reliability, reliability_by_method
from engine.evaluation.metrics import (
    RECALL_KS,
    AnswerScores,
    auroc,
    average_precision,
    backend_failure,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    score_answer,
)
from engine.files import write_text_atomic
from engine.knowledge.records import Question
from engine.runner import Workbench
from engine.tools.base import IDK
from engine.trace import AnswerStep, ErrorStep, GraphDeltaStep, RetrievalStep, Trace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuestionResult:
    method: str
    question_id: str
    type: str
    question: str
    gold: str
    answer: str
    refused: bool
    outcome: str
    em: float
    f1: float
    acc: float
    recall_5: float | None
    recall_10: float | None
    recall_all: float | None
    evidence_len: int
    latency_ms: float
    llm_calls: int
    tokens: int
    trace_id: str
    ap: float | None = None  # average precision of the evidence ranking (MAP = mean over questions)
    rounds: int = 0  # retrieval rounds (iterations with a retrieval step)
    graph_triples: int = 0  # edges the run added to its graph (RAS's query graph, ToG-2's explored KG)
    confidence: float = 0.0  # the answer's own confidence, 0..1 (0.0 without an answer step); see calibration
    # whether the answer, or a refusal's held-back best guess, is right (CRAG "correct"); None when there
    # is nothing to rank (a method's own refusal, no answer): what AUROC orders by confidence
    guess_correct: bool | None = None
    # why the answer rests on a failed backend (metrics.backend_failure's message); "" when it does not. Such a
    # run stays in every mean, scored as a miss whatever it answered: see `score_trace`
    backend_failure: str = ""
    # how many of the run's calls to a model server, vector store or other outside service failed (a tool that fell
    # back after a failed model call goes on and may fail again); 0 in journals written before issue 26
    failed_calls: int = 0
    # reciprocal rank (MRR = its mean) and nDCG@5/@10 of the evidence ranking; None without gold, and in
    # journals and results.csv written before issue 28
    rr: float | None = None
    ndcg_5: float | None = None
    ndcg_10: float | None = None


# A run whose backend failed measures the outage, not the method: no credit, not a hallucination of the method's.
FAILED_SCORES = AnswerScores(em=0.0, f1=0.0, acc=0.0, outcome="missing")

Progress = Callable[[QuestionResult, Trace], None]


def score_trace(trace: Trace, question: Question) -> QuestionResult:
    """The run's scores; one whose answer rests on a failed backend scores FAILED_SCORES and has no guess to rank."""
    answer, failure = trace.answer, backend_failure(trace)
    text, refused, confidence = (answer.text, answer.refused, answer.confidence) if answer else ("", True, 0.0)
    evidence = answer.evidence if answer else ()
    scores = FAILED_SCORES if failure else score_answer(text, question.answers, question.type, refused)
    guess = (answer.guess if refused else text) if answer and not failure else ""
    guessed = score_answer(guess, question.answers, question.type).outcome == "correct" if guess else None
    recall = {k: recall_at(evidence, question.supporting_docs, k) for k in RECALL_KS}
    ndcg = {k: ndcg_at(evidence, question.supporting_docs, k) for k in RECALL_KS}
    return QuestionResult(
        method=trace.method, question_id=question.id, type=question.type, question=question.question,
        gold=" | ".join(question.answers), answer=text, refused=refused, outcome=scores.outcome,
        em=scores.em, f1=scores.f1, acc=scores.acc, recall_5=recall[5], recall_10=recall[10],
        recall_all=recall_at(evidence, question.supporting_docs, None), evidence_len=len(evidence),
        latency_ms=trace.totals.latency_ms, llm_calls=trace.totals.llm_calls,
        tokens=trace.totals.tokens_in + trace.totals.tokens_out, trace_id=trace.id,
        ap=average_precision(evidence, question.supporting_docs),
        rounds=len({s.iteration for s in trace.steps if isinstance(s, RetrievalStep)}),
        graph_triples=sum(len(s.added_edges) for s in trace.steps if isinstance(s, GraphDeltaStep)),
        confidence=confidence, guess_correct=guessed, backend_failure=failure.message if failure else "",
        failed_calls=sum(isinstance(s, ErrorStep) and s.backend_failure for s in trace.steps),
        rr=reciprocal_rank(evidence, question.supporting_docs), ndcg_5=ndcg[5], ndcg_10=ndcg[10],
    )


def aggregate(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """Means over questions; recall over questions that have supporting docs only; confidence and ECE
    over answered questions only (engine.evaluation.calibration); AUROC over every answer or held-back
    best guess, refused or not (engine.evaluation.metrics.auroc). Runs whose answer rests on a failed backend
    stay in every mean, scored as misses (`score_trace`); `failed_runs` counts them beside."""
    n = len(results)
    if n == 0:
        return {"n": 0}
    latencies = sorted(r.latency_ms for r in results)
    outcomes = [r.outcome for r in results]

    def mean(values: Sequence[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return round(sum(kept) / len(kept), 4) if kept else None

    correct, hallucinated = outcomes.count("correct") / n, outcomes.count("hallucinated") / n
    failed = sum(bool(r.backend_failure) for r in results)
    return {
        "n": n,
        "failed_runs": failed,
        "failed_share": round(failed / n, 4),
        "failed_calls": sum(r.failed_calls for r in results),
        "em": mean([r.em for r in results]),
        "f1": mean([r.f1 for r in results]),
        "acc": mean([r.acc for r in results]),
        # A refusal scores acc 0 above; these two tell "refuses a lot" from "answers wrongly" (issue 22).
        "coverage": round(sum(not r.refused for r in results) / n, 4),
        "acc_answered": mean([r.acc for r in results if not r.refused]),
        "recall@5": mean([r.recall_5 for r in results]),
        "recall@10": mean([r.recall_10 for r in results]),
        "recall@all": mean([r.recall_all for r in results]),
        "map": mean([r.ap for r in results]),
        "mrr": mean([r.rr for r in results]),
        "ndcg@5": mean([r.ndcg_5 for r in results]),
        "ndcg@10": mean([r.ndcg_10 for r in results]),
        "evidence_len": mean([float(r.evidence_len) for r in results]),
        "latency_ms_median": round(statistics.median(latencies), 2),
        "latency_ms_p90": round(latencies[min(n - 1, int(0.9 * n))], 2),
        "correct": round(correct, 4),
        "missing": round(outcomes.count("missing") / n, 4),
        "hallucinated": round(hallucinated, 4),
        "crag_score": round(correct - hallucinated, 4),
        "confidence": mean_confidence(results),
        "ece": reliability(results).ece,
        "auroc": auroc([r.confidence for r in results if r.guess_correct is not None],
                       [r.guess_correct for r in results if r.guess_correct is not None]),
        "llm_calls": mean([float(r.llm_calls) for r in results]),
        "tokens": mean([float(r.tokens) for r in results]),
        "rounds": mean([float(r.rounds) for r in results]),
        "graph_triples": mean([float(r.graph_triples) for r in results]),
    }


def summarise(results: Sequence[QuestionResult]) -> dict[str, dict[str, Any]]:
    """{method: {"overall": {...}, "by_type": {type: {...}}, "reliability": {...}}}; the reliability
    diagram's bins are kept per method (Reliability.to_dict) so a page or a later tool can draw them."""
    report: dict[str, dict[str, Any]] = {}
    for method, diagram in reliability_by_method(results).items():
        mine = [r for r in results if r.method == method]
        types = sorted({r.type for r in mine})
        report[method] = {
            "overall": aggregate(mine),
            "by_type": {t: aggregate([r for r in mine if r.type == t]) for t in types},
            "reliability": diagram.to_dict(),
        }
    return report


def failure_summary(results: Sequence[QuestionResult]) -> str:
    """'N of M runs rest on a failed backend (method: n, …); first: <message>', or '' when none does: what `eval`
    prints and the Evaluate page warns with."""
    failed = [r for r in results if r.backend_failure]
    if not failed:
        return ""
    counts = ", ".join(f"{method}: {n}" for method, n in Counter(r.method for r in failed).items())
    first = failed[0].backend_failure
    return f"{len(failed)} of {len(results)} runs rest on a failed backend ({counts}); first: {first}"


def evaluate(workbench: Workbench, methods: Sequence[str], questions: Sequence[Question],
             params: dict[str, dict[str, Any]] | None = None, progress: Progress | None = None, *,
             workers: int = 1, done: Sequence[tuple[QuestionResult, Trace]] = (), stop: Event | None = None
             ) -> tuple[list[QuestionResult], list[Trace]]:
    """Ask every question with every method, `workers` at a time; a failing question is scored, never fatal.

    Questions are asked question by question, every method on each (`ask_order`), so an evaluation
    stopped half way has every method on the same questions. Results come back in report order
    (method by method, question by question) whatever order they finished in, so a parallel or resumed
    run returns what a serial one does, except for what timing decides: trace ids and start times,
    `latency_ms` (result, trace totals, LLM calls), steps' `elapsed_ms`, and so the latency medians and
    p90s. Pairs already in `done` (a journal's) are not asked again.
    `progress` sees each new result in this thread as it finishes. Once `stop` is set no further question
    is started; those running finish, and only the finished pairs come back. When anything here raises —
    Ctrl-C included — questions not yet started are dropped, the ones running are finished and passed to
    `progress` before the exception goes on, so nothing already paid for is lost.
    """
    finished = {(r.method, r.question_id): (r, t) for r, t in reversed(done)}  # reversed: the first wins
    todo = [(method, question) for question, method in ask_order(methods, questions)
            if (method, question.id) not in finished]
    kept: set[Future[tuple[QuestionResult, Trace] | None]] = set()

    def keep(future: Future[tuple[QuestionResult, Trace] | None]) -> None:
        kept.add(future)
        answered = future.result()
        if answered is None:  # skipped after Stop
            return
        result, trace = answered
        finished[(result.method, result.question_id)] = (result, trace)
        if progress:
            progress(result, trace)

    def ask(method: str, question: Question) -> tuple[QuestionResult, Trace] | None:
        if stop is not None and stop.is_set():
            return None
        return _asked(workbench, method, question, (params or {}).get(method))

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evaluate") as pool:
        futures = [pool.submit(ask, method, question) for method, question in todo]
        try:
            for future in as_completed(futures):
                keep(future)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            running = [future for future in futures if not future.done()]
            if running:  # a served model may take a while: say why Ctrl-C has not stopped it yet
                log.warning("stopping after the %d question(s) already being answered", len(running))
            wait(running)
            for future in futures:
                if future not in kept and not future.cancelled() and future.exception() is None:
                    keep(future)
            raise
    chosen = [finished[(method, question.id)] for method in methods for question in questions
              if (method, question.id) in finished]
    return [r for r, _ in chosen], [t for _, t in chosen]


def ask_order(methods: Sequence[str], questions: Sequence[Question]) -> list[tuple[Question, str]]:
    """(question, method) pairs in the order an evaluation asks them: each question with every method in
    turn, so whatever has finished when it stops compares the methods on the same questions."""
    return [(question, method) for question in questions for method in methods]


def _asked(workbench: Workbench, method: str, question: Question,
           params: dict[str, Any] | None) -> tuple[QuestionResult, Trace]:
    try:
        trace = workbench.ask(question.question, method, params, question.id)
    except RagscopeError as exc:  # e.g. an over-long question in an imported dataset, a model that failed to load
        trace = failed_trace(workbench, method, question, exc)
    return score_trace(trace, question), trace


def failed_trace(workbench: Workbench, method: str, question: Question, error: RagscopeError) -> Trace:
    failed = isinstance(error, BackendError)
    steps = (ErrorStep(title="Backend failed" if failed else "Question rejected", message=str(error),
                       recoverable=False, backend_failure=failed),
             AnswerStep(title="Refused", text=IDK, refused=True, backend=workbench.backend))
    head = Trace(id=f"failed-{method}-{question.id}", question=question.question[:200], method=method,
                 backend=workbench.backend, model="", pack=workbench.pack.info.name, question_id=question.id)
    return head.with_steps(steps, 0.0)


def write_report(out: Path, results: Sequence[QuestionResult], traces: Sequence[Trace]) -> dict:
    """metrics.json, per-question results.csv and traces.jsonl (so any row's trace can be opened)."""
    report = summarise(results)
    table = io.StringIO()  # csv's own line ends (\r\n), as this report has always had them
    writer = csv.DictWriter(table, fieldnames=list(QuestionResult.__dataclass_fields__))
    writer.writeheader()
    writer.writerows(asdict(r) for r in results)
    write_text_atomic(out / "metrics.json", json.dumps(report, indent=2) + "\n")
    write_text_atomic(out / "results.csv", table.getvalue())
    write_text_atomic(out / "traces.jsonl", "".join(trace.to_json() + "\n" for trace in traces))
    return report
