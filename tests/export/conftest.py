"""Traces for the export tests: built step by step, and one real run of every method on the mini pack."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.trace import Step, Trace


@pytest.fixture(scope="session")
def make_trace() -> Callable[..., Trace]:
    """`make_trace(*steps, **fields)`: a finished trace holding `steps`, started at a fixed time."""
    def make(*steps: Step, **fields: object) -> Trace:
        head = {"id": "t1", "question": "Who wrote the notes?", "method": "vanilla", "backend": "hf",
                "model": "tiny-llama", "pack": "mini", "started": "2026-01-02T03:04:05+00:00", **fields}
        return Trace(**head).with_steps(steps, max((s.elapsed_ms for s in steps), default=0.0))

    return make


@pytest.fixture(scope="session")
def method_traces(mini_workbench) -> list[Trace]:
    """One offline run of every registered method on a mini-pack question."""
    from engine.methods.base import method_ids

    question = mini_workbench.pack.questions[0]
    return [mini_workbench.ask(question.question, method, question_id=question.id) for method in method_ids()]
