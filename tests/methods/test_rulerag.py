"""RuleRAG end to end: the step sequence, rule-guided retrieval, the degrade path, an LLM run."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from engine.knowledge.records import Document, Pack, PackInfo, Rule, Triple
from engine.llm.base import llm_bundle
from engine.methods.base import RunContext, get_method
from engine.methods.common import distinct_docs
from engine.methods.rulerag import RuleRagParams, merge_hits
from engine.rules.matching import ScoredRule
from engine.runner import Workbench
from engine.trace import AnswerStep, DecisionStep, Hit, LlmCallStep, RetrievalStep, RulesMatchedStep
from fake_chat import ScriptedChat

TELLER = "Of which country was Edward Teller a citizen by birth?"


def kinds(trace):
    return [(s.kind, s.iteration) for s in trace.steps]


def test_rulerag_step_sequence_on_a_demo_rule_question(demo_workbench):
    trace = demo_workbench.ask(TELLER, "rulerag", question_id="q068")
    assert kinds(trace) == [("rules_matched", 0), ("retrieval", 0), ("retrieval", 1), ("retrieval", 1),
                            ("retrieval", 1), ("retrieval", 1), ("decision", 1), ("answer", 1)]
    matched, standard, *per_rule, merged, decision, answer = trace.steps
    assert isinstance(matched, RulesMatchedStep) and [r.id for r in matched.rules] == ["r01", "r03", "r02"]
    assert standard.query == TELLER and all(h.provenance == "question" for h in standard.hits)
    assert [s.query for s in per_rule][0].startswith(TELLER + " If X was born in city Z")
    assert all(h.provenance == "rule r01" for h in per_rule[0].hits)
    assert len(merged.hits) == 10 and [h.rank for h in merged.hits] == list(range(1, 11))
    assert all(p.startswith("rule r0") and ", rank " in p for h in merged.hits for p in h.provenance.split("; "))
    assert isinstance(decision, DecisionStep) and decision.title == "Answered by rule r01"
    assert decision.detail == "rule r01: Edward Teller → Budapest → Hungary"
    assert isinstance(answer, AnswerStep) and answer.text == "Hungary"
    assert answer.evidence == distinct_docs(merged.hits)
    assert {"doc-0076", "doc-0147"} <= set(answer.citations) | set(answer.evidence)


def test_rulerag_degrades_to_standard_rag_when_no_rule_matches(demo_workbench):
    trace = demo_workbench.ask("Where was Marie Curie born?", "rulerag")
    assert kinds(trace) == [("rules_matched", 0), ("decision", 0), ("retrieval", 1), ("answer", 1)]
    matched, decision, standard, answer = trace.steps
    assert matched.rules == () and matched.title.startswith("No rule above θ = 0.7")
    assert decision.action == "standard_rag" and "Standard RAG" in decision.title
    assert answer.text == "Warsaw" and answer.evidence == distinct_docs(standard.hits)


def test_rulerag_on_a_pack_without_rules_says_so(mini_pack, settings):
    workbench = Workbench(replace(mini_pack, rules=()), settings)
    trace = workbench.ask("Of which country was Alan Turing a citizen?", "rulerag", {"retriever": "bm25", "k": 3})
    assert trace.steps[0].title == "The pack has no rules"
    assert trace.steps[1].action == "standard_rag" and "no rules" in trace.steps[1].detail


def test_rulerag_params_reach_matching_and_retrieval(demo_workbench):
    trace = demo_workbench.ask(TELLER, "rulerag", {"top_n": 1, "k": 4, "retriever": "bm25", "query_rule": "brackets"})
    matched, standard, rule_step, merged = trace.steps[:4]
    assert len(matched.rules) == 1 and len(standard.hits) == 4 and rule_step.retriever == "bm25"
    assert rule_step.query.endswith("leads to [X, citizen of, Y]") and len(merged.hits) <= 4


def hit(chunk: str, score: float, rank: int) -> Hit:
    return Hit(doc_id=chunk.split("#")[0], chunk_id=chunk, title="", text="", score=score, rank=rank)


def test_merge_keeps_the_max_score_names_every_rule_and_cuts_to_k():
    r1, r2 = (ScoredRule(Rule(i, "h", ("b",), 0.5, 1), 0.9, 0.6, True) for i in ("r1", "r2"))
    merged = merge_hits([(r1, [hit("a#0", 0.5, 1), hit("b#0", 0.4, 2)]),
                         (r2, [hit("b#0", 0.9, 1), hit("c#0", 0.3, 2)])], k=2)
    assert [(h.chunk_id, h.score, h.rank) for h in merged] == [("b#0", 0.9, 1), ("a#0", 0.5, 2)]
    assert merged[0].provenance == "rule r1, rank 2; rule r2, rank 1"


# ---- rule-guided retrieval finds what the question alone misses -----------------------------------


@pytest.fixture(scope="module")
def hidden_premise_pack() -> Pack:
    docs = [
        Document("quill", "Ada Quill", "Ada Quill was a mathematician born in Brenford."),
        Document("brenford", "Brenford", "Brenford is a city located in the country of Valdoria."),
        *(Document(f"civic{i}", f"Citizenship law {i}",
                   f"Which country a person is a citizen of is decided by citizenship law number {i}; "
                   "a citizen of a country holds its passport.") for i in range(4)),
    ]
    triples = [Triple("Ada Quill", "born_in", "Brenford"), Triple("Brenford", "located_in", "Valdoria"),
               Triple("Bo Hale", "born_in", "Brenford"), Triple("Bo Hale", "citizen_of", "Valdoria")]
    rule = Rule("r1", "citizen_of", ("born_in", "located_in"), 1.0, 1,
                text="If X was born in city Z and Z is located in country Y, then X is a citizen of Y.")
    return Pack(PackInfo("hidden"), tuple(docs), tuple(triples), (rule,))


def test_rule_guided_retrieval_finds_the_premise_the_question_alone_misses(hidden_premise_pack, settings):
    workbench = Workbench(hidden_premise_pack, settings)
    trace = workbench.ask("Of which country was Ada Quill a citizen?", "rulerag", {"k": 2, "retriever": "bm25"})
    standard = next(s for s in trace.steps if isinstance(s, RetrievalStep) and s.iteration == 0)
    assert standard.title.startswith("Standard retrieval")
    merged = [s for s in trace.steps if isinstance(s, RetrievalStep)][-1]
    assert "brenford" not in distinct_docs(standard.hits)
    assert {"quill", "brenford"} <= set(distinct_docs(merged.hits))
    assert trace.answer.text == "Valdoria" and set(trace.answer.citations) == {"quill", "brenford"}


# ---- the LLM backend ------------------------------------------------------------------------------------


def test_rulerag_on_an_llm_backend_sends_the_five_block_prompt_and_parses_the_reply(demo_pack, demo_workbench):
    chat = ScriptedChat(lambda prompt: "Hungary." if "# Rules:" in prompt else "Answer: ?")
    ctx = RunContext(pack=demo_pack, retrieval=demo_workbench.retrieval, tools=llm_bundle(chat, demo_pack),
                     params=RuleRagParams(), cancel=threading.Event())
    steps = list(get_method("rulerag").run(TELLER, ctx))
    assert [s.kind for s in steps] == ["rules_matched", "retrieval", "retrieval", "retrieval", "retrieval",
                                       "retrieval", "llm_call", "decision", "answer"]
    call = next(s for s in steps if isinstance(s, LlmCallStep))
    assert call.role == "rule reader" and len(chat.sent) == 1
    prompt = chat.sent[0]
    for block in ("# Instruct:", "# Retrieved documents:", "# Rules:", "# Query:", "# Answer:"):
        assert block in prompt
    assert "use the following three rules" in prompt and "Rule Three:" in prompt
    assert steps[-2].title == "Answered by rule r01" and steps[-1].text == "Hungary"
    assert steps[-1].backend == "fake"
