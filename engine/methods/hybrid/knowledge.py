"""The LLM knowledge extractor (spec §2.5): a closed-book answer, handed on as possibly hallucinated.

One sample; the instructions (prompts/direct.txt) are the system turn and the user turn is the raw
question only (no references, no query time), zero-shot CoT in the `===START=== … ## Answer: …
===END===` format. Parse: empty or "i don't know" → IDK, "invalid question" → invalid, else the text
after `## Answer:` (any number of '#', or none) up to `===END===`. Deliberate deviation (issue 23): a
reply that ignores the format altogether — a small model's plain "Marie Curie was born in Poland." — is
its answer, taken from its first line, because the reasoner is told this reference may be wrong anyway;
an answer that only says the answer is unknown is IDK; a reply that starts the format but gives no
answer, a long one, or one that repeats the question is a parse failure: it counts as IDK and is an `error` step
quoting the raw output — never handed on as an answer. Generation stops at `===END===` and at 192
new tokens: two reasoning bullets and a short answer need fewer ([C]'s 512 were for a 70B model on a GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION
from engine.methods.hybrid.answers import echo_of_prompt, first_answer, marked, says_unknown
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.methods.hybrid.prompting import question_pieces
from engine.tools.llm_call import fill_with_segments
from engine.tools.base import IDK
from engine.tools.llm_call import call_model, error_step, one_line, shorten
from engine.tools.prompts import PromptFolder
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)

END = "===END==="
DIRECT_SETTINGS = GenerationSettings(max_new_tokens=192, temperature=0.5, stop=(END,))
MAX_DIRECT_CHARS = 200
_END = re.compile(r"===\s*end\s*===", re.IGNORECASE)
_FORMAT = re.compile(r"===\s*(?:start|end)\s*===|^#+\s*\w|^-{3,}", re.IGNORECASE | re.MULTILINE)


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
    """(parsed answer, kind) as spec §2.5 says, a plain unformatted reply taken as the answer (module doc)."""
    low = (text or "").strip().lower()
    if not low or "i don't know" in low or "i do not know" in low:
        return IDK, "idk"
    if "invalid question" in low:
        return INVALID_QUESTION, "invalid"
    span = marked(text, "answer")
    if span:
        answer = first_answer(_END.split(text[span[1]:])[0]).strip(" :")
    else:
        answer = "" if _FORMAT.search(text) else one_line(text.strip().splitlines()[0]).strip(" -*")
    if says_unknown(answer):
        return IDK, "idk"
    if not answer or len(answer) > MAX_DIRECT_CHARS or echo_of_prompt(answer, question):
        return IDK, "parse_fail"
    return answer, "answer"


@dataclass(frozen=True)
class KnowledgeExtractor:
    chat: ChatModel
    settings: GenerationSettings = DIRECT_SETTINGS

    def answer(self, question: str) -> DirectAnswer:
        role = "knowledge extractor"
        user, segments = fill_with_segments("{question}", {"question": question_pieces(question)}, question=question)
        messages = (Message("system", PROMPTS.load("direct").strip()), Message("user", user))
        reply = call_model(self.chat, messages, self.settings, role=role, segments=segments)
        parsed, kind = parse_direct(reply.text, question)
        steps = reply.steps
        if kind == "parse_fail" and not reply.failed:
            steps += (error_step(role, f"no short answer in the closed-book reply {shorten(reply.text)}; "
                                 "passed on as I don't know"),)
        return DirectAnswer(reply.text, parsed, kind, steps)
