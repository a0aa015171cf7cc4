"""The reasoning module: prompt slots, the §2.8 refusal order, parse failures and the summarizer."""

from __future__ import annotations

import pytest

from engine.methods.hybrid.llm import LlmReasoner
from engine.methods.hybrid.offline import OfflineReasoner
from engine.methods.hybrid.reasoner import References, build_messages, decide, parse_reasoning, summary_answer
from engine.tools.base import IDK, Reader, Reading
from engine.trace import Hit
from fake_chat import cycling

GOOD = "===START===\n## Reasoning:\n- no\n- Warsaw\n- yes\n------\n## Answer:\nWarsaw\n## False Premise:\nno\n===END==="
FLAGGED = GOOD.replace("## False Premise:\nno", "## False Premise:\nYes")
HIT = Hit("d1", "d1#0", "Marie Curie", "Marie Curie was born in Warsaw.", 0.9, 1)


def refs(**kw) -> References:
    return References(chunks=(HIT,), **kw)


def test_the_prompt_has_the_slots_in_order_and_leaves_out_empty_blocks() -> None:
    system, user = build_messages("Where was Marie Curie born?", refs(kg_block="### KG Ref 1: x", calculations=("c",),
                                                                       direct_answer="Warsaw", query_time="03/13/2024"))
    assert "===START===" in system.content and "## False Premise:" in system.content
    order = [user.content.index(s) for s in ("# References", "## Knowledge Graph references",
                                             "## Possible useful calculation results", "# An answer from another agent",
                                             "Current Time: 03/13/2024", "Question: Where")]
    assert order == sorted(order)
    assert "## Table references" not in user.content


@pytest.mark.parametrize(("text", "answer", "flag", "ok"), [
    (GOOD, "Warsaw", False, True),
    (FLAGGED, "invalid question", True, True),
    ("## ANSWER: Paris ===END===", "Paris", False, True),
    ("The answer is Paris.", "Paris", False, True),  # a stated answer where the markers are missing
    ("Paris, I think.", "", False, False),
    ("## Answer:\n" + "x" * 400 + "\n===END===", "", False, False),
    ("## Answer:\n\n## False Premise: no", "", False, False),
])
def test_sample_zero_parses_or_says_why_not(text, answer, flag, ok) -> None:
    parsed = parse_reasoning(text)
    assert (parsed.answer, parsed.false_premise, parsed.ok) == (answer, flag, ok)


def test_i_dont_know_in_any_sample_wins_then_invalid_then_sample_zero() -> None:
    assert decide([GOOD, "I don't know."])[0].route == "idk_any_sample"
    assert decide([GOOD, ""])[0].answer == IDK
    assert decide([GOOD, "Invalid question"])[0].route == "invalid_any_sample"
    assert decide(["never"])[0].answer == "invalid question"
    assert decide([FLAGGED, GOOD])[0].route == "premise_flag"
    assert decide([GOOD, GOOD])[0].answer == "Warsaw"
    decision, parsed = decide(["Paris, probably", GOOD])
    assert decision is None and "no '## Answer:'" in parsed.why


def test_a_parse_failure_goes_to_the_summarizer() -> None:
    chat = cycling("It must be Warsaw, since she was born there", "Warsaw.")
    decision = LlmReasoner(chat, samples=1).reason("Where was Marie Curie born?", refs())
    assert (decision.answer, decision.route) == ("Warsaw", "summarizer")
    assert [s.role for s in decision.steps if s.kind == "llm_call"] == ["reasoning 1", "summarizer"]
    assert decision.citations == ("d1",)
    error = decision.steps[1]
    assert error.kind == "error" and "It must be Warsaw, since she was born there" in error.message


def test_a_summary_that_is_no_short_answer_is_refused_with_an_error_step() -> None:
    chat = cycling("no markers at all", "Warsaw " * 60)
    decision = LlmReasoner(chat, samples=1).reason("Where was Marie Curie born?", refs())
    assert (decision.answer, decision.route, decision.refused) == (IDK, "summarizer", True)
    assert [s.kind for s in decision.steps] == ["llm_call", "error", "llm_call", "error"]


def test_the_system_turn_has_the_false_premise_rule_with_the_spouse_example_and_the_rules() -> None:
    system, user = build_messages("Where was Marie Curie born?", refs())
    assert ('answer exactly "Invalid question". For example, if the question asks for the spouse of someone who '
            'has never been married') in system.content
    assert system.content.count("Rules:\n1. If the references") == 1 and user.content.count("Rules:\n1.") == 1
    # no "Think step by step." (S9, U7): the format asks for the steps; the trigger made small models loop
    assert system.content.rstrip().endswith("the answer is exactly \"Invalid question\".")
    assert user.content.rstrip().endswith("Question: Where was Marie Curie born?")
    assert "step by step" not in system.content + user.content


@pytest.mark.parametrize(("text", "expected"), [("", (IDK, True)), ("I do not know", (IDK, True)),
                                                ("Invalid question.", ("invalid question", False)),
                                                ("\"Warsaw\".", ("Warsaw", False))])
def test_the_summarizer_output_is_post_checked(text, expected) -> None:
    answer, refused, _why = summary_answer(text)
    assert (answer, refused) == expected


def test_every_sample_is_drawn_with_the_system_and_user_turns() -> None:
    chat = cycling(GOOD, GOOD.replace("no\n===END", "no.\n===END"), GOOD.replace("## Reasoning", "## reasoning"))
    decision = LlmReasoner(chat, samples=3).reason("Where was Marie Curie born?", refs())
    assert decision.route == "parsed" and len(chat.sent) == 3


class _Guessing(Reader):
    def __init__(self, confidence: float, refused: bool = False):
        self.confidence = confidence
        self.refused = refused

    def read(self, question, evidence, facts=()):
        if self.refused:
            return Reading(IDK, (), self.confidence, rationale="too weak", refused=True)
        return Reading("Sicilian Defence", ("d1",), self.confidence, rationale="guess")


@pytest.mark.parametrize("score", [0.32, 0.4, 0.44, 0.9])
def test_offline_reasoning_answers_whatever_the_reader_answers_at_any_score(score) -> None:
    # issue 27: a private floor of 0.45 refused what vanilla answers from the same reader at the same score
    # (HotpotQA: 5 lost, none gained); the reader's own cut-off and the run's min_confidence decide instead
    decision = OfflineReasoner(_Guessing(score)).reason("Which opening did the champion play?", refs())
    assert decision.answer == "Sicilian Defence" and not decision.refused and decision.confidence == score


def test_offline_reasoning_refuses_when_the_reader_refuses() -> None:
    decision = OfflineReasoner(_Guessing(0.1, refused=True)).reason("Which opening did the champion play?", refs())
    assert decision.answer == IDK and decision.refused
