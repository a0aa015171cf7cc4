"""The calculator module: sampled expressions through the [C] filters and the safe calculator; offline years."""

from __future__ import annotations

import random

from engine.errors import BackendError
from engine.methods.hybrid.calculations import clean_expression, evaluate, format_number
from engine.methods.hybrid.llm import LlmCalculator
from engine.methods.hybrid.offline import OfflineCalculator
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


# issue 15: expressions that raised OverflowError or RecursionError, or would hang, out of the safe calculator
HOSTILE = ("(1e-10)**-50", "9" * 400, "10**10**10", "(" * 240 + "1" + ")" * 240, "-" * 450 + "1", "1 / 0",
           "__import__('os').system('x')", "2 ** 0.5 ** -90")


def test_hostile_samples_are_each_an_eval_error_with_its_message_and_an_error_step():
    chat = cycling(*HOSTILE)
    calcs = LlmCalculator(chat, samples=len(HOSTILE)).propose("How many years?", "refs", "tables")
    assert [c.status for c in calcs.items] == ["eval_error"] * len(HOSTILE)
    assert all(c.result is None and c.error for c in calcs.items) and not calcs.ok
    assert "1e-10 ** -50 exceeds the magnitude limit" in calcs.items[0].error
    assert [s.kind for s in calcs.steps].count("error") == len(HOSTILE)
    step = calcs.items[0].step(3)
    assert (step.kind, step.status, step.result, step.iteration) == ("calculation", "eval_error", None, 3)


def test_two_thousand_random_model_replies_never_raise_out_of_the_filters():
    rng = random.Random(8)
    pieces = [*HOSTILE, "1939 - 1898", "42", "```python\n", "\n```", "Expression: ", "print(", "**", "(", ")",
              "9" * 320, "e-", "\n", "1e308", " * ", "abs(", "[", "]"]
    seen: set[str] = set()
    statuses = set()
    for _ in range(2000):
        raw = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        item = evaluate(raw, "fuzz", seen)
        statuses.add(item.status)
        assert (item.result is None) == (item.status in ("dup", "forbidden_token", "eval_error", "empty"))
        assert item.status != "eval_error" or item.error
    assert statuses == {"ok", "dup", "forbidden_token", "eval_error", "trivial", "empty"}
