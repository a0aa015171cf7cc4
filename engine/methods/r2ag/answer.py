"""R2AG's answer from what the model wrote (spec §3.11): its first line, and never the prompt handed back.

A weak model often continues its prompt instead of answering: it repeats the question, an
instruction line, or copies a retrieved passage (SmolLM2-135M does all three). Such text is no
answer under any metric's reading, so the method records it as a recoverable error and answers
"I don't know" (the paper has no fallback for an unusable output, and a refusal scores better than
a wrong answer under the CRAG score).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.tools.short_answer import echo_of

# what a model puts before its answer: the template's "Answer:" label repeated, "The answer is:", or the
# label of the document it read ("[2]", "(2)")
_LABEL = re.compile(r"^\s*(?:(?:the\s+)?(?:final\s+)?answer\s*(?:is\b\s*:?|:)|[\[(]\d{1,2}[\])])\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    answer: str   # the first line, label removed; "" when the output holds none or only echoes the prompt
    problem: str  # why `answer` is empty ("" when it is an answer)


def first_line(text: str) -> str:
    """The first non-empty line without a repeated "Answer:" label (metrics score the first line [P])."""
    for line in text.strip().splitlines():
        line = _LABEL.sub("", line, count=1).strip()
        if line:
            return _LABEL.sub("", line, count=1).strip() or line  # "(1) Answer: X" has both
    return ""


def parse_output(raw: str, question: str, instructions: str, documents: Sequence[str]) -> Parsed:
    """The answer in `raw`, or why there is none: empty, or the prompt echoed (short_answer.echo_of)."""
    answer = first_line(raw)
    if not answer:
        return Parsed("", "the model wrote no answer")
    echoed = echo_of(answer, question, documents, instructions)
    return Parsed("", f"the model echoed {echoed} instead of answering") if echoed else Parsed(answer, "")


def instructions_of(prompt: str, question: str, documents: Sequence[str]) -> str:
    """What a prompt says besides the question and the documents: its template's own words."""
    for part in sorted([question, *documents], key=len, reverse=True):
        prompt = prompt.replace(part, " ") if part else prompt
    return prompt
