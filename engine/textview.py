"""Plain-text rendering of steps for the terminal (the CLI's `ask` output).

A kind without its own lines here is printed from its fields, so a new step kind shows in `ask` the day its
dataclass is added to `engine.trace` (DESIGN §1: a new kind is its dataclass plus its renderer).
"""

from __future__ import annotations

import json
from typing import Any

from engine.trace import (
    AnswerStep,
    AttentionStep,
    AttributesStep,
    CalculationStep,
    DecisionStep,
    ErrorStep,
    FeaturesStep,
    GraphDeltaStep,
    LlmCallStep,
    RetrievalStep,
    RulesMatchedStep,
    Step,
    saved_kind,
    step_payload,
)


def _clip(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _score(score: float | None) -> str:
    """A user's LangChain retriever often gives no score (issue 25): said so, never a made-up number."""
    return f"{score:7.3f}" if score is not None else "no score"


def format_step(step: Step) -> str:
    head = f"[{step.iteration}] {saved_kind(step):<13} {step.title}  ({step.elapsed_ms:.0f} ms)"
    return "\n".join([head, *(f"    {line}" for line in _body(step))])


def _body(step: Step) -> list[str]:
    if isinstance(step, RetrievalStep):
        return [f"query: {_clip(step.query)}"] + [
            f"{h.rank:>2}. {_score(h.score)}  {h.chunk_id}  {h.title} — {_clip(h.text, 70)}" for h in step.hits]
    if isinstance(step, RulesMatchedStep):
        return [f"{r.id}  sim {r.similarity:.2f}  conf {r.confidence:.2f}  {_clip(r.text)}" for r in step.rules]
    if isinstance(step, GraphDeltaStep):
        return [f"+{len(step.added_nodes)} nodes, +{len(step.added_edges)} edges, "
                f"-{len(step.pruned_nodes)} nodes, -{len(step.pruned_edges)} edges"] + [
            f"{e.source} –{e.relation}→ {e.target}" for e in step.added_edges[:10]]
    if isinstance(step, DecisionStep):
        return [f"{step.action}: {_clip(step.detail)}"] if step.detail else [step.action]
    if isinstance(step, LlmCallStep):
        return [f"{step.role} via {step.backend}: {step.tokens_in}→{step.tokens_out} tokens",
                f"output: {_clip(step.output)}", *([f"cut: {step.cut}"] if step.cut else [])]
    if isinstance(step, CalculationStep):
        return [f"{step.expression} = {step.result}" if not step.error else f"{step.expression}: {step.error}"]
    if isinstance(step, AttributesStep):
        return [", ".join(f"{a.name}={a.value} ({a.confidence:.2f})" for a in step.labels)]
    if isinstance(step, (FeaturesStep, AttentionStep)):
        return [f"{len(getattr(step, 'rows', getattr(step, 'matrix', ())))} rows"]
    if isinstance(step, ErrorStep):
        return [("recoverable: " if step.recoverable else "fatal: ") + step.message]
    if isinstance(step, AnswerStep):
        cites = ", ".join(step.citations) or "none"
        return [f"answer: {step.text}", f"confidence {step.confidence:.2f}; cites {cites}; "
                f"by {step.backend} — {step.model}"]
    return [f"{name}: {_clip(_plain(value))}" for name, value in step_payload(step).items()]


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
