"""RuleRAG end to end: the step sequence, rule-guided retrieval, the degrade path, an LLM run."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from engine.knowledge.records import Document, Pack, PackInfo, Rule, Triple
from engine.methods.base import RunContext, get_method
from engine.methods.common import distinct_docs
from engine.methods.rulerag.method import RuleRagParams, merge_hits
from engine.params import param_specs
from engine.rules.matching import ScoredRule
from engine.runner import Workbench
from engine.tools.bundle import llm_bundle
from engine.trace import AnswerStep, DecisionStep, Hit, LlmCallStep, RetrievalStep, RulesMatchedStep
from fake_chat import ScriptedChat

TELLER = "Of which country was Edward Teller a citizen by birth?"


def kinds(trace):
    return [(s.kind, s.iteration) for s in trace.steps]


def test_rulerag_step_sequence_on_a_demo_rule_question(demo_workbench):
    # the walk and its answer, whatever confidence the calibration puts on it
    trace = demo_workbench.ask(TELLER, "rulerag", {"min_confidence": 0.0}, question_id="q068")
    assert kinds(trace) == [("rules_matched", 0), ("retrieval", 0), ("retrieval", 1), ("retrieval", 1),
                            ("retrieval", 1), ("decision", 1), ("answer", 1)]
    matched, standard, *per_rule, merged, decision, answer = trace.steps
    # r02 (died in → located in) is not matched: the pack does not say where Stanford is, so its walk from
    # Edward Teller ends nowhere (issue 27: a rule whose walk cannot run is never picked)
    assert isinstance(matched, RulesMatchedStep) and [r.id for r in matched.rules] == ["r01", "r03"]
    assert standard.query == TELLER and all(h.provenance == "question" for h in standard.hits)
    assert per_rule[0].query == TELLER + " [X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]"
    assert all(h.provenance == "rule r01" for h in per_rule[0].hits)
    assert len(merged.hits) == 10 and [h.rank for h in merged.hits] == list(range(1, 11))
    assert all(p.startswith("rule r0") and ", rank " in p for h in merged.hits for p in h.provenance.split("; "))
    assert isinstance(decision, DecisionStep) and decision.title == "Answered by rule r01"
    assert decision.detail == "rule r01: Edward Teller → Budapest → Hungary"
    assert isinstance(answer, AnswerStep) and answer.text == "Hungary"
    assert answer.evidence == distinct_docs(merged.hits)
    assert {"doc-0076", "doc-0147"} <= set(answer.citations) | set(answer.evidence)


def test_rulerag_degrades_to_standard_rag_when_no_rule_matches(demo_workbench):
    trace = demo_workbench.ask("Where was Marie Curie born?", "rulerag", {"min_confidence": 0.0})
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
    trace = demo_workbench.ask(TELLER, "rulerag", {"top_n": 1, "k": 4, "retriever": "bm25"})
    matched, standard, rule_step, merged = trace.steps[:4]
    assert len(matched.rules) == 1 and len(standard.hits) == 4 and rule_step.retriever == "bm25"
    assert rule_step.query.endswith("leads to [X, citizen of, Y]") and len(merged.hits) <= 4


def test_the_bracket_query_form_is_the_default_and_the_sentence_form_an_option(demo_workbench):
    assert RuleRagParams().query_rule == "brackets"
    trace = demo_workbench.ask(TELLER, "rulerag", {"top_n": 1, "query_rule": "sentence"})
    assert trace.steps[2].query.startswith(TELLER + " If X was born in city Z")


def test_paper_matching_is_the_plain_cosine_and_the_masked_score_stays_the_default(demo_workbench):
    assert RuleRagParams().matching == "masked"
    help_text = next(s.help for s in param_specs(RuleRagParams) if s.name == "matching")
    assert "paper" in help_text and "0.7" in help_text and "default differs because" in help_text
    # with the small encoder the paper's plain cosine stays below θ = 0.7: RuleRAG degrades to Standard RAG
    paper = demo_workbench.ask(TELLER, "rulerag", {"matching": "paper"})
    assert paper.steps[0].rules == () and paper.steps[1].action == "standard_rag"
    loose = demo_workbench.ask(TELLER, "rulerag", {"matching": "paper", "theta": 0.0, "top_n": 3})
    assert [r.id for r in loose.steps[0].rules] and all(r.similarity < 0.7 for r in loose.steps[0].rules)


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
    trace = workbench.ask("Of which country was Ada Quill a citizen?", "rulerag",
                          {"k": 2, "retriever": "bm25", "min_confidence": 0.0})
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
                                       "llm_call", "decision", "answer"]
    call = next(s for s in steps if isinstance(s, LlmCallStep))
    assert call.role == "rule reader" and len(chat.sent) == 1
    prompt = chat.sent[0]
    for block in ("# Instruct:", "# Retrieved documents:", "# Rules:", "# Query:", "# Answer:"):
        assert block in prompt
    assert "use the following two rules" in prompt and "Rule Two:" in prompt and "Rule Three:" not in prompt
    assert steps[-2].title == "Answered by rule r01" and steps[-1].text == "Hungary"
    assert steps[-1].backend == "fake"


INSTRUCT = (
    "# Instruct: You answer a query from retrieved documents with the help of logical rules. Queries look like "
    "\"What does {subject} {relation}?\" and the documents state facts like \"{subject} {relation} {object}.\". "
    "A rule such as \"[X, r1, Z] and [Z, r2, Y] leads to [X, r, Y]\" says that when the documents state both "
    "facts on the left, the fact on the right holds too. Output only the missing {object}: a short entity name "
    "ending with a period, nothing else."
)


def _prompt_document(text: str) -> str:
    """A document as the Retrieved documents block runs it together: one line, 600 characters at most."""
    flat = " ".join(text.split())
    flat = flat if len(flat) <= 600 else flat[:600].rstrip() + " …"
    return flat if flat.endswith((".", "…", "!", "?")) else flat + "."


def test_rulerag_llm_path_step_sequence_and_the_exact_five_block_prompt(demo_pack, demo_workbench):
    chat = ScriptedChat(lambda prompt: "Hungary.")
    ctx = RunContext(pack=demo_pack, retrieval=demo_workbench.retrieval, tools=llm_bundle(chat, demo_pack),
                     params=RuleRagParams(), cancel=threading.Event())
    steps = list(get_method("rulerag").run(TELLER, ctx))
    assert [(s.kind, s.iteration) for s in steps] == [
        ("rules_matched", 0), ("retrieval", 0), ("retrieval", 1), ("retrieval", 1), ("retrieval", 1),
        ("llm_call", 1), ("decision", 1), ("answer", 1)]
    merged = steps[4]
    assert merged.title == "Merged: 10 chunks from 2 rules" and len(chat.sent) == 1
    documents = " ".join(_prompt_document(h.text) for h in merged.hits)
    assert chat.sent[0] == "\n".join([
        INSTRUCT,
        f"# Retrieved documents: The following documents are related to the query. {documents}",
        "# Rules: You can use the following two rules to answer the given query. "
        "Rule One: [X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]. "
        "Rule Two: [X, employer, Z1] and [Z1, located in, Z2] and [Z2, located in, Y] leads to [X, citizen of, Y].",
        f"# Query: {TELLER}",
        "# Answer:",
    ]) + "\n"
    assert steps[5].prompt == "[user]\n" + chat.sent[0]
    assert (steps[6].title, steps[7].text, steps[7].refused) == ("Answered by rule r01", "Hungary", False)


def test_rulerag_llm_garbage_reply_is_an_error_step_and_a_refusal(demo_pack, demo_workbench):
    chat = ScriptedChat(lambda prompt: "### ### ###")
    ctx = RunContext(pack=demo_pack, retrieval=demo_workbench.retrieval, tools=llm_bundle(chat, demo_pack),
                     params=RuleRagParams(), cancel=threading.Event())
    steps = list(get_method("rulerag").run(TELLER, ctx))
    assert [s.kind for s in steps[-4:]] == ["llm_call", "error", "decision", "answer"]
    assert "### ### ###" in steps[-3].message
    assert steps[-1].refused is True and steps[-1].text != "### ### ###"


def test_an_adapter_on_a_backend_without_weights_is_a_decision_step(demo_pack, demo_workbench):
    chat = ScriptedChat(lambda prompt: "Hungary.")
    for tools in (llm_bundle(chat, demo_pack), demo_workbench.tools):
        ctx = RunContext(pack=demo_pack, retrieval=demo_workbench.retrieval, tools=tools,
                         params=RuleRagParams(adapter="/no/such/adapter"), cancel=threading.Event())
        steps = list(get_method("rulerag").run(TELLER, ctx))
        note = next(s for s in steps if isinstance(s, DecisionStep) and s.action == "no_adapter")
        assert "needs the hf backend" in note.detail and note.iteration == 1
        assert steps[-1].text == "Hungary"
