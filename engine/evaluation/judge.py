"""An optional LLM judge for CRAG scoring on LLM backends (DESIGN §10; CRAG: rule matching, then a model).

Rule matching (alias-aware containment, engine/evaluation/metrics.py) decides first; only answers it
scored hallucinated go to the judge, which may upgrade them to correct — a paraphrase ("the Peace
Prize" for "Nobel Peace Prize"). Missing answers stay missing. A judge reply that names no grade, or a
failed call, leaves the rule-matching outcome as it was; failed calls are counted and named (`Judged.failures`),
so `eval --judge` against a judge that is down says so and exits 3 instead of reporting unjudged grades (issue 26).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.evaluation.runner import QuestionResult
from engine.knowledge.records import Question
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.tools.llm_call import call_model
from engine.tools.prompts import PromptFolder, fill
from engine.trace import ErrorStep

PROMPTS = PromptFolder.beside(__file__)

JUDGE_SETTINGS = GenerationSettings(max_new_tokens=8)
_GRADE = re.compile(r"\b(incorrect|correct)\b", re.IGNORECASE)


def parse_grade(text: str) -> str:
    """'correct', 'incorrect' or '' (no grade): the first grade word wins, so 'incorrect' is not 'correct'."""
    match = _GRADE.search(text or "")
    return match.group(1).lower() if match else ""


@dataclass(frozen=True)
class Judged:
    """The results after judging, and why each failed judge call failed (its answer kept the rule grade)."""

    results: list[QuestionResult]
    failures: tuple[str, ...] = ()
    asked: int = 0  # judge calls made


@dataclass(frozen=True)
class LlmJudge:
    chat: ChatModel
    settings: GenerationSettings = JUDGE_SETTINGS

    def grade(self, question: str, answer: str, golds: Sequence[str]) -> tuple[str, str]:
        """(the grade or "", why the call failed or "")."""
        prompt = fill(PROMPTS.load("judge"), question=question, golds=" | ".join(golds), answer=answer)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="judge")
        failure = next((s.message for s in reply.steps if isinstance(s, ErrorStep)), "failed") if reply.failed else ""
        return parse_grade(reply.text), failure

    def rejudge(self, results: Sequence[QuestionResult], questions: Mapping[str, Question]) -> Judged:
        """The results with hallucinated answers the judge grades correct turned correct (`acc` becomes 1)."""
        judged, failures, asked = [], [], 0
        for result in results:
            question = questions.get(result.question_id)
            if result.outcome == "hallucinated" and question is not None:
                grade, failure = self.grade(question.question, result.answer, question.answers)
                asked += 1
                failures += [failure] if failure else []
                if grade == "correct":
                    result = replace(result, outcome="correct", acc=1.0)
            judged.append(result)
        return Judged(judged, tuple(failures), asked)
