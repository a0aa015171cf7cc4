"""The LLM knowledge extractor (spec §2.5): a closed-book answer, handed on as possibly hallucinated.

One sample, the raw question only (no references, no query time), zero-shot CoT in the
`===START=== … ## Answer: … ===END===` format. Parse: empty or "i don't know" → IDK, "invalid
question" → invalid, else the text after `## Answer:` up to `===END===`; anything else is a parse
failure, which counts as IDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.tools.base import IDK
from engine.tools.llm_call import call_model, one_line
from engine.tools.prompts import fill, load_prompt
from engine.trace import Step

DIRECT_SETTINGS = GenerationSettings(max_new_tokens=512, temperature=0.5)
_ANSWER = re.compile(r"##\s*answer\s*:?(.*?)(?:===\s*end\s*===|$)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class DirectAnswer:
    raw: str
    parsed: str
    kind: str  # answer | idk | invalid | parse_fail
    steps: tuple[Step, ...] = ()

    def reference(self) -> str:
        """U5 of the reasoning prompt: the parsed answer (IDK and invalid as themselves)."""
        return self.parsed


def parse_direct(text: str) -> tuple[str, str]:
    """(parsed answer, kind) as spec §2.5 says."""
    low = (text or "").strip().lower()
    if not low or "i don't know" in low or "i do not know" in low:
        return IDK, "idk"
    if "invalid question" in low:
        return INVALID_QUESTION, "invalid"
    match = _ANSWER.search(text)
    answer = one_line(match.group(1)).strip(" -*:") if match else ""
    return (answer, "answer") if answer else (IDK, "parse_fail")


@dataclass(frozen=True)
class KnowledgeExtractor:
    chat: ChatModel
    settings: GenerationSettings = DIRECT_SETTINGS

    def answer(self, question: str) -> DirectAnswer:
        prompt = fill(load_prompt("hybrid_direct"), question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="knowledge extractor")
        parsed, kind = parse_direct(reply.text)
        return DirectAnswer(reply.text, parsed, kind, reply.steps)
