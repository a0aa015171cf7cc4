"""RAS (Retrieval-And-Structuring): plan → sub-query → retrieve → text-to-triples → query KG → answer.

Spec: /work/shared/methods/ras.md. [decide] choices that live in this file:
- the first plan's sub-query text is ignored: q_0 is the question ([code], spec §2.8); a first plan of
  [SUFFICIENT] or [NO_RETRIEVAL] answers without retrieval.
- the iteration cap defaults to 5 (paper §4 and spec §8.1; the [code] default is 3), settable 1-10; at
  the cap the answerer uses whatever the graph holds, and a decision step says the cap was reached.
- a plan the planner tool had to make up because the model's output was unusable (`Plan.fallback`) is
  announced as such in the decision step's title, after the tool's `error` step.
- one graph merged across rounds with entity normalisation (query_graph.py), not a list of
  per-round subgraphs; no GNN/graph token (the training-free Sonnet variant of the paper).
- a chunk already read in an earlier round is not extracted again; its hit says so in provenance.
- `sufficiency` (RAW_SUFFICIENCY) is the offline planner's own cut-off on the reader's raw score; the run's
  min_confidence (engine.params.AnswerPolicy), on the calibrated confidence, is applied after the answer.
- AnswerStep.evidence: the docs the answer cites first (on the offline backend these include the
  chunks each bridge was read from), then every other doc read, in the order it was first retrieved.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from engine.graph.linking import entity_linker
from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, placed, reading_steps
from engine.methods.ras.extractor import OfflineExtractor
from engine.methods.ras.llm import LlmAnswerer, LlmExtractor, LlmPlanner
from engine.methods.ras.offline import MemoReader, OfflineAnswerer, OfflinePlanner
from engine.methods.ras.query_graph import Delta, GraphTriple, QueryGraph
from engine.methods.ras.tools import Plan, RasTools, Round
from engine.params import param
from engine.retrieval.embedder import Embedder
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.tools.bundle import ToolBundle
from engine.trace import DecisionStep, Edge, GraphDeltaStep, Hit, Node, RetrievalStep, Step

RAW_SUFFICIENCY = 0.45  # offline planner: the reader's raw score that makes the graph sufficient


@dataclass(frozen=True)
class RasParams:
    max_iterations: int = param(5, min=1, max=10,
                                help="Most retrieve-and-structure rounds (paper 5, released code 3).")
    k: int = param(5, min=1, max=20, help="Chunks retrieved per sub-query (paper: top-5).")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES, help="Retriever for the sub-queries.")
    sufficiency: float = param(RAW_SUFFICIENCY, min=0.0, max=1.0,
                               help="Offline planner: the reader's raw score over the graph needed for "
                                    "[SUFFICIENT] (its own cut-off, not the run's calibrated min_confidence).")
    merge_threshold: float = param(0.9, min=0.5, max=1.0,
                                   help="MiniLM cosine above which two entity names merge into one node.")


@register
class RasMethod(Method):
    id = "ras"
    label = "RAS"
    paper = ("Jiang et al., RAS: Retrieval-And-Structuring for Knowledge-Intensive LLM Generation (2025), "
             "arXiv 2502.10996")
    description = "Plan sub-queries, turn each round's passages into triples, answer from the query's own KG."
    Params = RasParams

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: RasParams = ctx.params
        embedder = ctx.retrieval.embedder
        tools = ras_tools(ctx.tools, embedder, sorted(ctx.pack.relations), params.sufficiency)
        linker = entity_linker(ctx.tools.kg, embedder)
        graph = QueryGraph(alias_of=linker.canonical, encode=embedder.encode_queries,
                           threshold=params.merge_threshold)
        rounds: list[Round] = []
        read: dict[str, Hit] = {}  # chunk id → first hit, in retrieval order
        plan = tools.planner.plan(question, rounds, graph, ())
        yield from placed(plan.steps, 0)
        if plan.action != "subq":  # spec §2.7: a decision of the planner, answered closed-book
            yield DecisionStep(iteration=0, title=f"{_who(plan)}: {_label(plan.action)}: no retrieval, answered "
                               "closed-book", action=plan.action,
                               detail=f"the planner's first plan was {_label(plan.action)}: nothing is retrieved and "
                               "the answerer sees the question alone, no graph (spec §2.7)")
            yield from _answer(tools, question, rounds, graph, [], ctx, 0)
            return
        yield DecisionStep(iteration=0, title=f"{_who(plan)}: [SUBQ]", action="subq",
                           detail=f"first sub-query is the question itself: {question}"
                           + (f" ({plan.reason})" if plan.fallback else ""))
        subquery = question
        for i in range(1, params.max_iterations + 1):
            ctx.check()
            hits = _fresh_hits(ctx, subquery, params, read, i)
            yield RetrievalStep(iteration=i, title=f"Round {i}: top {len(hits)} for the sub-query",
                                query=subquery, retriever=params.retriever, hits=hits)
            found: list[GraphTriple] = []
            for hit in hits:
                if hit.chunk_id in read:
                    continue
                read[hit.chunk_id] = hit
                extraction = tools.extractor.extract(hit)
                yield from placed(extraction.steps, i)
                found += [GraphTriple(t.head, t.relation, t.tail, i, subquery, hit.chunk_id, hit.doc_id)
                          for t in extraction.triples]
            delta = graph.add(found)
            rounds.append(Round(subquery, delta.new_triples, hits))
            yield _delta_step(i, delta, len(found))
            evidence = tuple(read.values())
            if i == params.max_iterations:
                yield DecisionStep(iteration=i, title="Iteration cap reached", action="cap",
                                   detail=f"iteration cap of {params.max_iterations} reached; answering from the "
                                   f"{len(graph.triples)} triples gathered")
                yield from _answer(tools, question, rounds, graph, evidence, ctx, i)
                return
            plan = tools.planner.plan(question, rounds, graph, evidence)
            yield from placed(plan.steps, i)
            if plan.action != "subq":
                yield DecisionStep(iteration=i, title=f"{_who(plan)}: [SUFFICIENT]", action="sufficient",
                                   detail=plan.reason or "the planner judged the graph sufficient")
                yield from _answer(tools, question, rounds, graph, evidence, ctx, i)
                return
            yield DecisionStep(iteration=i, title="Planner: [SUBQ]", action="subq",
                               detail=f"next sub-query: {plan.subquery}" + (f" ({plan.reason})" if plan.reason else ""))
            subquery = plan.subquery


def ras_tools(bundle: ToolBundle, embedder: Embedder, relations: Sequence[str], sufficiency: float) -> RasTools:
    """The RAS tools in the bundle's form (LLM or offline); the method never looks at the backend."""
    return bundle.twin(
        lambda chat: RasTools(LlmPlanner(chat), LlmExtractor(chat), LlmAnswerer(chat)),
        lambda: _offline_tools(bundle, embedder, relations, sufficiency),
    )


def _offline_tools(bundle: ToolBundle, embedder: Embedder, relations: Sequence[str], sufficiency: float) -> RasTools:
    reader = MemoReader(bundle.reader)  # planner and answerer share one run's readings
    return RasTools(OfflinePlanner(reader, bundle.kg, embedder, sufficiency, bundle.classifier),
                    OfflineExtractor(bundle.kg, embedder, tuple(sorted(relations))),
                    OfflineAnswerer(reader, bundle.kg, sufficiency))


def _answer(tools: RasTools, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit],
            ctx: RunContext, iteration: int) -> Iterator[Step]:
    reading = tools.answerer.answer(question, rounds, graph, evidence)
    yield from reading_steps(reading, iteration)
    cited = [h for h in evidence if h.doc_id in reading.citations]
    yield answer_step(reading, cited + [h for h in evidence if h.doc_id not in reading.citations], ctx.tools,
                      iteration)


def _label(action: str) -> str:
    return {"no_retrieval": "[NO_RETRIEVAL]", "sufficient": "[SUFFICIENT]"}.get(action, action)


def _who(plan: Plan) -> str:
    return "Planner fallback" if plan.fallback else "Planner"


def _delta_step(i: int, delta: Delta, extracted: int) -> GraphDeltaStep:
    nodes = tuple(Node(id=n, label=n, kind="entity") for n in delta.new_nodes)
    edges = tuple(Edge(t.head, t.relation, t.tail,
                       provenance=f"round {i}, sub-query {t.subquery!r}, chunk {t.chunk_id}")
                  for t in delta.new_triples)
    merged = f"; {len(delta.merged)} names merged" if delta.merged else ""
    return GraphDeltaStep(iteration=i, title=f"Round {i}: {extracted} triples extracted, {len(edges)} new, "
                          f"{len(nodes)} new entities{merged}", added_nodes=nodes, added_edges=edges,
                          focus=tuple(dict.fromkeys(n for t in delta.new_triples for n in (t.head, t.tail)))[:10])


def _fresh_hits(ctx: RunContext, subquery: str, params: RasParams, read: dict[str, Hit], i: int) -> tuple[Hit, ...]:
    """k chunks not read yet (the list goes deeper past read ones, which stay, marked, in rank order)."""
    pool = ctx.retrieval.search(subquery, k=params.k + len(read), retriever=params.retriever,
                                provenance=f"sub-query {i}")
    fresh = [h for h in pool if h.chunk_id not in read][: params.k]
    cutoff = pool.index(fresh[-1]) + 1 if fresh else min(params.k, len(pool))
    return tuple(replace(h, provenance=f"sub-query {i} (already read)") if h.chunk_id in read else h
                 for h in pool[:cutoff])
