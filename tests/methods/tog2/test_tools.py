"""ToG-2 tools: each prompt and its tolerant parser as a pair, the fallbacks, and the offline twins."""

from __future__ import annotations

from engine.graph.linking import EntityLink
from engine.knowledge.records import Triple
from engine.methods.tog2.llm import (
    LlmReasoner,
    LlmRelationPruner,
    LlmTopicPruner,
    build_reason_prompt,
    format_relations,
    parse_reason_output,
    parse_relation_output,
    parse_topic_output,
)
from engine.methods.tog2.offline import OfflineReasoner
from engine.tools.base import Reader, Reading
from engine.trace import ErrorStep, Hit, LlmCallStep
from fake_chat import FailingChat, ScriptedChat, fixed

RELATIONS = {"Werner Heisenberg": ["born_in", "doctoral_advisor", "~doctoral_advisor"],
             "Max Born": ["employer", "born_in"]}
HIT = Hit("d1", "d1#0", "Arnold Sommerfeld", "Arnold Sommerfeld was born in Königsberg.", 0.8, 1)


def test_relation_prompt_lists_each_entity_and_the_parser_reads_the_spec_format_back():
    assert "Entity 2: Max Born\nAvailable Relations:\n1. employer" in format_relations(RELATIONS)
    reply = ("Entity 1: Werner Heisenberg\n1. {doctoral_advisor (Score: 9)}: the advisor is asked\n"
             "2. {born_in (Score: 2)}: not his\nEntity 2: Max Born\n1. {born_in (Score: 4.5)}: maybe")
    scores = {(s.entity, s.relation): s.score for s in parse_relation_output(reply, RELATIONS)}
    assert scores == {("Werner Heisenberg", "doctoral_advisor"): 9.0, ("Werner Heisenberg", "born_in"): 2.0,
                      ("Max Born", "born_in"): 4.5}


def test_relation_scores_on_a_zero_to_one_scale_are_put_on_zero_to_ten():
    reply = "{doctoral advisor (Score: 0.9)}: yes\n{~doctoral_advisor (score: 0.3)}"
    scores = parse_relation_output(reply, {"Werner Heisenberg": RELATIONS["Werner Heisenberg"]})
    assert [(s.relation, s.score) for s in scores] == [("doctoral_advisor", 9.0), ("~doctoral_advisor", 3.0)]


def test_relation_prune_keeps_width_per_entity_and_falls_back_to_word_overlap_on_garbage():
    chat = fixed("Entity 1: Werner Heisenberg\n1. {doctoral_advisor (Score: 9)}: x\n2. {born_in (Score: 5)}: y\n"
                 "3. {~doctoral_advisor (Score: 1)}: z")
    heisenberg = {"Werner Heisenberg": RELATIONS["Werner Heisenberg"]}
    choice = LlmRelationPruner(chat).prune("Where was his advisor born?", "", {}, heisenberg, 2, "combined")
    assert [s.relation for s in choice.kept] == ["doctoral_advisor", "born_in"]
    garbage = LlmRelationPruner(fixed("zzz qq")).prune("Who was the doctoral advisor?", "", {}, RELATIONS, 1,
                                                       "combined")
    assert any(isinstance(s, ErrorStep) for s in garbage.steps)
    assert [s.relation for s in garbage.kept if s.entity == "Werner Heisenberg"] == ["doctoral_advisor"]


def test_per_entity_mode_makes_one_call_per_entity_and_drops_low_scores():
    chat = ScriptedChat(lambda prompt: "{born_in (Score: 1)}: weak\n{employer (Score: 7)}: ok")
    choice = LlmRelationPruner(chat).prune("q", "", {}, RELATIONS, 3, "per-entity")
    assert len(chat.sent) == 2
    assert [(s.entity, s.relation) for s in choice.kept] == [("Max Born", "employer")]


def test_topic_prune_reads_a_json_subset_and_keeps_everything_when_it_cannot():
    names = ["Werner Heisenberg", "city", "physics"]
    reply = 'Output: {"Werner Heisenberg": "Werner Heisenberg"}'
    assert parse_topic_output(reply, names) == (("Werner Heisenberg",), True)
    links = [EntityLink(n, n, "exact", 1.0) for n in names]
    choice = LlmTopicPruner(fixed("no json here")).prune("q", links, 3)
    assert choice.kept == tuple(names) and any(isinstance(s, ErrorStep) for s in choice.steps)


def test_reasoning_output_parses_yes_with_answer_and_no_with_clue():
    assert parse_reason_output("{Yes} {Königsberg}") == (True, "Königsberg", True)
    assert parse_reason_output("{No} {advisor is Sommerfeld; birthplace missing}")[:2] == (
        False, "advisor is Sommerfeld; birthplace missing")
    assert parse_reason_output("{No} {clue: it was Thomas Jefferson}")[1] == "it was Thomas Jefferson"  # as the demo


def test_lenient_yes_needs_the_answer_in_braces_and_anything_else_is_neither_answer_nor_clue():
    assert parse_reason_output("Yes, the answer is {Königsberg}.") == (True, "Königsberg", False)
    assert parse_reason_output("Answer: yes. {Königsberg}") == (True, "Königsberg", False)
    assert parse_reason_output("Yes, Königsberg.") == (False, "", False)
    assert parse_reason_output("No, we still need {his birthplace}") == (False, "", False)
    assert parse_reason_output("I think so") == (False, "", False)


def test_an_unparsed_reasoning_reply_is_an_error_step_with_the_raw_text_never_an_answer_or_clue():
    for raw in ("Yes, Königsberg.", "The birthplace is still unknown, look at Sommerfeld next"):
        out = LlmReasoner(fixed(raw)).reason("Where?", [], [HIT], "", final=True)
        assert not out.sufficient and out.reading.refused is True and out.clue == ""
        errors = [s for s in out.steps if isinstance(s, ErrorStep)]
        assert len(errors) == 1 and raw in errors[0].message
    lenient = LlmReasoner(fixed("Yes: {Königsberg}")).reason("Where?", [], [HIT], "", final=False)
    assert lenient.sufficient and lenient.reading.answer == "Königsberg" and lenient.reading.refused is False
    empty_yes = LlmReasoner(fixed("{Yes}")).reason("Where?", [], [HIT], "", final=False)
    assert not empty_yes.sufficient and any(isinstance(s, ErrorStep) for s in empty_yes.steps)


def test_query_reformulation_reads_the_braced_query_and_falls_back_to_question_plus_clue():
    from engine.methods.tog2.llm import LlmQueryReformer, parse_requery_output
    from engine.methods.tog2.offline import OfflineQueryReformer

    assert parse_requery_output("Missing: his birthplace.\nQuery: {Sommerfeld birthplace}") == (
        "Sommerfeld birthplace", "his birthplace.")
    chat = fixed("Missing: x\nQuery: {Arnold Sommerfeld birthplace}")
    got = LlmQueryReformer(chat).reform("Where?", "advisor is Sommerfeld", [Triple("A", "r", "B")])
    assert got.query == "Arnold Sommerfeld birthplace" and [s.kind for s in got.steps] == ["llm_call"]
    assert "Clues so far: advisor is Sommerfeld\nKnowledge triplets:\n(A, r, B)" in chat.sent[0]
    bad = LlmQueryReformer(fixed("search the advisor")).reform("Where?", "advisor is Sommerfeld", [])
    assert bad.query == "Where? advisor is Sommerfeld"
    assert [s.kind for s in bad.steps] == ["llm_call", "error"] and "search the advisor" in bad.steps[1].message
    offline = OfflineQueryReformer().reform("Where?", "advisor is Sommerfeld", [])
    assert offline.query == "Where? advisor is Sommerfeld" and offline.steps == ()


def test_no_prompt_quotes_a_demo_pack_question_or_gold_answer():
    import json
    import re
    from pathlib import Path

    from engine.methods.tog2.llm import PROMPTS
    from paths import DEMO_PACK

    texts = {name: PROMPTS.load(name) for name in PROMPTS.names}
    assert set(texts) >= {"topic", "relations", "reason", "requery"}
    rows = [json.loads(line) for line in (Path(DEMO_PACK) / "questions.jsonl").read_text().splitlines() if line.strip()]
    for name, text in texts.items():
        for word in ("Heisenberg", "Sommerfeld", "Königsberg"):
            assert word not in text, (name, word)
        for row in rows:
            assert row["question"] not in text, (name, row["id"])
            for answer in (a for a in row["answers"] if len(a) > 3):
                quoted = rf"\{{\s*{re.escape(answer)}\s*\}}|(?:Answer|Output):\s*{re.escape(answer)}\b"
                assert not re.search(quoted, text, re.IGNORECASE), (name, row["id"], answer)


def test_reasoning_prompt_holds_triples_references_clue_and_the_last_round_note():
    prompt = build_reason_prompt("Where?", [Triple("A", "r", "B")], [HIT], "clue text", final=True)
    assert "(A, r, B)" in prompt and "[1] Arnold Sommerfeld" in prompt and "Clues so far: clue text" in prompt
    assert "last round" in prompt


def test_llm_reasoner_answers_on_yes_and_records_a_fallback_on_garbage_or_failure():
    yes = LlmReasoner(fixed("{Yes} {Königsberg}")).reason("Where?", [], [HIT], "", final=False)
    assert yes.sufficient and yes.reading.answer == "Königsberg" and yes.reading.citations == ("d1",)
    bad = LlmReasoner(fixed("blah")).reason("Where?", [], [HIT], "", final=False)
    assert not bad.sufficient and any(isinstance(s, ErrorStep) for s in bad.steps)
    down = LlmReasoner(FailingChat(RuntimeError("down"))).reason("Where?", [], [HIT], "", final=True)
    assert down.reading.refused and any(isinstance(s, LlmCallStep) for s in down.steps)


class ConfidentReader(Reader):
    def __init__(self, answer: str, confidence: float):
        self.answer, self.confidence = answer, confidence

    def read(self, question, evidence, facts=()):
        return Reading(self.answer, ("d1",), self.confidence)


def test_offline_reasoner_stops_only_above_the_sufficiency_threshold_or_at_the_last_round():
    weak = OfflineReasoner(ConfidentReader("Königsberg", 0.3), 0.45)
    assert not weak.reason("Where?", [Triple("A", "r", "B")], [HIT], "", final=False).sufficient
    assert "A r B" in weak.reason("Where?", [Triple("A", "r", "B")], [HIT], "", final=False).clue
    assert weak.reason("Where?", [], [HIT], "", final=True).sufficient
    assert OfflineReasoner(ConfidentReader("Königsberg", 0.9), 0.45).reason("Where?", [], [HIT], "", False).sufficient


def test_offline_reasoner_does_not_accept_an_answer_the_question_already_names():
    echo = OfflineReasoner(ConfidentReader("Alice Varga", 0.9), 0.45)
    assert not echo.reason("Where was Alice Varga's mentor born?", [], [HIT], "", final=False).sufficient
    assert echo.reason("Where was Alice Varga's mentor born?", [], [HIT], "", final=True).reading.refused
