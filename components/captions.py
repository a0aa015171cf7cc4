"""Plain-language captions for the demo tour: what each kind of step means, for non-engineers."""

from __future__ import annotations

from collections.abc import Sequence

from components.safe import md_text
from engine.trace import Step, saved_kind

STEP_CAPTIONS: dict[str, str] = {
    "rules_matched": "The method looked for general rules (like “people born in a city are usually citizens "
                     "of its country”) that fit the question.",
    "retrieval": "It searched the knowledge pack for the passages that best match what it is looking for.",
    "graph_delta": "It added what it learned to a small map of entities and their relations.",
    "decision": "Here the method decided what to do next.",
    "llm_call": "A language model was asked something; the details show exactly what it read and wrote.",
    "attention": "It measured where the model looked while answering: which passages it paid attention to.",
    "features": "Numbers the method computed about each passage before answering.",
    "attributes": "What kind of question this is, as the method judged it.",
    "calculation": "Arithmetic is done by a safe calculator, not guessed by the model.",
    "answer": "The answer, with the passages it rests on.",
    "error": "Something did not go to plan; the method carried on where it could.",
}


def round_story(steps: Sequence[Step]) -> list[str]:
    """One plain sentence per kind of step in a round, in the order they first happened: what a presenter
    reads aloud. Labels, scores and routes stay with the steps themselves (shown on request)."""
    first: dict[str, Step] = {}
    for step in steps:
        first.setdefault(saved_kind(step), step)
    return [STEP_CAPTIONS.get(kind) or generic_caption(step) for kind, step in first.items()]


def generic_caption(step: Step) -> str:
    """A kind without a sentence of its own (one added later, or from a newer version) is named by its step,
    so the story still mentions it; its details are in the round's steps."""
    name = step.title or saved_kind(step).replace("_", " ")
    return f"The method also recorded “{md_text(name)}”; the details show what it holds."
