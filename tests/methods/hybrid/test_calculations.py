"""The calculator module: sampled expressions through the [C] filters and the safe calculator; offline years."""

from __future__ import annotations

from engine.methods.hybrid.calculations import LlmCalculator, OfflineCalculator, clean_expression, evaluate, format_number
from engine.errors import BackendError
from fake_chat import FailingChat, cycling


def test_each_sample_gets_a_status_and_only_ok_ones_pass() -> None:
    chat = cycling("```python\n1939 - 1898\n```", "1939 - 1898", "print(1)", "__import__('os')", "42", "")
    calcs = LlmCalculator(chat, samples=6).propose("How many years?", "refs", "tables")
    assert [c.status for c in calcs.items] == ["ok", "dup", "forbidden_token", "eval_error", "trivial", "empty"]
    assert [c.result for c in calcs.ok] == [41.0]
    assert calcs.ok[0].line() == '{"Expression": "1939 - 1898", "Result": "41"}'
    assert [s.kind for s in calcs.steps] == ["llm_call"] * 4 + ["error"] + ["llm_call"] * 2
    assert "__import__('os')" in calcs.steps[4].message  # the unevaluable sample, quoted


def test_the_rules_come_in_the_system_turn_and_again_after_the_references_and_tables() -> None:
    chat = cycling("1939 - 1898")
    LlmCalculator(chat, samples=1).propose("How many years?", "chunk one\nchunk two", "### Table 1:\n| a | b |")
    user = chat.sent[0]
    order = [user.index(s) for s in ("# References\nchunk one\nchunk two", "# Tables\n### Table 1:",
                                     "Rules:\n1. Output exactly one valid Python expression",
                                     "Question: How many years?", "Write the Python expression:")]
    assert order == sorted(order)


def test_a_failing_model_leaves_empty_samples_and_error_steps() -> None:
    calcs = LlmCalculator(FailingChat(BackendError("down")), samples=2).propose("q", "", "")
    assert [c.status for c in calcs.items] == ["empty", "empty"]
    assert not calcs.ok and any(s.kind == "error" for s in calcs.steps)


def test_expressions_are_cleaned_of_labels_and_fences() -> None:
    assert clean_expression("Expression: 2 * 3\nbecause") == "2 * 3"
    assert clean_expression("`7 - 2`") == "7 - 2"
    assert evaluate("2 ** 0.5", "t", set()).status == "ok"
    assert format_number(41.0) == "41" and format_number(0.1 + 0.2) == "0.3"


def test_offline_years_beside_two_entities_form_later_minus_earlier() -> None:
    facts = ["Polonium discovery year 1898", "Francium discovery year 1939", "Francium named after France"]
    calcs = OfflineCalculator(("polonium", "francium")).propose(
        "How many years after polonium was francium discovered?", "", "", facts)
    assert [(c.expression, c.result) for c in calcs.ok] == [("1939 - 1898", 41.0)]


def test_offline_two_years_of_one_entity_and_no_calculation_when_none_is_asked() -> None:
    refs = "Heinrich Hertz was born in 1857 in Hamburg.\nHeinrich Hertz died in 1894 in Bonn."
    calcs = OfflineCalculator(("Heinrich Hertz",)).propose("How old was Heinrich Hertz when he died?", refs, "")
    assert [c.result for c in calcs.ok] == [37.0]
    assert not OfflineCalculator(("Heinrich Hertz",)).propose("Where was Heinrich Hertz born?", refs, "").items
