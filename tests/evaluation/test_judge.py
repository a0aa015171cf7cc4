"""The optional LLM judge: it only upgrades rule-matching's hallucinated answers, and only on a clear grade."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.errors import BackendError
from engine.evaluation.judge import LlmJudge, parse_grade
from engine.evaluation.runner import QuestionResult
from engine.knowledge.records import Question
from fake_chat import FailingChat, fixed
from paths import MINI_PACK


def result(outcome: str, answer: str) -> QuestionResult:
    return QuestionResult(method="m", question_id="q1", type="factoid", question="Which prize?",
                          gold="Nobel Peace Prize", answer=answer, refused=outcome == "missing", outcome=outcome,
                          em=0.0, f1=0.0, acc=0.0, recall_5=None, recall_10=None, recall_all=None, evidence_len=0,
                          latency_ms=1.0, llm_calls=0, tokens=0, trace_id="t")


QUESTIONS = {"q1": Question("q1", "Which prize did he receive in 1962?", ("Nobel Peace Prize",), "factoid")}


@pytest.mark.parametrize(("text", "grade"), [("correct", "correct"), ("Incorrect.", "incorrect"),
                                             ("Grade: CORRECT", "correct"), ("maybe", "")])
def test_grades_parse_and_incorrect_is_never_read_as_correct(text, grade) -> None:
    assert parse_grade(text) == grade


def test_only_hallucinated_answers_are_sent_and_upgraded() -> None:
    chat = fixed("correct")
    judged = LlmJudge(chat).rejudge([result("hallucinated", "the Peace Prize"), result("missing", "I don't know"),
                                     result("correct", "Nobel Peace Prize")], QUESTIONS)
    assert [r.outcome for r in judged.results] == ["correct", "missing", "correct"] and judged.results[0].acc == 1.0
    assert (judged.asked, judged.failures) == (1, ())
    assert len(chat.sent) == 1 and "Ground truth: Nobel Peace Prize" in chat.sent[0]


def test_a_failing_or_unsure_judge_changes_nothing_and_a_failing_one_is_counted() -> None:
    rows = [result("hallucinated", "Physics"), result("hallucinated", "Chemistry")]
    down = LlmJudge(FailingChat(BackendError("down"))).rejudge(rows, QUESTIONS)
    assert down.results == rows and down.asked == 2 and len(down.failures) == 2 and "down" in down.failures[0]
    unsure = LlmJudge(fixed("hmm")).rejudge(rows, QUESTIONS)
    assert unsure.results == rows and unsure.failures == ()


def test_the_cli_refuses_a_judge_without_a_language_model(capsys) -> None:
    assert main(["eval", "--pack", str(MINI_PACK), "--judge"]) == 2
    assert "--judge needs a language model" in capsys.readouterr().err
