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

from engine.text import words

# what a model puts before its answer: the template's "Answer:" label repeated, "The answer is:", or the
# label of the document it read ("[2]", "(2)")
_LABEL = re.compile(r"^\s*(?:(?:the\s+)?(?:final\s+)?answer\s*(?:is\b\s*:?|:)|[\[(]\d{1,2}[\])])\s*", re.IGNORECASE)
PASSAGE_WORDS = 15       # an answer this long that is mostly copied word for word is a passage, not an answer
PASSAGE_SHARE = 0.6      # … "mostly": this share of its word trigrams occurs in the documents
CHUNK_WORDS = 12         # an answer this long holding half of a document's distinct words is that document
INSTRUCTION_WORDS = 3    # a run of this many instruction words is the instruction, not an answer


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
    """The answer in `raw`, or why there is none: empty, or the prompt echoed (`echo_of`)."""
    answer = first_line(raw)
    if not answer:
        return Parsed("", "the model wrote no answer")
    echoed = echo_of(answer, question, instructions, documents)
    return Parsed("", f"the model echoed {echoed} instead of answering") if echoed else Parsed(answer, "")


def echo_of(answer: str, question: str, instructions: str, documents: Sequence[str]) -> str:
    """What part of the prompt `answer` only repeats ('the question', 'the instructions', 'document N'), or ''.

    `instructions` is the prompt's own text without the question and documents. Copying a name or a
    short phrase from a document is how an extractive answer looks, so only long copies count.
    """
    said = words(answer)
    if not said:
        return ""
    asked = words(question)
    if said == asked or (len(asked) >= 4 and _run_in(asked, said)) or \
            (len(said) >= max(4, 0.6 * len(asked)) and _run_in(said, asked)):
        return "the question"
    if len(said) >= INSTRUCTION_WORDS and _run_in(said, words(instructions)):
        return "the instructions"
    texts = [words(d) for d in documents]
    for n, text in enumerate(texts, start=1):
        distinct = set(text)
        if len(said) >= CHUNK_WORDS and distinct and len(set(said) & distinct) >= 0.5 * len(distinct):
            return f"document {n}"
    if len(said) >= PASSAGE_WORDS and texts:
        per_doc = [set(_trigrams(t)) for t in texts]
        copied = set().union(*per_doc)
        mine = _trigrams(said)
        if sum(t in copied for t in mine) >= PASSAGE_SHARE * len(mine):
            best = max(range(len(texts)), key=lambda i: len(per_doc[i].intersection(mine)))
            return f"a passage of document {best + 1}"
    return ""


def instructions_of(prompt: str, question: str, documents: Sequence[str]) -> str:
    """What a prompt says besides the question and the documents: its template's own words."""
    for part in sorted([question, *documents], key=len, reverse=True):
        prompt = prompt.replace(part, " ") if part else prompt
    return prompt


def _run_in(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    """Whether `needle` occurs in `haystack` as consecutive words."""
    return f" {' '.join(needle)} " in f" {' '.join(haystack)} "


def _trigrams(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
