"""The LLM knowledge extractor (spec §2.5): a closed-book answer, handed on as possibly hallucinated.

One sample; the instructions (prompts/direct.txt) are the system turn and the user turn is the raw
question only (no references, no query time), zero-shot CoT in the `===START=== … ## Answer: …
===END===` format. Parse: empty or "i don't know" → IDK, "invalid question" → invalid, else the text
after `## Answer:` up to `===END===`; anything else is a parse failure, which counts as IDK and is an
`error` step quoting the raw output — never handed on as an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.methods.hybrid.prompting import question_pieces
from engine.tools.llm_call import fill_with_segments
from engine.tools.base import IDK
from engine.tools.llm_call import call_model, error_step, one_line, shorten
from engine.tools.prompts import PromptFolder
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)

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
        role = "knowledge extractor"
        user, segments = fill_with_segments("{question}", {"question": question_pieces(question)}, question=question)
        messages = (Message("system", PROMPTS.load("direct").strip()), Message("user", user))
        reply = call_model(self.chat, messages, self.settings, role=role, segments=segments)
        parsed, kind = parse_direct(reply.text)
        steps = reply.steps
        if kind == "parse_fail" and not reply.failed:
            steps += (error_step(role, f"no '## Answer:' in the closed-book answer {shorten(reply.text)}; "
                                 "passed on as I don't know"),)
        return DirectAnswer(reply.text, parsed, kind, steps)
