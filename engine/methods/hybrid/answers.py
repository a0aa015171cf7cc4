"""A model's short answer as small models write it (issue 23): where it stands, and what it only seems to say.

Small models bend the requested format (`Answer:` without '#', bold markers, "The answer is X"), write
"X is unknown" where the paper's post-check looks only for "I don't know" (spec §2.8), recite the
instructions, and hand the prompt back with nothing of their own. An answer that echoes the prompt or
is a sentence is vetted by the shared engine/tools/short_answer.py, as every method's is.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from engine.text import contains_run, words

_REFUSAL = re.compile(
    r"^(?:unknown|none given|n/?a)\W*$|^not (?:known|mentioned|given|stated|provided|specified|available)\b"
    r"|\b(?:is|are|was|were|remains?)\s+(?:still\s+)?(?:unknown|unclear|not\s+(?:known|mentioned|given|stated|"
    r"provided|specified|available))\b"
    r"|\b(?:no|insufficient|not enough)\s+information\b|\bcannot be (?:determined|answered|found)\b",
    re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_STATED = re.compile(r"^[ \t>*_-]*(?:so,?\s+|therefore,?\s+|thus,?\s+)?the\s+(?:final\s+|short\s+|correct\s+)?answer"
                     r"\s+is\b[*_]*\s*:?", re.IGNORECASE | re.MULTILINE)
_QUOTES = " *\"'“”‘’`"
MIN_COPY_WORDS = 8  # a line whose first 8 words are the instructions' recites them, however it goes on


def says_unknown(answer: str) -> bool:
    """The answer only says the answer is not known ("unknown", "her spouse is unknown", "no information")."""
    return bool(_REFUSAL.search(answer.strip()))


def without_copies(text: str, instructions: Iterable[str]) -> str:
    """The text without the lines that recite the instructions — their first 8 words copied, list numbers
    ignored, however they go on: a small model recites rule 1's 'the answer is "I don't know"' in words of
    its own, which is no refusal (spec §2.8 step 1); a short line ("I don't know") is always kept."""
    told = [_tokens(t) for t in instructions]
    kept = []
    for line in (text or "").splitlines():
        said = _tokens(_BULLET.sub("", line.strip()))
        if len(said) >= MIN_COPY_WORDS and any(contains_run(rule, said[:MIN_COPY_WORDS]) for rule in told):
            continue
        kept.append(line)
    return "\n".join(kept)


def says_nothing(text: str, question: str, instructions: Iterable[str] = ()) -> bool:
    """With the question cut out wherever it is repeated whole, every word left is the instructions'
    (markers: "## Answer: ## Invalid question: <the question>"): a reply that only hands the prompt back,
    with nothing of its own to summarize. A word of the question alone is something said: "The Vistula
    is longer." picks an option of "Which is longer, the Elbe or the Vistula?"."""
    said, asked = _tokens(text), _tokens(question)
    n = len(asked)
    own = [w for i, w in enumerate(said) if not any(said[j:j + n] == asked for j in range(max(0, i - n + 1), i + 1))]
    return not set(own) - set().union(*(_tokens(t) for t in instructions))


# ---- where the answer stands in a bent format -------------------------------------------------------


def marked(text: str, label: str) -> tuple[int, int] | None:
    """The span of the line-start marker `## <label>:` as models bend it ('#' any number or none, bold, no
    colon after '#'), or None: `## Answer:`, `Answer:`, `**Answer:**`, `### answer`."""
    found = re.compile(rf"^[ \t]*(?:#+[ \t]*\**{label}\**[ \t]*:?|\**{label}\**[ \t]*:)\**",
                       re.IGNORECASE | re.MULTILINE).search(text or "")
    return found.span() if found else None


def stated(text: str) -> tuple[int, int] | None:
    """The span of a line-start 'The answer is' ('So the final answer is:', …), or None: how a model that
    drops the requested markers still states its answer."""
    found = _STATED.search(text or "")
    return found.span() if found else None


def first_answer(body: str) -> str:
    """The answer written after a marker: its first non-empty line — small models go on writing after it —
    or, when that line is a list item, the whole list joined by commas (a set answer); '' when that line
    is a Markdown heading (the next marker, not an answer). Quotes and a final full stop are dropped."""
    lines = [line.strip() for line in (body or "").splitlines()]
    lines = lines[next((n for n, line in enumerate(lines) if line), len(lines)):]
    if not lines or lines[0].startswith("#"):
        return ""
    if not _BULLET.match(lines[0]):
        return lines[0].strip(_QUOTES).rstrip(".").strip(_QUOTES)
    items = [_BULLET.sub("", line).strip(" *") for line in itertools.takewhile(_BULLET.match, lines)]
    return ", ".join(item for item in items if item)


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(words(text or ""))
