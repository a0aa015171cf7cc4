"""Reproduce-a-paper cards: every method has one, every command parses with the real CLI parser and names
parameters the method takes, every number is on its scale and every measured range holds its estimate."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.app.evaluations import method_params
from engine.cli import COMMANDS, build_parser
from engine.cli.command import parse_params
from engine.errors import RagscopeError
from engine.evaluation.runner import QuestionResult
from engine.methods.base import method_ids
from engine.methods.paper_cards import (
    PaperCard,
    card_path,
    command_argv,
    load_card,
    paper_card,
    paper_cards,
    question_scores,
)

CARDS = paper_cards()
MEASURABLE_HERE = {"hotpot"}  # import-hotpot: the public slice is on the measuring machine; 2wiki, musique are not


def _pack_of(card: PaperCard) -> str:
    argv = card.argv()
    return Path(argv[argv.index("--pack") + 1]).name


def test_every_method_has_a_paper_card():
    assert set(CARDS) == set(method_ids())
    assert all(card.method == method for method, card in CARDS.items())
    assert paper_card("no-such-method") is None


@pytest.mark.parametrize("method", sorted(CARDS))
def test_the_card_command_parses_with_the_real_parser_and_the_method_takes_its_params(method):
    card = CARDS[method]
    args = build_parser(COMMANDS).parse_args(card.argv())
    assert args.run.__module__ == "engine.cli.evaluate"
    assert args.method == method and args.out is not None
    method_params([method], parse_params(args.param))  # a parameter the method lacks, or a bad value, raises
    prepare = build_parser(COMMANDS).parse_args(command_argv(card.prepare))
    assert command_argv(card.prepare)[0] in {"import-hotpot", "import-2wiki", "import-musique"}
    assert Path(prepare.out) == args.pack  # the pack the import builds is the one evaluated


@pytest.mark.parametrize("method", sorted(CARDS))
def test_the_paper_number_is_the_quoted_one_on_our_scale(method):
    card = CARDS[method]
    first = float(re.search(r"\d*\.\d+|\d+", card.number).group())
    assert card.value == pytest.approx(first / 100 if first > 1 else first)
    assert (-1.0 if card.expected.metric == "crag" else 0.0) <= card.value <= 1.0
    assert card.source and card.title and card.deviations


@pytest.mark.parametrize("method", sorted(CARDS))
def test_the_expected_range_is_measured_where_the_data_is_here_and_holds_its_estimate(method):
    card, expected = CARDS[method], CARDS[method].expected
    if _pack_of(card) not in MEASURABLE_HERE:
        assert not expected.measured and "not measured here" in str(expected)
        return
    assert expected.measured and expected.backend == "offline" and expected.n > 0
    floor = -1.0 if expected.metric == "crag" else 0.0
    assert floor <= expected.low <= expected.estimate <= expected.high <= 1.0
    assert expected.high - expected.low < 0.5  # a 95 % interval over ~100 questions, not a guess
    assert "bootstrap" in expected.note


def test_a_card_file_with_a_missing_key_bad_metric_or_bad_toml_is_named(tmp_path):
    text = card_path("vanilla").read_text(encoding="utf-8")
    broken = tmp_path / "missing.toml"
    broken.write_text(text.replace('title = "', 'headline = "', 1), encoding="utf-8")
    with pytest.raises(RagscopeError, match=r"missing\.toml: .*title"):
        load_card(broken)
    metric = tmp_path / "metric.toml"
    metric.write_text(re.sub(r'(\[expected\]\n(?:.*\n)*?)metric = "\w+"', r'\1metric = "bleu"', text),
                      encoding="utf-8")
    with pytest.raises(RagscopeError, match="'bleu'"):
        load_card(metric)
    (tmp_path / "bad.toml").write_text("method = ", encoding="utf-8")
    with pytest.raises(RagscopeError, match="not a readable paper card"):
        load_card(tmp_path / "bad.toml")
    with pytest.raises(RagscopeError, match="does not start with python -m engine"):
        command_argv("engine eval --pack x")


def _result(outcome: str, em: float) -> QuestionResult:
    return QuestionResult(method="m", question_id="q", type="factoid", question="?", gold="g", answer="a",
                          refused=outcome == "missing", outcome=outcome, em=em, f1=em, acc=em, recall_5=None,
                          recall_10=None, recall_all=None, evidence_len=0, latency_ms=0.0, llm_calls=0, tokens=0,
                          trace_id="t")


def test_question_scores_give_the_metric_and_the_crag_score_per_answer():
    results = [_result("correct", 1.0), _result("hallucinated", 0.0), _result("missing", 0.0)]
    assert question_scores(results, "em") == [1.0, 0.0, 0.0]
    assert question_scores(results, "crag") == [1.0, -1.0, 0.0]
    with pytest.raises(RagscopeError, match="'bleu'"):
        question_scores(results, "bleu")


def _page() -> None:
    from components.paper_card import render_paper_card
    from engine.app.runs import paper_card

    render_paper_card(paper_card("tog2"), key="measured")
    render_paper_card({**paper_card("ras"), "title": "<script>alert(1)</script> **bold**"}, key="unmeasured")


def test_the_card_renders_paper_beside_ours_the_command_and_the_range_as_text():
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    markdown = [m.value for m in at.markdown]
    tables = [m for m in markdown if m.startswith("| Paper | Ours |")]
    assert len(tables) == 2 and "| **Model**: GPT" in tables[0]
    assert "| **Number**: 42\\.9 (= 0.429) | **Expected**: 0\\.304 \\[0\\.216, 0\\.392\\] |" in tables[0]
    assert [c.value for c in at.code] == [f"{c.prepare}\n{c.command}" for c in (CARDS["tog2"], CARDS["ras"])]
    assert any("95 % interval" in m for m in markdown)
    assert any("not measured here" in m for m in markdown)
    assert not any("<script>" in m or "**bold**" in m for m in markdown)  # a card's text is shown as text


def test_cards_are_frozen_data():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CARDS["vanilla"].number = "1"  # type: ignore[misc]


def test_explore_offers_the_chosen_methods_paper_card(ragscope_home):
    from paths import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["pack"] = "demo"
    at = at.run()
    at.selectbox(key="explore.method").select("tog2").run()
    assert not at.exception
    (card,) = [e for e in at.expander if e.label == "Reproduce the paper"]
    assert any("import-hotpot" in c.value and "--method tog2" in c.value for c in card.code)
