"""The LLM knowledge extractor (spec §2.5): a closed-book answer, handed on as possibly hallucinated.

One sample; the instructions (prompts/direct.txt) are the system turn and the user turn is the raw
question only (no references, no query time), zero-shot CoT in the `===START=== … ## Answer: …
===END===` format. Parse: empty or "i don't know" → IDK, "invalid question" → invalid, else the first
line after `## Answer:` up to `===END===`; anything else is a parse failure, which counts as IDK and is
an `error` step quoting the raw output — never handed on as an answer. For small models (issue 23) the
marker may have any number of '#', bold or none, or be a line-start "The answer is" (answers.py); an
answer that only says the answer is unknown is IDK, and one that runs past 200 characters or echoes the
question is a parse failure (a sentence is cut to its short answer: engine/tools/short_answer.py). A
reply without any marker stays a parse failure: SmolLM2-135M's unformatted closed-book sentences ("The
Nobel Prize in Physics is awarded annually in 2020."), handed on, were copied by the reasoner as its
answer. Generation stops at `===END===`, at a new line opening with "Question:" (a model writing on past
its reply) and at 192 new tokens: two reasoning bullets and a short answer need fewer ([C]'s 512 were
for a 70B model on a GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION
from engine.llm.chat import GenerationSettings
from engine.methods.hybrid.answers import first_answer, marked, says_unknown, stated
from engine.tools.base import IDK
from engine.tools.prompts import PromptFolder
from engine.tools.short_answer import Vetted, vet_answer
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)

END = "===END==="
DIRECT_SETTINGS = GenerationSettings(max_new_tokens=192, temperature=0.5, stop=(END, "\nQuestion:"))
MAX_DIRECT_CHARS = 200
_END = re.compile(r"===\s*end\s*===", re.IGNORECASE)


@dataclass(frozen=True)
class DirectAnswer:
    raw: str
    parsed: str
    kind: str  # answer | idk | invalid | parse_fail
    steps: tuple[Step, ...] = ()

    def reference(self) -> str:
        """U5 of the reasoning prompt: the parsed answer (IDK and invalid as themselves)."""
        return self.parsed


def parse_direct(text: str, question: str = "") -> tuple[str, str]:
    """(parsed answer, kind) as spec §2.5 says, with the markers as small models bend them (module doc)."""
    low = (text or "").strip().lower()
    if not low or "i don't know" in low or "i do not know" in low:
        return IDK, "idk"
    if "invalid question" in low:
        return INVALID_QUESTION, "invalid"
    span = marked(text, "answer") or stated(text)
    answer = first_answer(_END.split(text[span[1]:])[0]).strip(" :") if span else ""
    if says_unknown(answer):
        return IDK, "idk"
    vetted = vet_answer(answer, question) if answer and len(answer) <= MAX_DIRECT_CHARS else Vetted("")
    return (vetted.answer, "answer") if vetted.answer else (IDK, "parse_fail")
