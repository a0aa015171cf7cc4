"""The answer card: the answer, who produced it, its citations (opening the cited text), and, for
pack questions, the gold answers with EM/F1.

✓ and ✗ are said only against a gold answer, by exact match (F1 shown beside it); without one the
card says so. An offline answer's confidence is calibrated (engine.calibration: the chance that
such an answer is right), so it is shown as a percentage; a refusal below the run's `min_confidence`
(its AnswerPolicy) shows the best guess it held back, from the step's fields. A model's own confidence
is not calibrated and not shown. An answer that rests on a failed backend (a model server answering an error, a
vector store gone) says so first, in place of the answer: it is the outage's, not the method's (issue 26).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import streamlit as st

from components.safe import md_text
from engine.trace import AnswerStep, ErrorStep

NO_MODEL_NOTE = "offline — no language model was involved (retrieval, KG, extractive reader, calculator)"
CONFIDENCE_HELP = ("Fitted on evaluation runs (scripts/fit_calibration.py) from what any question and answer "
                   "show: what the question asks for, the answer's form, how the retrieved text states it. "
                   "Below the run's min_confidence the answer becomes \"I don't know\".")
VERDICT_MARK = {"correct": "✓ correct", "wrong": "✗ wrong", "refused": "refused", "no gold answer": "no gold answer"}
FAILED_BACKEND = "This answer rests on a failed model/server call: "
LEGACY_REFUSAL = "Refused: confidence"  # how a trace saved before issue 24 titled a calibration refusal


class Scores(Protocol):
    """What the card shows of a grade (engine.evaluation.metrics.AnswerScores has it)."""

    em: float
    f1: float


def verdict(scores: Scores | None, refused: bool) -> str:
    """What a page may say about one answer: 'correct' or 'wrong' only against a gold answer, by exact
    match (DESIGN §10: word overlap is F1, shown beside it, never a tick); 'refused'; 'no gold answer'."""
    if refused:
        return "refused"
    if scores is None:
        return "no gold answer"
    return "correct" if scores.em == 1.0 else "wrong"


def held_back(step: AnswerStep) -> str:
    """Why a calibration refusal refused and the best guess it held back; '' for any other answer."""
    if step.min_confidence is not None:
        return (f"confidence {step.confidence:.2f} is below min_confidence {step.min_confidence:.2f} "
                f"(best guess: {step.guess[:80]!r})")
    return step.title.removeprefix("Refused: ") if step.title.startswith(LEGACY_REFUSAL) else ""


def producer_note(step: AnswerStep) -> str:
    """Who produced the answer: the same for every card of a page that asked one backend (Compare)."""
    return NO_MODEL_NOTE if step.backend == "offline" else f"{step.backend}: {step.model}"


def render_answer(step: AnswerStep, *, key: str, sources: Mapping[str, tuple[str, str]] | None = None,
                  gold: Sequence[str] = (), scores: Scores | None = None, explained: bool = True,
                  failure: ErrorStep | None = None, gold_docs: frozenset[str] = frozenset()) -> None:
    """`sources` maps doc id → (title, text) for the citations; `scores` grade the answer against `gold`, and a
    citation of one of `gold_docs` (the pack question's supporting documents) is marked gold.
    `explained=False` leaves out the producer and the confidence's meaning, for a page that says them once
    above several cards. `failure` is the step saying why the answer rests on a failed backend
    (engine.app.runs.backend_failure), None when it does not."""
    judged = verdict(scores if gold else None, step.refused)
    with st.container(border=True, key=f"{key}.card"):
        st.markdown("#### Answer")
        if failure is not None:
            st.error(md_text(FAILED_BACKEND + failure.message), icon=":material/cloud_off:")
            st.caption(md_text(f"what the run gave instead: {step.text}"))
        elif judged == "refused":
            st.warning(md_text(step.text), icon=":material/help:")
            if held_back(step):
                st.caption(md_text(held_back(step)))
        elif judged == "correct":
            st.success(md_text(step.text), icon=":material/check_circle:")
        elif judged == "wrong":
            st.error(md_text(step.text), icon=":material/cancel:")
        else:
            st.info(md_text(step.text), icon=":material/chat:")
        if explained:
            st.caption(md_text(f"by {producer_note(step)}"))
        if step.backend == "offline" and not step.refused and failure is None:
            meaning = ": about that share of offline answers like this one are right" if explained else ""
            st.caption(f"calibrated confidence {step.confidence:.0%}{meaning}", help=CONFIDENCE_HELP)
        if gold:
            line = f"**{VERDICT_MARK[judged]}** · gold: " + " | ".join(md_text(g) for g in gold)
            if scores is not None:
                line += f" · EM {scores.em:.2f} · F1 {scores.f1:.2f}"
            st.markdown(line)
        else:
            st.caption("no gold answer: this question is not in the pack, so correctness is not judged")
        for doc_id in step.citations:
            title, text = (sources or {}).get(doc_id, ("", ""))
            mark = "✓ gold · " if doc_id in gold_docs else ""
            with st.expander(md_text(f"{mark}cites {doc_id}" + (f" — {title}" if title else ""))):
                st.text(text or "(the cited text is not part of this trace)")
