"""ToG-2's LLM tools against what a weak real model writes (issue 23): a bare verdict, the demo's answer or
query copied, the format's placeholders echoed; each role's stops and budget; the paper's call bound recorded."""

from __future__ import annotations

import pytest

from engine.knowledge.records import Triple
from engine.methods.tog2.llm import (
    PROMPTS,
    REASON_SENTENCES,
    LlmQueryReformer,
    LlmReasoner,
    LlmRelationPruner,
    LlmTopicPruner,
    parse_reason_output,
    parse_relation_output,
)
from engine.methods.tog2.method import Tog2Params, call_bound
from engine.params import build_params
from engine.trace import DecisionStep, ErrorStep, Hit
from fake_chat import ScriptedChat, fixed
from methods.tog2.test_method import MENTOR, by_prompt_type, llm_run, never_sure, two_hop_pack

HIT = Hit("d1", "d1#0", "Arnold Sommerfeld", "Arnold Sommerfeld was born in Königsberg.", 0.8, 1)
ASKED = "Where was Arnold Sommerfeld born?"
RELATIONS = {"Werner Heisenberg": ["born_in", "doctoral_advisor", "~doctoral_advisor"]}


@pytest.mark.parametrize("text, expected", [
    ("No", (False, "", True)), ("{No}.", (False, "", True)), (" no! ", (False, "", True)),
    ("Yes", (True, "", True)),
])
def test_a_reply_that_is_the_verdict_word_alone_is_that_verdict(text, expected):
    assert parse_reason_output(text) == expected


def test_a_bare_no_continues_without_an_error_and_a_bare_yes_is_no_answer():
    no = LlmReasoner(fixed("No")).reason(ASKED, [], [HIT], "", final=False)
    assert not no.sufficient and no.clue == "" and not any(isinstance(s, ErrorStep) for s in no.steps)
    yes = LlmReasoner(fixed("Yes")).reason(ASKED, [], [HIT], "", final=False)
    assert not yes.sufficient and any(isinstance(s, ErrorStep) for s in yes.steps)


def test_the_demos_answer_copied_is_read_as_no_with_an_error_step():
    out = LlmReasoner(fixed("{Yes} {De Smet}")).reason(ASKED, [], [HIT], "", final=True)
    assert not out.sufficient and out.reading.refused
    error = next(s for s in out.steps if isinstance(s, ErrorStep))
    assert "demo" in error.message and "De Smet" in error.message


def test_a_yes_echoing_the_question_is_no_answer_and_a_sentence_is_cut_to_its_short_answer():
    echo = LlmReasoner(fixed(f"{{Yes}} {{{ASKED.rstrip('?')}}}")).reason(ASKED, [], [HIT], "", final=False)
    assert not echo.sufficient and any(isinstance(s, ErrorStep) and "the question" in s.message for s in echo.steps)
    sentence = LlmReasoner(fixed("{Yes} {Arnold Sommerfeld was born in Königsberg}")).reason(
        ASKED, [], [HIT], "", final=False)
    assert sentence.sufficient and sentence.reading.answer == "Königsberg" and sentence.reading.confidence == 0.2
    assert any(isinstance(s, ErrorStep) and "short answer" in s.message for s in sentence.steps)


def test_relation_lines_without_braces_are_read_and_the_formats_placeholders_are_not():
    reply = "1. doctoral_advisor (Score: 8): the advisor\n2. {born in (Score: 3)}: maybe"
    scores = {s.relation: s.score for s in parse_relation_output(reply, RELATIONS)}
    assert scores == {"doctoral_advisor": 8.0, "born_in": 3.0}
    # SmolLM2-135M echoed the format line's placeholders for every entity
    assert parse_relation_output("1. {<relation> (Score: 4)}: the country\n2. {name}", RELATIONS) == []


def test_the_relation_prompt_shows_no_placeholder_to_copy():
    assert "<" not in PROMPTS.load("relations") and "(Score:" in PROMPTS.load("relations")


def test_relation_prune_budget_grows_with_the_entities_listed_and_width_up_to_the_cap():
    chat = ScriptedChat(lambda _prompt: "zzz")
    for entities in (1, 2, 5):
        relations = {f"Entity{n}": ["born_in", "employer"] for n in range(entities)}
        LlmRelationPruner(chat).prune("Where?", "", {}, relations, 3, "combined")
    assert [s.max_new_tokens for s in chat.settings_sent] == [8 + 3 * 24, 2 * (8 + 3 * 24), 192]


def test_every_role_stops_where_its_prompt_would_start_a_new_block():
    from engine.graph.linking import EntityLink

    chat = ScriptedChat(lambda _prompt: "zzz")
    links = [EntityLink(name, name, "exact", 1.0) for name in ("A", "B", "C")]
    LlmTopicPruner(chat).prune("Where?", links, 3)
    LlmRelationPruner(chat).prune("Where?", "", {}, RELATIONS, 3, "combined")
    LlmReasoner(chat).reason("Where?", [], [HIT], "", final=False)
    LlmQueryReformer(chat).reform("Where?", "", [])
    assert len(chat.settings_sent) == 4 and all("\nQuestion:" in s.stop for s in chat.settings_sent)


def test_a_requery_copying_the_demos_query_falls_back_to_question_and_clue():
    got = LlmQueryReformer(fixed("Missing: x\nQuery: {places Laura Ingalls Wilder lived}")).reform(
        ASKED, "advisor is Sommerfeld", [Triple("A", "r", "B")])
    assert got.query == f"{ASKED} advisor is Sommerfeld"
    error = next(s for s in got.steps if isinstance(s, ErrorStep))
    assert "demo" in error.message and "Laura Ingalls Wilder" in error.message


def test_the_call_bound_is_the_papers():
    assert call_bound(build_params(Tog2Params, {})) == 2 * 3 + 1
    assert call_bound(build_params(Tog2Params, {"prune_mode": "per-entity"})) == 3 * 3 + 3 + 1
    assert call_bound(build_params(Tog2Params, {"depth": 5, "width": 2, "prune_mode": "per-entity"})) == 2 * 5 + 5 + 1


def test_the_decision_ending_an_llm_run_records_its_calls_against_the_bound(settings):
    trace = llm_run(two_hop_pack(), settings, by_prompt_type, question="Where was Alice Varga's mentor born, "
                    "Dorvik or Carlow?")
    ending = trace.steps[-2]
    assert isinstance(ending, DecisionStep) and ending.action == "answer"
    assert ending.detail.endswith("LLM calls: 5 relation prune + reasoning, within the paper's bound 2D+1 = 7 "
                                  "(besides: 2 query re-formulation, 1 topic prune)")
    capped = llm_run(two_hop_pack(), settings, never_sure, question=MENTOR)
    assert "LLM calls: 7 relation prune + reasoning, within the paper's bound 2D+1 = 7" in capped.steps[-2].detail


def test_an_offline_run_records_no_llm_calls(settings):
    from engine.runner import Workbench

    trace = Workbench(two_hop_pack(), settings).ask(MENTOR, "tog2")
    assert not any("LLM calls" in s.detail for s in trace.steps if isinstance(s, DecisionStep))


class KeywordEmbedder:
    """Scores a text by whether it says 'born' (the question's word): enough to rank sentences."""

    def encode_queries(self, texts):
        import numpy as np

        return np.array([[1.0 if "born" in t else 0.0, 0.1] for t in texts])


def test_with_an_embedder_the_references_are_the_best_sentences_in_their_own_order():
    from engine.methods.tog2.llm import best_sentences

    filler = " ".join(f"He wrote paper {n}." for n in range(6))
    first = Hit("d1", "d1#0", "Arnold Sommerfeld", f"{filler} Sommerfeld was born in Königsberg. He taught.", 0.9, 1)
    second = Hit("d2", "d2#0", "Munich", f"Munich is a city. {filler}", 0.8, 2)
    third = Hit("d3", "d3#0", "Walther", "Walther was born in Riga.", 0.7, 3)
    shown = best_sentences(ASKED, [first, second, third], KeywordEmbedder(), k=2)
    assert [(h.doc_id, h.text) for h in shown] == [("d1", "Sommerfeld was born in Königsberg."),
                                                    ("d3", "Walther was born in Riga.")]
    assert best_sentences(ASKED, [third], KeywordEmbedder(), k=2) == (third,)  # few sentences: all stay
    chat = ScriptedChat(lambda _prompt: "{Yes} {Königsberg}")
    out = LlmReasoner(chat, embedder=KeywordEmbedder()).reason(ASKED, [], [first, second, third], "", final=False)
    references = chat.sent[0].rsplit("References:\n", 1)[1].split("\nAnswer:")[0]
    assert "Sommerfeld was born in Königsberg." in references and "Walther was born in Riga." in references
    assert references.count(".") == REASON_SENTENCES  # of the 16 sentences in the three chunks
    assert out.reading.answer == "Königsberg" and out.reading.citations == ("d1",)


def test_a_yes_naming_the_questions_own_entity_is_read_as_no_unless_it_was_a_choice():
    named = LlmReasoner(fixed("{Yes} {Arnold Sommerfeld}")).reason(ASKED, [], [HIT], "", final=False)
    assert not named.sufficient and any(isinstance(s, ErrorStep) and "named by the question" in s.message
                                        for s in named.steps)
    choice = LlmReasoner(fixed("{Yes} {Königsberg}")).reason("Königsberg or Riga?", [], [HIT], "", final=False)
    assert choice.sufficient and choice.reading.answer == "Königsberg"


def test_a_yes_whose_answer_is_a_question_is_read_as_no():
    out = LlmReasoner(fixed("{Yes} {Which river flows through Turin?}")).reason(ASKED, [], [HIT], "", final=True)
    assert not out.sufficient and any(isinstance(s, ErrorStep) and "is a question" in s.message for s in out.steps)
