"""The rule reader on replies a real small model gave (SmolLM2-135M-Instruct): a sentence is cut to its
entity, an echoed prompt (a document, the query, the instruction, a rule) is never the answer, and each
leaves an `error` step quoting the raw reply."""

from __future__ import annotations

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.methods.rulerag.llm import LlmRuleReader
from engine.methods.rulerag.tools import RuleReading
from engine.rules.matching import ScoredRule
from engine.tools.base import IDK
from engine.tools.llm_reader import FALLBACK_CONFIDENCE
from engine.trace import ErrorStep, Hit
from fake_chat import fixed

KG = KnowledgeGraph([Triple("Erwin Schrödinger", "born_in", "Vienna"), Triple("Vienna", "located_in", "Austria")])
BIRTH = ScoredRule(Rule("r01", "citizen_of", ("born_in", "located_in"), 0.469, 15), 0.88, 0.63, True)
QUESTION = "Of which country was Erwin Schrödinger a citizen by birth?"
SCHRODINGER = Hit("schrodinger", "schrodinger#0", "Erwin Schrödinger",
                  "Erwin Schrödinger (1887–1961) was an Austrian physicist born in Vienna, who shared the Nobel "
                  "Prize in Physics for 1933 with Paul Dirac.", 1.0, 1)
VIENNA = Hit("vienna", "vienna#0", "Vienna", "Vienna is the capital of Austria.", 0.9, 2)


def read(output: str) -> RuleReading:
    return LlmRuleReader(fixed(output), KG).read(QUESTION, (SCHRODINGER, VIENNA), [BIRTH])


def errors(result: RuleReading) -> list[ErrorStep]:
    return [s for s in result.reading.steps if isinstance(s, ErrorStep)]


def test_a_sentence_is_cut_to_its_entity_and_the_rule_path_still_attributes_it() -> None:
    output = "The answer is: Erwin Schrödinger was a citizen of Austria."
    result = read(output)
    assert (result.reading.answer, result.reading.refused, result.rule_id) == ("Austria", False, "r01")
    assert result.reading.confidence == FALLBACK_CONFIDENCE
    (error,) = errors(result)
    assert "took its short answer 'Austria'" in error.message and error.message.endswith("Raw output:\n" + output)


def test_a_short_entity_with_its_period_has_no_error_step() -> None:
    result = read("Austria.")
    assert (result.reading.answer, errors(result)) == ("Austria", [])


@pytest.mark.parametrize(("output", "echoed"), [
    ("Erwin Schrödinger (1887–1961) was an Austrian physicist born in Vienna, who shared the Nobel Prize",
     "evidence 1"),
    ("Of which country was Erwin Schrödinger a citizen by birth?", "the question"),
    ("a short entity name ending with a period, nothing else.", "an instruction line"),
    ("[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y].", "an instruction line"),
])
def test_an_echoed_prompt_is_a_refusal_with_an_error_step_quoting_the_reply(output: str, echoed: str) -> None:
    result = read(output)
    assert (result.reading.answer, result.reading.refused, result.rule_id) == (IDK, True, "")
    (error,) = errors(result)
    assert error.recoverable and f"the answer echoes {echoed}" in error.message
    assert error.message.endswith("Raw output:\n" + output)


@pytest.mark.parametrize("output", ["I don't know.", "Unknown.", "Not enough information."])
def test_refusals_in_any_wording_are_refusals_without_an_error(output: str) -> None:
    result = read(output)
    assert (result.reading.answer, result.reading.refused, errors(result)) == (IDK, True, [])
