"""The rule-guided reader: the five-block prompt and its tolerant parse, and the symbolic offline twin."""

from __future__ import annotations

from engine.errors import BackendError
from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.methods.rulerag.llm import LlmRuleReader, build_rule_prompt
from engine.methods.rulerag.offline import OfflineRuleReader
from engine.rules.application import apply_rules
from engine.rules.matching import ScoredRule
from engine.tools.base import IDK, Reader, Reading
from engine.trace import ErrorStep, Hit, LlmCallStep
from fake_chat import AttentiveChat, FailingChat, ScriptedChat, fixed

KG = KnowledgeGraph([
    Triple("Edward Teller", "born_in", "Budapest"), Triple("Budapest", "located_in", "Hungary"),
    Triple("Edward Teller", "died_in", "Stanford"), Triple("Stanford", "located_in", "United States"),
])
BIRTH = ScoredRule(Rule("r01", "citizen_of", ("born_in", "located_in"), 0.469, 15), 0.88, 0.63, True)
DEATH = ScoredRule(Rule("r02", "citizen_of", ("died_in", "located_in"), 0.653, 32), 0.80, 0.55, True)
QUESTION = "Of which country was Edward Teller a citizen by birth?"


def hit(doc_id: str, title: str, text: str, rank: int = 1) -> Hit:
    return Hit(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=title, text=text, score=1.0, rank=rank)


TELLER = hit("teller", "Edward Teller", "Edward Teller was born in Budapest in 1908. He died in Stanford")
BUDAPEST = hit("budapest", "Budapest", "Budapest is the capital of Hungary.", 2)
MARS = hit("mars", "Mars", "Mars has two moons.", 3)
EVIDENCE = (MARS, TELLER, BUDAPEST)


class StubReader(Reader):
    def read(self, question, evidence, facts=()):
        return Reading("extractive", (evidence[0].doc_id,) if evidence else (), 0.4, rationale="stub")


# ---- prompt and parser as a pair ----------------------------------------------------------------------


def test_the_prompt_has_the_five_labelled_blocks_in_order():
    prompt = build_rule_prompt(QUESTION, EVIDENCE, [BIRTH, DEATH])
    labels = ["# Instruct:", "# Retrieved documents:", "# Rules:", "# Query:", "# Answer:"]
    positions = [prompt.index(label) for label in labels]
    assert positions == sorted(positions) and prompt.rstrip().endswith("# Answer:")
    assert "use the following two rules" in prompt
    assert ("Rule One: [X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]. "
            "Rule Two: [X, died in, Z]") in prompt
    documents = prompt.split("# Retrieved documents:")[1].split("# Rules:")[0]
    assert "\n" not in documents.strip() and "Mars has two moons. Edward Teller was born" in documents
    assert f"# Query: {QUESTION}" in prompt and "{object}" in prompt  # the paper's placeholders stay literal


def test_the_prompt_says_so_when_there_are_no_documents_or_one_rule():
    prompt = build_rule_prompt(QUESTION, (), [BIRTH])
    assert "(no documents were retrieved)" in prompt
    assert "use the following rule to answer" in prompt and "Rule One:" in prompt


def test_llm_reader_parses_the_entity_and_strips_the_period():
    chat = fixed("Hungary.")
    result = LlmRuleReader(chat, KG).read(QUESTION, EVIDENCE, [BIRTH, DEATH])
    assert (result.reading.answer, result.reading.refused) == ("Hungary", False)
    assert result.rule_id == "r01" and result.path == ("Edward Teller", "Budapest", "Hungary")
    assert result.reading.citations == ("teller", "budapest")
    assert [s.kind for s in result.reading.steps] == ["llm_call"]
    assert "# Rules:" in chat.sent[0]


def test_llm_reader_tolerates_a_labelled_or_chatty_reply():
    result = LlmRuleReader(fixed("\n\nAnswer: United States.\nBecause he died there."), KG).read(
        QUESTION, EVIDENCE, [BIRTH, DEATH])
    assert result.reading.answer == "United States" and result.rule_id == "r02"


def test_llm_reader_without_a_rule_path_still_answers_and_cites_docs_naming_the_answer():
    result = LlmRuleReader(fixed("Mars."), KG).read(QUESTION, EVIDENCE, [BIRTH])
    assert (result.reading.answer, result.rule_id, result.reading.citations) == ("Mars", "", ("mars",))


def test_llm_reader_refuses_on_empty_output_with_an_error_step():
    result = LlmRuleReader(fixed("   "), KG).read(QUESTION, EVIDENCE, [BIRTH])
    assert result.reading.refused and result.reading.answer == IDK
    assert any(isinstance(s, ErrorStep) for s in result.reading.steps)


def test_llm_reader_never_raises_when_the_model_fails():
    result = LlmRuleReader(FailingChat(BackendError("server down")), KG).read(QUESTION, EVIDENCE, [BIRTH])
    assert result.reading.refused
    assert [s.kind for s in result.reading.steps] == ["llm_call", "error"]


def test_llm_reader_sends_one_call_with_the_prompt_it_built():
    chat = ScriptedChat(lambda prompt: "Hungary." if "Rule One" in prompt else "?")
    result = LlmRuleReader(chat, KG).read(QUESTION, EVIDENCE, [BIRTH])
    call = result.reading.steps[0]
    assert isinstance(call, LlmCallStep) and call.role == "rule reader" and len(chat.sent) == 1
    assert chat.sent[0] == build_rule_prompt(QUESTION, EVIDENCE, [BIRTH])


# ---- offline ----------------------------------------------------------------------------------------


def test_offline_reader_applies_the_best_matched_rule_and_cites_the_path_docs():
    result = OfflineRuleReader(KG, StubReader()).read(QUESTION, EVIDENCE, [BIRTH, DEATH])
    assert (result.reading.answer, result.rule_id) == ("Hungary", "r01")
    assert result.reading.citations == ("teller", "budapest")
    assert result.reading.rationale == "rule r01: Edward Teller → Budapest → Hungary"
    assert 0.5 < result.reading.confidence <= 1.0


def test_offline_reader_falls_back_to_the_extractive_reader_when_no_rule_applies():
    result = OfflineRuleReader(KG, StubReader()).read("Of which country was Marie Curie a citizen?", EVIDENCE, [BIRTH])
    assert (result.reading.answer, result.rule_id) == ("extractive", "")
    assert result.reading.citations == ("mars",) and "no matched rule applies" in result.reading.rationale


def test_offline_reader_shows_each_bound_a_rule_walk_hit_as_an_error_step(monkeypatch):
    # issue 15: a walk the time limit cuts adds no candidate, and the trace says so
    monkeypatch.setattr("engine.methods.rulerag.offline.apply_rules",
                        lambda kg, entity, rules: apply_rules(kg, entity, rules, seconds=-1.0))
    result = OfflineRuleReader(KG, StubReader()).read(QUESTION, EVIDENCE, [BIRTH])
    assert (result.reading.answer, result.rule_id) == ("extractive", "")
    assert [(s.kind, s.message) for s in result.reading.steps] == [
        ("error", "rule r01: stopped after the -1 s time limit at step 1 of 2; it adds no candidate")]


# ---- output that does not parse; attention segments -----------------------------------------------------


def test_output_that_does_not_parse_is_an_error_step_with_the_raw_text_never_the_answer():
    rambling = ("The documents talk about many people and cities, and it is hard to say which one the query "
                "wants, so here is a long sentence instead of an entity")
    for raw in (rambling, "### ###", "Answer: ?"):
        result = LlmRuleReader(fixed(raw), KG).read(QUESTION, EVIDENCE, [BIRTH])
        reading = result.reading
        assert reading.refused is True and reading.answer == IDK and result.rule_id == "", raw
        assert [s.kind for s in reading.steps] == ["llm_call", "error"], raw
        error = reading.steps[1]
        assert isinstance(error, ErrorStep) and error.recoverable and raw in error.message
        assert "does not parse" in error.message


def test_a_short_entity_still_parses_after_the_garbage_check():
    result = LlmRuleReader(fixed("Answer: Budapest, Hungary."), KG).read(QUESTION, EVIDENCE, [BIRTH])
    assert result.reading.refused is False and result.reading.answer == "Budapest, Hungary"


def test_the_reader_call_passes_a_segment_for_each_document_each_rule_and_the_question():
    chat = AttentiveChat(lambda prompt: "Hungary.")
    result = LlmRuleReader(chat, KG).read(QUESTION, EVIDENCE, [BIRTH, DEATH])
    assert [s.kind for s in result.reading.steps] == ["llm_call", "attention"]
    (segments,) = chat.segments
    prompt = chat.sent[0]
    assert [(s.label, s.kind) for s in segments] == [
        ("doc 1", "document"), ("doc 2", "document"), ("doc 3", "document"),
        ("rule r01", "rule"), ("rule r02", "rule"), ("question", "question")]
    text = {s.label: prompt[s.start:s.end] for s in segments}
    assert text["doc 1"] == "Mars has two moons." and text["doc 3"] == "Budapest is the capital of Hungary."
    assert text["doc 2"] == "Edward Teller was born in Budapest in 1908. He died in Stanford."
    assert text["rule r01"] == "[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]"
    assert text["rule r02"] == "[X, died in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]"
    assert text["question"] == QUESTION and segments[-1].start > prompt.index("# Query:")
    rules_block = prompt.index("# Rules:")
    assert all(rules_block < s.start < prompt.index("# Query:") for s in segments if s.kind == "rule")
