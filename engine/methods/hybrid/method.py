"""Hybrid RAG (CRAG KDD Cup 2024): pages → chunks + tables → attributes → calculator, knowledge, KG → reason.

Spec: shared/methods/hybrid_rag.md. A single pass; each module is one stage, and stages are the
trace's iterations so the explorer steps through them (spec §6): 0 pages, 1 ranking, 2 attributes
and the gate, 3 calculator, 4 knowledge extractor, 5 KG and the premise check, 6 reasoning and the
answer. Decisions that live here (more in engine/methods/hybrid/*):
- search results [decide, §2.0]: the question's pages are those whose `question_ids` name it plus the
  pack's shared pages (page_selection.py; at most 50, CRAG Task 3's count), plus the `docs` documents
  the pack's retriever finds first (Task 1 hands over 5 pages); all are cut into the same chunks,
  whose vectors are embedded once and kept (page_store.py, issue 16).
- the false-premise policy: offline, a contradiction found by the KG premise check answers
  "invalid question"; on LLM backends the check is one more KG reference and the model decides.
- the KG stage also tries a direct KG answer (kg_answer.py, the analogue of the mock
  API's result); offline it is the answer, on LLM backends one more KG reference.
- the calculator (§2.4) is asked only when the question wants a number or a comparison
  (calculations.calculation_wanted): the paper leaves that to the model's empty reply (issue 23).
- the premise check's "is this an 'A or B' question?" is read from grammar on every backend: a model
  call for it is none of the paper's calls (spec §2.10), and every model call must show in the trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from engine.graph.linking import EntityLinker, entity_linker
from engine.knowledge.records import INVALID_QUESTION
from engine.methods.base import Method, RunContext, register
from engine.methods.common import distinct_docs, placed
from engine.methods.hybrid import policy
from engine.methods.hybrid.attributes import Attributes, attribute_model, describe
from engine.methods.hybrid.calculations import Calculation, Calculations, calculation_wanted
from engine.methods.hybrid.kg_answer import KgAnswer, kg_answer
from engine.methods.hybrid.kg_module import KgLookup, lookup, rules_for
from engine.methods.hybrid.knowledge import DirectAnswer
from engine.methods.hybrid.llm import (
    LlmAttributePredictor,
    LlmCalculator,
    LlmEntityFinder,
    LlmKnowledgeExtractor,
    LlmReasoner,
)
from engine.methods.hybrid.offline import OfflineCalculator, OfflineEntityFinder, OfflineReasoner
from engine.methods.hybrid.page_selection import PageSelection, select_pages
from engine.methods.hybrid.page_store import page_vectors
from engine.methods.hybrid.pages import (
    PageChunk,
    PageTable,
    RankedTable,
    dedupe,
    document_chunks,
    page_parts,
    rank_chunks,
    rank_tables,
    tables_block,
)
from engine.methods.hybrid.premise import PremiseCheck, PremiseChecker
from engine.methods.hybrid.reasoner import Decision, References
from engine.methods.hybrid.tools import HybridTools, Sampling
from engine.params import param
from engine.retrieval.embedder import Embedder
from engine.tools.base import IDK
from engine.tools.bundle import ToolBundle
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.tools.offline_reader import fact_sentence
from engine.tools.offline_reader.sentences import content_stems
from engine.trace import (
    AnswerStep,
    AttributeLabel,
    AttributesStep,
    DecisionStep,
    Edge,
    ErrorStep,
    FeaturesStep,
    GraphDeltaStep,
    Hit,
    Node,
    RetrievalStep,
    Step,
)

MAX_PAGES = 50
TABLE_ROWS = 6  # offline: table rows handed to the reader as sentences
RETRIEVER = "MiniLM cosine over page and document chunks"
PAGES, RANKING, ATTRIBUTES, CALCULATOR, KNOWLEDGE, KG, REASONING = range(7)
_GRAMMAR = OfflineQuestionClassifier()  # the premise check's choice test (module docstring)


@dataclass(frozen=True)
class HybridParams:
    k: int = param(10, min=1, max=30, help="Chunks in the reasoning prompt (spec §2.2: 10).")
    docs: int = param(5, min=0, max=20, help="Pack documents taken as extra search results (CRAG Task 1: 5 pages).")
    sentence_cap: int = param(200, min=50, max=1000,
                              help="Longer sentences are split into pieces of this many characters.")
    max_table_chars: int = param(4000, min=0, max=20000, help="The table block is cut at this many characters.")
    dynamic_gate: str = param("fast-changing", choices=policy.GATE_CHOICES,
                              help="Questions at least this dynamic get \"I don't know\"; off never gates.")
    max_kg_facts: int = param(30, min=0, max=200,
                              help="Most KG facts looked up (the prompt block is cut at 1000 chars).")
    attribute_samples: int = param(3, min=1, max=9, help="LLM: attribute votes per question (majority wins); "
                                   "sampling stops at the first repeated reply.")
    calc_samples: int = param(5, min=1, max=20, help="LLM: expressions sampled by the calculator; sampling stops "
                              "at the first repeated reply.")
    reason_samples: int = param(1, min=1, max=8, help="LLM: reasoning samples; any 'I don't know' wins. More pay "
                                "only on a server that samples: a local model repeats its first sample.")


@register
class HybridMethod(Method):
    id = "hybrid"
    label = "Hybrid RAG (CRAG)"
    paper = ("Yuan et al., A Hybrid RAG System with Comprehensive Enhancement on Complex Reasoning "
             "(Meta CRAG KDD Cup 2024)")
    description = ("Pages and tables, an attribute gate, a calculator and KG facts; answer, refuse or flag a false "
                   "premise.")
    Params = HybridParams

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: HybridParams = ctx.params
        linker = entity_linker(ctx.tools.kg, ctx.retrieval.embedder)
        tools = hybrid_tools(ctx.tools, ctx.retrieval.embedder, linker,
                             Sampling(params.attribute_samples, params.calc_samples, params.reason_samples))
        # §2.1 web page processing
        chunks, tables, selection = self._pages(question, ctx)
        yield _pages_step(chunks, tables, selection)
        ctx.check()
        # §2.2 top-k chunks by cosine; tables ranked and cut at the cap
        vectors = page_vectors(ctx.retrieval, params.sentence_cap)
        ranked = rank_chunks(question, chunks, vectors, params.k)
        hits = tuple(_hit(c, score, rank) for rank, (c, score) in enumerate(ranked, start=1))
        yield RetrievalStep(iteration=RANKING, title=f"Top {len(hits)} of {len(chunks)} chunks", query=question,
                            retriever=RETRIEVER, hits=hits)
        kept_tables = rank_tables(question, tables, vectors, params.max_table_chars)
        if vectors.problem:
            yield ErrorStep(iteration=RANKING, title="Chunk vector store unusable", message=vectors.problem)
        if kept_tables:
            yield _tables_step(kept_tables, params.max_table_chars)
        ctx.check()
        # §2.3 attribute predictor and the dynamic gate
        attributes = tools.attributes.predict(question)
        yield from placed(attributes.steps, ATTRIBUTES)
        yield _attributes_step(attributes)
        verdict = policy.dynamic_gate(attributes, params.dynamic_gate)
        yield DecisionStep(iteration=ATTRIBUTES, title="Gate: " + ("dynamic" if verdict.answer else "static"),
                           action="refuse" if verdict.answer else "continue", detail=verdict.reason)
        if verdict.answer:
            yield _final(Decision(verdict.answer, verdict.route, verdict.reason, refused=True), hits, ctx, ATTRIBUTES)
            return
        # §2.6 entities first: the calculator and the premise check need them
        entities, mentions, entity_steps = tools.entities.find(question, _query_time(ctx))
        kg = lookup(question, entities, mentions, ctx.tools.kg, params.max_kg_facts, entity_steps,
                    rules_for(question, ctx.pack.rules, ctx.retrieval.embedder))
        # §2.4 calculator, asked only when the question wants a number or a comparison
        wanted = calculation_wanted(question, attributes.question_type)
        calcs = tools.calculator(entities).propose(
            question, "\n".join(h.text for h in hits), tables_block(kept_tables),
            [fact_sentence(t) for t in kg.facts]) if wanted else Calculations(())
        yield from placed(calcs.steps, CALCULATOR)
        yield from _calculation_steps(calcs.items, wanted)
        ctx.check()
        # §2.5 knowledge extractor (LLM only)
        direct = tools.extractor.answer(question) if tools.extractor else None
        yield from _knowledge_steps(direct)
        ctx.check()
        # §2.6 KG look-ups and the premise check
        yield from placed(kg.steps, KG)
        yield _kg_delta(kg)
        premise, answer = self._premise(question, ctx, linker)
        yield DecisionStep(iteration=KG, title=f"Premise check: {premise.verdict}",
                           action="false_premise" if premise.contradicted else "premise_ok", detail=premise.reason)
        if answer is not None:
            yield DecisionStep(iteration=KG, title=f"KG answer: {answer.answer}", action="kg_answer",
                               detail=f"{answer.reason}: " + "; ".join(fact_sentence(t) for t in answer.facts))
        ctx.check()
        # §2.7-2.8 reasoning: answer, refuse or flag a false premise
        refs = _references(question, hits, kept_tables, calcs.ok, direct, kg, premise, answer, ctx)
        decision = self._reason(question, tools, refs, premise)
        yield from placed(decision.steps, REASONING)
        yield DecisionStep(iteration=REASONING, title=f"Route: {decision.route}", action=decision.route,
                           detail=decision.reason)
        yield _final(decision, hits, ctx, REASONING)

    def _pages(self, question: str, ctx: RunContext) -> tuple[list[PageChunk], list[PageTable], PageSelection]:
        """The question's chunks and tables, and which pages they came from and why."""
        params: HybridParams = ctx.params
        chunks: list[PageChunk] = []
        tables: list[PageTable] = []
        selection = select_pages(ctx.pack, question, ctx.question, MAX_PAGES)
        for page in selection.pages:
            parts = page_parts(page, params.sentence_cap)
            chunks += parts.chunks
            tables += parts.tables
        if params.docs:
            found = ctx.retrieval.search(question, k=2 * params.docs, retriever="hybrid", provenance="question")
            for doc_id in distinct_docs(found)[:params.docs]:
                chunks += document_chunks(ctx.pack.documents_by_id[doc_id], params.sentence_cap)
        return dedupe(chunks), tables, selection

    def _premise(self, question: str, ctx: RunContext, linker: EntityLinker) -> tuple[PremiseCheck, KgAnswer | None]:
        """The premise check, and a direct KG answer when the premise stands and the question has one."""
        links = linker.link(question)
        checker = _checker(ctx)
        premise = checker.check(question, links, _GRAMMAR.classify(question).kind == "choice")
        return premise, None if premise.contradicted else kg_answer(question, links, checker)

    def _reason(self, question: str, tools: HybridTools, refs: References, premise: PremiseCheck) -> Decision:
        if premise.contradicted and tools.extractor is None:  # offline: the KG check is the premise judge
            verdict = policy.false_premise(f"the KG contradicts the question's premise: {premise.reason}")
            return Decision(verdict.answer, verdict.route, verdict.reason)
        return tools.reasoner.reason(question, refs)


def hybrid_tools(bundle: ToolBundle, embedder: Embedder, linker: EntityLinker, sampling: Sampling) -> HybridTools:
    """The hybrid tools in the bundle's form (LLM or offline); the method never looks at the backend."""
    model = attribute_model(embedder)
    return bundle.twin(
        lambda chat: HybridTools(LlmAttributePredictor(chat, model, sampling.attributes),
                                 LlmEntityFinder(chat, linker), lambda _: LlmCalculator(chat, sampling.calculator),
                                 LlmReasoner(chat, sampling.reasoning), LlmKnowledgeExtractor(chat)),
        lambda: HybridTools(model, OfflineEntityFinder(linker), OfflineCalculator,
                            OfflineReasoner(bundle.reader, bundle.classifier), None),
    )


# ---- helpers ---------------------------------------------------------------------------------------------


def _checker(ctx: RunContext) -> PremiseChecker:
    """One checker per KG and embedder (its relation vectors are computed once)."""
    return ctx.tools.kg.derived(f"hybrid.premise:{ctx.retrieval.embedder.id}", lambda: PremiseChecker(
        ctx.tools.kg, ctx.retrieval.embedder, ctx.pack.documents, ctx.pack.rules))


def _hit(chunk: PageChunk, score: float, rank: int) -> Hit:
    return Hit(doc_id=chunk.source, chunk_id=chunk.id, title=chunk.title, text=chunk.text, score=score, rank=rank,
               retriever="hybrid pages", provenance=f"{chunk.origin} · {chunk.kind}")


def _pages_step(chunks: Sequence[PageChunk], tables: Sequence[PageTable], selection: PageSelection) -> FeaturesStep:
    rows = [(c.source, c.origin, c.kind, len(c.text), c.text[:160]) for c in chunks]
    rows += [(t.source, "table", f"{len(t.rows)}×{len(t.header)}", len(t.markdown), t.title) for t in tables]
    docs = len({c.source for c in chunks if c.origin == "document"})
    return FeaturesStep(iteration=PAGES, title=f"{len(selection.pages)} pages, {docs} documents → {len(chunks)} "
                        f"chunks, {len(tables)} tables", columns=("source", "origin", "rule", "chars", "text"),
                        rows=tuple(rows), note=f"Pages: {selection.reason}.")


def _tables_step(ranked: Sequence[RankedTable], cap: int) -> FeaturesStep:
    rows = tuple((r.table.id, r.table.title, r.score, "cut" if r.cut_at else "kept" if r.in_prompt else "dropped",
                  len(r.table.markdown), r.cut_at) for r in ranked)
    kept = sum(r.in_prompt for r in ranked)
    return FeaturesStep(iteration=RANKING, title=f"Tables: {kept} of {len(ranked)} within {cap} characters",
                        columns=("table", "page", "score", "status", "chars", "cut at"), rows=rows)


def _attributes_step(attributes: Attributes) -> AttributesStep:
    labels = (AttributeLabel("question type", attributes.question_type, attributes.type_confidence),
              AttributeLabel("dynamism", attributes.dynamism, attributes.dynamism_confidence))
    if attributes.second_dynamism:  # the gate's second opinion (policy.py)
        labels += (AttributeLabel("dynamism (embedding classifier)", attributes.second_dynamism,
                                  attributes.second_confidence),)
    return AttributesStep(iteration=ATTRIBUTES, title=f"Attributes ({describe(attributes)})", labels=labels,
                          method=attributes.method, votes=attributes.votes)


def _calculation_steps(items: Sequence[Calculation], wanted: str) -> Iterator[Step]:
    if not items:
        detail = (f"{wanted}, but the evidence fed no calculation" if wanted else
                  "the question asks for no number or comparison: the calculator was not asked")
        yield DecisionStep(iteration=CALCULATOR, title="No calculation", action="skip", detail=detail)
        return
    for item in items:
        yield item.step(CALCULATOR)


def _knowledge_steps(direct: DirectAnswer | None) -> Iterator[Step]:
    if direct is None:
        yield DecisionStep(iteration=KNOWLEDGE, title="Knowledge extractor skipped", action="skip",
                           detail="the closed-book answer needs a language model (spec §2.5); offline has none")
        return
    yield from placed(direct.steps, KNOWLEDGE)
    yield DecisionStep(iteration=KNOWLEDGE, title=f"Closed-book answer: {direct.kind}", action=direct.kind,
                       detail=f"{direct.parsed!r} — passed on as possibly hallucinated")


def _kg_delta(kg: KgLookup) -> GraphDeltaStep:
    names = dict.fromkeys([*kg.entities, *(t.head for t in kg.facts), *(t.tail for t in kg.facts)])
    nodes = tuple(Node(id=n, label=n, kind="topic" if n in kg.entities else "entity") for n in names)
    rules = dict(kg.derived)
    edges = tuple(Edge(t.head, t.relation, t.tail, provenance=f"derived by rule {rules[t]}" if t in rules
                       else "pack KG look-up") for t in kg.facts)
    _, cut = kg.block()
    title = f"KG: {len(kg.facts)} facts about {len(kg.entities)} entities" + (
        " (block cut at 1000 chars)" if cut else "")
    return GraphDeltaStep(iteration=KG, title=title, added_nodes=nodes, added_edges=edges, focus=kg.entities)


def _references(question: str, hits: tuple[Hit, ...], tables: Sequence[RankedTable], calcs: Sequence[Calculation],
                direct: DirectAnswer | None, kg: KgLookup, premise: PremiseCheck, answer: KgAnswer | None,
                ctx: RunContext) -> References:
    block, _ = kg.block()
    if answer is not None:
        block = f"### KG answer: {answer.answer} ({answer.reason})\n{block}"
    if premise.contradicted:
        block = f"### KG premise check: {premise.reason}\n{block}"
    return References(
        chunks=hits, kg_block=block, tables_block=tables_block(tables),
        calculations=tuple(c.line() for c in calcs), direct_answer=direct.reference() if direct else "",
        query_time=_query_time(ctx),
        table_rows=_table_rows(question, tables), facts=kg.facts,
        kg_answer=answer.answer if answer else "", kg_reason=answer.reason if answer else "",
    )


def _query_time(ctx: RunContext) -> str:
    return ctx.question.query_time if ctx.question else ""


def _table_rows(question: str, tables: Sequence[RankedTable]) -> tuple[Hit, ...]:
    """Offline: the kept tables' rows that share the most words with the question, as sentences."""
    wanted = content_stems(question)
    rows = [(len(wanted & content_stems(text)), r.table, text) for r in tables if r.in_prompt
            for text in r.table.row_sentences()]
    best = sorted((row for row in rows if row[0] > 0), key=lambda row: -row[0])[:TABLE_ROWS]
    return tuple(Hit(doc_id=table.source, chunk_id=f"{table.id}#r{n}", title=table.title, text=text, score=float(o),
                     rank=n, retriever="table rows", provenance="table")
                 for n, (o, table, text) in enumerate(best, start=1))


def _final(decision: Decision, hits: tuple[Hit, ...], ctx: RunContext, iteration: int) -> AnswerStep:
    invalid = decision.answer == INVALID_QUESTION
    title = ("Invalid question (false premise)" if invalid else
             "Refused: I don't know" if decision.refused or decision.answer == IDK else "Answer")
    return AnswerStep(iteration=iteration, title=title, text=decision.answer, citations=decision.citations,
                      confidence=decision.confidence, refused=decision.refused, backend=ctx.tools.backend,
                      model=ctx.tools.model, evidence=distinct_docs(hits))

