"""RAS end to end: offline two-hop bridge, the demo pack, and a scripted LLM path."""

from __future__ import annotations

from engine.knowledge.records import Document, Pack, PackInfo, Triple
from engine.runner import Workbench
from engine.trace import AnswerStep, DecisionStep, ErrorStep, GraphDeltaStep, Hit, LlmCallStep, RetrievalStep

MENTOR = "Where was Alice Varga's doctoral advisor born?"


def two_hop_pack() -> Pack:
    docs = (
        Document("h1", "Alice Varga", "Alice Varga is a chemist. Her doctoral advisor was Bruno Kessler.",
                 entities=("Alice Varga", "Bruno Kessler")),
        Document("h2", "Bruno Kessler", "Bruno Kessler is a physicist. He was born in Carlow.",
                 entities=("Bruno Kessler", "Carlow")),
        Document("h3", "Dorvik", "Dorvik is a fishing town in the north, famous for its harbour.",
                 entities=("Dorvik",)),
        Document("h4", "Carlow", "Carlow is a small market town on the river Barrow.", entities=("Carlow",)),
    )
    triples = (Triple("Alice Varga", "doctoral_advisor", "Bruno Kessler"), Triple("Bruno Kessler", "born_in", "Carlow"))
    return Pack(PackInfo("two-hop"), docs, triples)


def test_two_hop_second_subquery_uses_the_bridge(settings):
    trace = Workbench(two_hop_pack(), settings).ask(MENTOR, "ras", {"k": 1})
    queries = [s.query for s in trace.steps if isinstance(s, RetrievalStep)]
    assert queries[0] == MENTOR
    assert len(queries) >= 2 and "Bruno Kessler" in queries[1]
    second = [s for s in trace.steps if isinstance(s, RetrievalStep)][1]
    assert "h2" in {h.doc_id for h in second.hits if "already read" not in h.provenance}
    assert trace.answer.text == "Carlow"


def test_demo_sequence_offline(demo_workbench):
    q = demo_workbench.pack.questions[0]
    trace = demo_workbench.ask(q.question, "ras")
    kinds = [s.kind for s in trace.steps]
    assert kinds[0] == "decision" and kinds[1] == "retrieval" and kinds[2] == "graph_delta"
    assert isinstance(trace.steps[-1], AnswerStep) and trace.answer.evidence
    deltas = [s for s in trace.steps if isinstance(s, GraphDeltaStep)]
    rounds = {s.iteration for s in trace.steps if isinstance(s, RetrievalStep)}
    assert len(deltas) == len(rounds) <= 5
    *_, last, source = [s for s in trace.steps if isinstance(s, DecisionStep)]
    assert last.action in ("sufficient", "cap")
    if last.action == "cap":
        assert "cap" in last.detail
    assert source.action in ("graph_answer", "chunk_answer")  # the trace says what the answer was read from


def test_the_iteration_cap_defaults_to_the_papers_five_and_stays_bounded():
    from engine.methods.ras.method import RasParams
    from engine.params import param_specs

    spec = next(p for p in param_specs(RasParams) if p.name == "max_iterations")
    assert RasParams().max_iterations == 5 and (spec.min, spec.max) == (1, 10)


def test_a_correct_offline_answer_to_a_demo_multi_hop_question_is_not_a_refusal(demo_workbench):
    q = next(q for q in demo_workbench.pack.questions if q.id == "q014")
    assert q.type == "multi_hop"
    # RAS itself must not refuse its right answer; whether the default policy keeps it is the calibration's
    # figure (bench/offline_quality.py), not one demo question's
    trace = demo_workbench.ask(q.question, "ras", {"min_confidence": 0.0})
    assert trace.answer.text in q.answers
    assert trace.answer.refused is False and trace.steps[-1].title == "Answer"


def test_a_reading_refuses_only_with_a_bool():
    import pytest

    from engine.tools.base import Reading

    with pytest.raises(TypeError):
        Reading("Carlow", refused="the answer rests on h2")  # type: ignore[arg-type]


def test_cap_is_announced(demo_workbench):
    trace = demo_workbench.ask("Who supervised the doctoral research of the discoverer of radium?", "ras",
                               {"max_iterations": 1})
    decision = [s for s in trace.steps if isinstance(s, DecisionStep)][-2]  # the last says where the answer came from
    assert decision.action == "cap" and "cap" in decision.detail.lower()


def test_offline_answers_come_from_the_query_graph_first_and_the_trace_says_so(settings):
    trace = Workbench(two_hop_pack(), settings).ask(MENTOR, "ras", {"k": 1, "min_confidence": 0.0})
    source = [s for s in trace.steps if isinstance(s, DecisionStep)][-1]
    assert source.action == "graph_answer" and "triples" in source.detail
    assert trace.answer.text == "Carlow" and trace.answer.citations  # the triples' documents are cited


def test_without_a_graph_answer_the_chunks_are_read_and_the_trace_says_why(settings):
    from engine.methods.ras.offline import OfflineAnswerer
    from engine.methods.ras.query_graph import QueryGraph

    bench = Workbench(two_hop_pack(), settings)
    hits = tuple(bench.retrieval.search(MENTOR, k=3))
    answerer = OfflineAnswerer(bench.tools.reader, bench.tools.kg, 0.45)
    reading = answerer.answer(MENTOR, [], QueryGraph(), hits)
    source = reading.steps[-1]
    assert source.action == "chunk_answer" and "the query graph is empty" in source.detail


# ---- offline decomposition -------------------------------------------------------------------------


def three_hop_pack() -> Pack:
    docs = (
        Document("n1", "Mira Solberg", "Mira Solberg is a chemist who works on catalysts. Her nephew is Tobias Renn, "
                 "an engineer.", entities=("Mira Solberg", "Tobias Renn")),
        Document("n2", "Tobias Renn", "Tobias Renn is an engineer. He was born in Velmark.",
                 entities=("Tobias Renn", "Velmark")),
        Document("n3", "Velmark", "Velmark is a harbour city in the country of Ostland.",
                 entities=("Velmark", "Ostland")),
        Document("n4", "Ostland", "Ostland is a small country on the northern sea.", entities=("Ostland",)),
        Document("n5", "Catalysts", "Catalysts speed up chemical reactions without being used up.", entities=()),
    )
    triples = (Triple("Mira Solberg", "nephew", "Tobias Renn"), Triple("Tobias Renn", "born_in", "Velmark"),
               Triple("Velmark", "country", "Ostland"))
    return Pack(PackInfo("three-hop"), docs, triples)


def test_offline_planner_answers_the_innermost_phrase_first_then_rewrites_the_question(settings):
    question = "In which country is the city where Mira Solberg's nephew was born?"
    trace = Workbench(three_hop_pack(), settings).ask(question, "ras", {"k": 1})
    queries = [s.query for s in trace.steps if isinstance(s, RetrievalStep)]
    assert queries[0] == question
    # every later sub-query carries a bridge found earlier, never the phrase it replaced
    assert any("Tobias Renn" in q for q in queries[1:]) and all("nephew" not in q for q in queries[1:])
    assert trace.answer.text == "Ostland"
    decisions = " ".join(s.detail for s in trace.steps if isinstance(s, DecisionStep))
    assert "Tobias Renn" in decisions
    # the evidence list starts with the documents the answer and its bridges were read from
    assert set(trace.answer.evidence[:3]) >= {"n2", "n3"}


def test_a_phrase_answered_from_chunks_retrieved_for_another_question_needs_more_confidence(settings):
    from engine.methods.ras.offline import BRIDGE_CONFIDENCE, resolve
    from engine.methods.ras.query_graph import QueryGraph
    from engine.methods.ras.tools import Round
    from engine.tools.base import Reading

    class Fixed:
        def read(self, question, evidence, facts=()):
            return Reading("Tobias Renn", ("n1",), BRIDGE_CONFIDENCE + 0.05)

    pack = three_hop_pack()
    from engine.graph.kg import KnowledgeGraph
    kg = KnowledgeGraph(pack.triples, [d.title for d in pack.documents])
    question = "Where was Mira Solberg's nephew born?"
    unasked = resolve(question, Fixed(), kg, QueryGraph(), (), (), trust=0.6)
    assert unasked.pending is not None and not unasked.bridges
    hit = Hit(doc_id="n1", chunk_id="n1#0", title="Mira Solberg", text="", score=1.0, rank=1, retriever="dense")
    asked = resolve(question, Fixed(), kg, QueryGraph(), (Round(unasked.pending.sub_question, (), (hit,)),),
                    (hit,), trust=0.6)
    assert asked.question == "Where was Tobias Renn born?" and asked.pending is None


def test_the_run_reads_each_question_over_the_same_chunks_once(settings, monkeypatch):
    from engine.tools.offline_reader import OfflineReader

    calls: list[tuple[str, tuple[str, ...]]] = []
    original = OfflineReader.read

    def counting(self, question, evidence, facts=()):
        calls.append((question, tuple(h.chunk_id for h in evidence)))
        return original(self, question, evidence, facts)

    monkeypatch.setattr(OfflineReader, "read", counting)
    Workbench(three_hop_pack(), settings).ask("In which country is the city where Mira Solberg's nephew was born?",
                                              "ras", {"k": 1})
    assert calls and len(calls) == len(set(calls))


# ---- scripted LLM ----------------------------------------------------------------------------------


def llm_run(pack: Pack, settings, reply, question: str = MENTOR, chat_type=None, **params):
    from engine.methods.base import RunContext, get_method
    from engine.methods.ras.method import RasParams
    from engine.params import build_params
    from engine.retrieval.suite import open_retrieval
    from engine.tools.bundle import llm_bundle
    from engine.trace import Trace
    from fake_chat import ScriptedChat

    chat = (chat_type or ScriptedChat)(reply)
    ctx = RunContext(pack=pack, retrieval=open_retrieval(pack, settings), tools=llm_bundle(chat, pack),
                     params=build_params(RasParams, params))
    steps = tuple(get_method("ras").run(question, ctx))
    return Trace(id="t", question=question, method="ras", backend="fake", model="scripted",
                 pack="p").with_steps(steps, 0), chat


def rounds_in(prompt: str) -> int:
    """Sub-queries in the prompt's own input (the examples above it quote [PREV_SUBQ] lines too)."""
    return prompt.split("Now your turn:")[-1].count("[PREV_SUBQ]")


def two_turns(prompt: str) -> str:
    """Replies by prompt type: plan two rounds then [SUFFICIENT]; triples from each chunk; the answer."""
    if prompt.startswith("You are a planner"):
        return ("[SUBQ] Who was Alice Varga's doctoral advisor?", "[SUBQ] Where was Bruno Kessler born?",
                "[SUFFICIENT]")[min(rounds_in(prompt), 2)]
    if prompt.startswith("Convert the following text"):
        if "Bruno Kessler is a physicist" in prompt:
            return "(S> Bruno Kessler| P> born in| O> Carlow)"
        if "Alice Varga is a chemist" in prompt:
            return "(S> Alice Varga| P> doctoral advisor| O> Bruno Kessler)"
        return "nothing here"
    return "Carlow" if "(S> Bruno Kessler| P> born in| O> Carlow)" in prompt.split("Now your turn:")[-1] \
        else "unknown"


def test_a_scripted_llm_run_yields_the_exact_step_sequence_and_prompts(settings):
    trace, chat = llm_run(two_hop_pack(), settings, two_turns, k=1)
    assert [(s.kind, s.iteration) for s in trace.steps] == [
        ("llm_call", 0), ("decision", 0),                                          # C1: plan; q_0 = Q
        ("retrieval", 1), ("llm_call", 1), ("graph_delta", 1),                     # round 1: C2, C3, §2.5
        ("llm_call", 1), ("decision", 1),                                          # C5: [SUBQ] q_1
        ("retrieval", 2), ("llm_call", 2), ("graph_delta", 2),                     # round 2
        ("llm_call", 2), ("decision", 2),                                          # C5: [SUFFICIENT]
        ("llm_call", 2), ("answer", 2),                                            # C6
    ]
    assert [s.role for s in trace.steps if isinstance(s, LlmCallStep)] == [
        "planner", "text-to-triples", "planner", "text-to-triples", "planner", "answerer"]
    assert [s.query for s in trace.steps if isinstance(s, RetrievalStep)] == [MENTOR, "Where was Bruno Kessler born?"]
    assert [s.action for s in trace.steps if isinstance(s, DecisionStep)] == ["subq", "subq", "sufficient"]
    assert trace.answer.text == "Carlow" and not trace.answer.refused

    advisor = "['(S> Alice Varga| P> doctoral advisor| O> Bruno Kessler)']"
    born = "['(S> Bruno Kessler| P> born in| O> Carlow)']"
    plan0, t2t1, plan1, _, plan2, answer = chat.sent
    assert plan0.endswith(f"Now your turn:\nInput:\nQuestion: {MENTOR}\nOutput:\n")
    assert t2t1.endswith("Input:\nAlice Varga. Alice Varga is a chemist. Her doctoral advisor was Bruno Kessler."
                         "\nOutput:\n")
    # the planner sees the Sonnet prompt's history tags (spec §2.2), round by round
    assert plan1.endswith(f"Input:\n[PREV_SUBQ] {MENTOR}\n[PREV_GRAPH_INFO] {advisor}\nQuestion: {MENTOR}\nOutput:\n")
    assert f"[PREV_SUBQ] Where was Bruno Kessler born?\n[PREV_GRAPH_INFO] {born}\nQuestion: {MENTOR}" in plan2
    # the answerer sees the paper's history block H (spec §2.1): [SUBQ] q_j / Retrieved Graph Information: g_j
    assert answer.startswith("You are an answerer")
    assert answer.endswith(f"Input:\n[SUBQ] {MENTOR}\nRetrieved Graph Information: {advisor}\n"
                           f"[SUBQ] Where was Bruno Kessler born?\nRetrieved Graph Information: {born}\n"
                           f"Question: {MENTOR}\nOutput:\n")


def test_a_malformed_triple_is_dropped_alone_and_reported_with_the_raw_output(settings):
    def broken(prompt: str) -> str:
        if prompt.startswith("Convert the following text") and "Alice Varga is a chemist" in prompt:
            return "(S> Alice Varga| P> doctoral advisor| O> Bruno Kessler), (S> broken"
        return two_turns(prompt)

    trace, _ = llm_run(two_hop_pack(), settings, broken, k=1)
    errors = [s for s in trace.steps if isinstance(s, ErrorStep)]
    assert len(errors) == 1 and "1 malformed" in errors[0].message and "(S> broken" in errors[0].message
    assert trace.answer.text == "Carlow"


def test_every_llm_call_passes_segments_and_gets_attention(settings):
    from engine.trace import AttentionStep
    from fake_chat import AttentiveChat

    trace, chat = llm_run(two_hop_pack(), settings, two_turns, k=1, chat_type=AttentiveChat)
    calls = [i for i, s in enumerate(trace.steps) if isinstance(s, LlmCallStep)]
    assert len(calls) == len(chat.segments) == 6
    assert all(isinstance(trace.steps[i + 1], AttentionStep) for i in calls)
    # every segment spans exactly the text it names, inside the prompt's own input (not its examples)
    for prompt, segments in zip(chat.sent, chat.segments):
        tail = prompt.index("Now your turn:")
        assert segments and all(s.start > tail and s.end > s.start for s in segments)
    labels = [[s.label for s in segs] for segs in chat.segments]
    assert labels[1] == ["passage"] and labels[3] == ["passage"]
    assert labels[2] == ["sub-query 1", "triple 1", "question"]
    assert labels[5] == ["sub-query 1", "triple 1", "sub-query 2", "triple 2", "question"]
    answer, segs = chat.sent[5], chat.segments[5]
    assert [answer[s.start:s.end] for s in segs] == [
        MENTOR, "(S> Alice Varga| P> doctoral advisor| O> Bruno Kessler)", "Where was Bruno Kessler born?",
        "(S> Bruno Kessler| P> born in| O> Carlow)", MENTOR]
    assert {s.kind for s in segs} == {"subquery", "triple", "question"}


def test_unparseable_planner_output_is_an_explicit_fallback_never_a_subquery(settings):
    def chatty(prompt: str) -> str:
        if prompt.startswith("You are a planner"):
            return "[SUBQ] Who was Alice Varga's doctoral advisor?" if rounds_in(prompt) == 0 \
                else "Where was Bruno Kessler born?"  # no control token: must not be retrieved for
        return two_turns(prompt)

    trace, _ = llm_run(two_hop_pack(), settings, chatty, k=1)
    assert [s.query for s in trace.steps if isinstance(s, RetrievalStep)] == [MENTOR]
    error = next(s for s in trace.steps if isinstance(s, ErrorStep))
    assert error.iteration == 1 and "'Where was Bruno Kessler born?'" in error.message
    decision = [s for s in trace.steps if isinstance(s, DecisionStep)][-1]
    assert decision.title == "Planner fallback: [SUFFICIENT]" and "fallback" in decision.detail
    assert isinstance(trace.steps[-1], AnswerStep)


def test_an_empty_answer_is_a_refusal_with_an_error_step_not_the_answer(settings):
    def silent(prompt: str) -> str:
        return "Answer:\n  \n" if prompt.startswith("You are an answerer") else two_turns(prompt)

    trace, _ = llm_run(two_hop_pack(), settings, silent, k=1)
    assert trace.answer.refused and trace.answer.text != ""
    error = [s for s in trace.steps if isinstance(s, ErrorStep)][-1]
    assert "no answer" in error.message and repr("Answer:\n  \n") in error.message


def test_a_planner_repeating_itself_ends_the_loop_instead_of_spinning(settings):
    def repeat(prompt: str) -> str:
        if prompt.startswith("You are a planner"):
            return "[SUBQ] Who was Alice Varga's doctoral advisor?"
        return "(S> Alice Varga| P> knows| O> Bruno Kessler)" if prompt.startswith("Convert") else "Bruno Kessler"

    trace, _ = llm_run(two_hop_pack(), settings, repeat, k=1, max_iterations=5)
    assert len([s for s in trace.steps if isinstance(s, RetrievalStep)]) == 2
    assert any(isinstance(s, ErrorStep) and "repeated" in s.message for s in trace.steps)
    assert isinstance(trace.steps[-1], AnswerStep)


def test_a_first_plan_of_no_retrieval_answers_without_retrieving(settings):
    trace, _ = llm_run(two_hop_pack(), settings,
                       lambda p: "[NO_RETRIEVAL]" if p.startswith("You are a planner") else "Hello!",
                       question="Say hello")
    assert not [s for s in trace.steps if isinstance(s, RetrievalStep)]
    assert trace.answer.text == "Hello!" and "[NO_RETRIEVAL]" in trace.steps[0].title + trace.steps[1].title


def test_eval_counts_rounds_and_graph_triples_per_question(settings):
    from engine.evaluation.runner import aggregate, score_trace
    from engine.knowledge.records import Question

    pack = three_hop_pack()
    question = Question("q1", "In which country is the city where Mira Solberg's nephew was born?", ("Ostland",),
                        "multi_hop", supporting_docs=("n1", "n2", "n3"))
    trace = Workbench(pack, settings).ask(question.question, "ras", {"k": 1})
    row = score_trace(trace, question)
    deltas = [s for s in trace.steps if isinstance(s, GraphDeltaStep)]
    assert row.rounds == len(deltas) >= 2 and row.graph_triples == sum(len(d.added_edges) for d in deltas) > 0
    assert aggregate([row])["rounds"] == row.rounds


def test_a_new_question_warm_encodes_its_small_batches_on_one_torch_thread(demo_workbench, monkeypatch):
    """Issue 22: 27-39 s on a busy 2-core machine, torch spinning a thread per core on every small encode.
    Its time is bench/methods.py's (new questions, ≤ 5 s); here every encode of a warm question, run with the
    app's thread count, must have run on one thread."""
    import torch

    from engine.retrieval.mean_pooling import MeanPoolingEncoder

    demo_workbench.ask("Who founded the Curie Institute?", "ras")  # warm: encoder, KG, indexes
    threads: list[int] = []
    plain = MeanPoolingEncoder.encode

    def encode(self, *args, **kwargs):
        threads.append(torch.get_num_threads())
        return plain(self, *args, **kwargs)

    monkeypatch.setattr(MeanPoolingEncoder, "encode", encode)
    before = torch.get_num_threads()
    torch.set_num_threads(max(2, before))
    try:
        demo_workbench.ask("Which university did the discoverer of X-rays attend?", "ras")
    finally:
        torch.set_num_threads(before)
    assert threads and set(threads) == {1}, threads
