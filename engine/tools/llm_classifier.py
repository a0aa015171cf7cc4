"""The LLM `QuestionClassifier`: a chat model names the answer type, the offline rules fill in the rest.

The model is asked for one label (prompts/classifier.txt). It is not trusted with span extraction,
so the options and order of a choice question come from `OfflineQuestionClassifier`; when the
reply holds no known label, echoes the prompt (the question, a line of the label list) or the model
fails, the offline classifier answers alone and an `error` step says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.tools.base import AnswerType
from engine.tools.llm_call import call_model, error_step, shorten
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.tools.prompts import fill, load_prompt
from engine.tools.short_answer import echo_of
from engine.trace import Step

LABELS = ("person", "place", "date", "number", "entity", "yes_no", "choice", "other")
# "yes/no", "yes-no" and "yes or no" are how models most often bend the yes_no label
_LABEL = re.compile(r"\b(person|place|date|number|entity|yes[\s_/\-]*(?:or[\s_]+)?no|choice|other)\b",
                    re.IGNORECASE)


@dataclass(frozen=True)
class LlmQuestionClassifier:
    """Answer typing by a chat model, falling back to the offline rules."""

    chat: ChatModel
    settings: GenerationSettings = GenerationSettings(max_new_tokens=16)
    offline: OfflineQuestionClassifier = field(default_factory=OfflineQuestionClassifier)

    def classify(self, question: str) -> AnswerType:
        return self.classify_with_steps(question)[0]

    def classify_with_steps(self, question: str) -> tuple[AnswerType, tuple[Step, ...]]:
        """The answer type plus the `llm_call` (and any `error`) steps worth recording; never raises."""
        text = " ".join(str(question or "").split())
        offline = self.offline.classify(text)
        if not text:
            return offline, ()  # nothing to ask, so no model call is spent
        template = load_prompt("classifier")
        reply = call_model(self.chat, (Message("user", fill(template, question=text)),), self.settings,
                           role="classifier")
        if reply.failed:
            return offline, reply.steps
        # a small model copies the question or a line of the label list ('A person's name'): no label chosen
        copied = echo_of(reply.text, text, (), template)
        label = "" if copied else parse_label(reply.text)
        if not label:
            problem = f"echoes {copied}" if copied else f"had no label of {'|'.join(LABELS)}"
            message = (f"classifier output {problem}; got {shorten(reply.text)}; "
                       f"used the offline classifier's {offline.kind!r}")
            return offline, reply.steps + (error_step("classifier", message),)
        return _typed(label, offline, reply.steps)


def parse_label(text: str) -> str:
    """The first known label word in a reply, normalised ('Yes/No' → 'yes_no'); '' when there is none."""
    match = _LABEL.search(str(text or ""))
    if not match:
        return ""
    word = match.group(1).lower()
    return "yes_no" if word.startswith("yes") else word


def _typed(label: str, offline: AnswerType, steps: tuple[Step, ...]) -> tuple[AnswerType, tuple[Step, ...]]:
    if label == offline.kind:
        return offline, steps  # keeps the offline options and order as they are
    if label != "choice":
        return AnswerType(label), steps
    # a choice without its options would leave a reader nothing to choose between
    message = (f"classifier said 'choice' but no options like 'A or B' were found in the question; "
               f"used the offline classifier's {offline.kind!r}")
    return offline, steps + (error_step("classifier", message),)
