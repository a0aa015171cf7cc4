"""Think-on-Graph 2.0: relations → entities → their documents' chunks → prune → reason, for D rounds.

Spec: /work/shared/methods/tog2.md. Decisions on its §8 [decide] items that live in this file:
- 6: the initial early-stop check runs (paper, Alg. 1): the reasoner reads the topic entities' top chunks
  at iteration 0 and may answer there; otherwise its clue carries to round 1. `initial_check=False`
  skips it, as the released code does. No CoT self-consistency pre-gate: it would answer without the
  graph, which is not what this workbench shows.
- 7: after every {No} before the cap, a query re-formulation call (temperature 0) names the missing
  evidence and writes a new retrieval query in braces; the next round scores chunks against the mean
  of the question and that query (both shown in the retrieval step's query), and relation prune sees
  the clue. A reply without a braced query is an error step and the query falls back to question +
  clue, which is also what the offline twin uses (no model call).
- 8: the reasoning context is a cumulative pool of the kept entities' top chunks, re-ranked each round.
- 9: when the depth cap is reached the last reasoning call is told to give a best-effort answer over
  everything gathered; an early stop (no relations, no candidates) spends one such final call. Where that
  call still gives no answer, the reader answers over the same evidence (one more call, role "reader"). LLM
  calls with combined prune: ≤ 2D + 2 (topic prune and the initial check included), plus at most D
  re-formulations; per-entity prune adds up to (W − 1)·D.
- 11: literal tails (years, numbers: nodes without documents) go to the reasoner as triples, but a bare
  year is never a topic entity.
- 13: topic and relation prune sample at temperature 0.4 (paper; `temperature` param, the released
  code uses 0); reasoning and re-formulation at 0. The lenient stop test is kept only for "yes" with
  the answer in braces; output with no {Yes}/{No} verdict is an error step, read as {No} with no clue.
- 15: topic prune runs only with more than 2 linked entities ([code]); it never empties the frontier.
A question that links to no entity of the pack starts from the titles of the top documents text retrieval
finds (the paper's entity-document links read backwards; issue 27), reading those retrieved chunks first;
only when retrieval finds nothing does it fall back to plain text retrieval + the reader.
Offline only (`_hop_left`, issue 27): the extractive reader cannot tell a bridge entity from the answer, so
an answer naming an entity whose relations were not followed yet, or any answer at iteration 0 to a
question that only describes its entity ("the rocket that …"), is a {No} and the walk goes on.
On an LLM backend the decision that ends the run also records the calls made against the paper's bound
(spec §2.3: relation prune + reasoning ≤ 2D+1 combined, WD+D+1 per entity; topic prune and re-formulation
counted apart), the summary spec §6 asks for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from engine.graph.linking import EntityLink, entity_linker
from engine.knowledge.records import Triple
from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, placed, retrieve_and_read
from engine.methods.tog2.exploration import (
    Candidate,
    ExplorationGraph,
    ScoredChunk,
    discover_candidates,
    entity_scores,
    oriented,
    revisited_links,
    score_chunks,
    top_per_entity,
)
from engine.methods.tog2.llm import (
    EXPLORE_TEMPERATURE,
    RELATION_SETTINGS,
    TOPIC_SETTINGS,
    LlmQueryReformer,
    LlmReasoner,
    LlmRelationPruner,
    LlmTopicPruner,
)
from engine.methods.tog2.offline import OfflineQueryReformer, OfflineReasoner, OfflineRelationPruner, OfflineTopicPruner
from engine.methods.tog2.tools import Reasoning, RelationChoice, Tog2Tools, TopicChoice
from engine.params import param
from engine.retrieval.embedder import Embedder
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.rules.text import relation_label
from engine.tools.bundle import ToolBundle
from engine.tools.offline_reader.question_grammar import describes_by_clause
from engine.trace import AnswerStep, DecisionStep, Edge, GraphDeltaStep, Hit, LlmCallStep, Node, RetrievalStep, Step

ENDING_ACTIONS = frozenset({"answer", "depth_cap"})  # decisions an answer step follows at once
BOUNDED_ROLES = frozenset({"relation prune", "reasoning"})  # the calls the paper's bound counts (spec §2.3)
RETRIEVED_SCORE = 0.5  # a topic entity found by text retrieval, not named: below every name link
INITIAL_PER_ENTITY = 3  # spec §4 [code]: top-3 per topic entity seed the pool
MAX_STUBS = 8  # pruned relations drawn per frontier entity; the rest are only counted
RETRIEVER = "tog2 entity documents (MiniLM)"
# a bare year ('1921', 'in 1905', '300 BC') is a literal, not a place to start exploring from
_BARE_YEAR = re.compile(r"^\s*(?:(?:in|on|of|since|by|from|until)\s+)?\d{1,4}(?:\s*(?:bc|bce|ad|ce))?\s*$",
                        re.IGNORECASE)


@dataclass(frozen=True)
class Tog2Params:
    width: int = param(3, min=1, max=10, help="W: frontier size, and relations kept per entity.")
    depth: int = param(3, min=1, max=6, help="D: the most exploration rounds (the iteration cap).")
    k: int = param(10, min=1, max=30, help="K: chunks ranked globally per round for entity scores and reading.")
    alpha: float = param(0.8, min=0.0, max=5.0, help="α: rank decay exp(-α·k) in the entity score (Eq. 6).")
    prune_mode: str = param("combined", choices=("combined", "per-entity"),
                            help="Relation prune: one call for all entities, or one per entity.")
    candidate_cap: int = param(20, min=1, max=200, help="Most tail entities followed per (entity, relation).")
    max_candidates: int = param(60, min=1, max=1000, help="Most candidate entities scored per round.")
    sufficiency: float = param(0.45, min=0.0, max=1.0,
                               help="Offline reasoner: the reader's raw score needed to stop before the cap (its "
                                    "own cut-off, not the run's calibrated min_confidence).")
    initial_check: bool = param(True, help="Ask the reasoner first over the topic entities' documents and "
                                "answer at iteration 0 if they suffice (paper); off = the released code.")
    temperature: float = param(EXPLORE_TEMPERATURE, min=0.0, max=1.5,
                               help="LLM temperature of topic and relation prune (paper 0.4, released code 0); "
                               "reasoning and query re-formulation always use 0.")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES,
                           help="Text retrieval used only when no entity of the pack is found.")


@dataclass(frozen=True)
class _State:
    """What carries from one round to the next (spec §3 paths / clue state)."""

    frontier: tuple[str, ...]
    arrived: dict[str, str]  # entity → relation that reached it (no immediate backtracking)
    paths: dict[str, str]  # entity → the verbalised path from a topic entity
    visited: frozenset[str]
    expanded: frozenset[str] = frozenset()  # entities whose relations have been followed
    facts: tuple[Triple, ...] = ()
    pool: tuple[ScoredChunk, ...] = ()
    clue: str = ""
    query: str = ""  # the re-formulated retrieval query for the next round ('' = the question alone)


@register
class Tog2Method(Method):
    id = "tog2"
    label = "Think-on-Graph 2.0"
    paper = ("Ma et al., Think-on-Graph 2.0: Deep and Faithful LLM Reasoning with Knowledge-guided "
             "Retrieval Augmented Generation (2024), arXiv 2407.10805")
    description = "Walk the KG from the question's entities; their documents decide which entities survive."
    Params = Tog2Params

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        """The walk, with the calls it made recorded in the decision that ends it (spec §6 summary)."""
        roles: list[str] = []
        ending: DecisionStep | None = None  # an answer always follows the decision that ends the walk at once
        for step in self._walk(question, ctx):
            if isinstance(step, LlmCallStep):
                roles.append(step.role)
            if ending is not None:
                yield _with_budget(ending, roles, ctx.params) if isinstance(step, AnswerStep) and roles else ending
                ending = None
            if isinstance(step, DecisionStep) and step.action in ENDING_ACTIONS:
                ending = step
            else:
                yield step
        if ending is not None:
            yield ending

    def _walk(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: Tog2Params = ctx.params
        graph = ExplorationGraph(ctx.tools.kg, ctx.retrieval)
        tools = tog2_tools(ctx.tools, ctx.retrieval.embedder, params.sufficiency, params.temperature)
        # §2.1.1 entity linking; bare years stay literals (they may still be reached as tails)
        found = [link for link in entity_linker(ctx.tools.kg, ctx.retrieval.embedder).link(question)
                 if graph.documents.chunks(link.entity) or graph.relations(link.entity)]
        links = [link for link in found if not is_bare_year(link.entity)]
        retrieved: tuple[Hit, ...] = ()
        if not links:  # no name of the pack in the question: start from what text retrieval finds
            retrieved = ctx.retrieval.search(question, k=params.k, retriever=params.retriever, provenance="question")
            links = _retrieved_links(retrieved, graph, params.width)
        if not links:
            yield from self._text_only(question, ctx)
            return
        # §2.1.2 topic prune
        choice = (tools.topic.prune(question, links, params.width) if len(links) > 2
                  else TopicChoice(tuple(link.entity for link in links[:params.width])))
        yield from placed(choice.steps, 0)
        yield _linking_delta(links, choice)
        yield _linking_decision(links, choice, [link.entity for link in found if link not in links])
        # §2.1.3 initial context over the topic entities' documents
        seed = _seed(graph, question, choice.kept, retrieved)
        yield RetrievalStep(iteration=0, title=f"Initial context: {len(seed)} chunks of the "
                            f"{'retrieved' if retrieved else 'topic entities'}' documents",
                            query=question, retriever=RETRIEVER, hits=_hits(seed))
        state = _State(choice.kept, {}, {e: "" for e in choice.kept}, frozenset(choice.kept), pool=tuple(seed))
        if params.initial_check:  # §2.1.4 (paper Alg. 1): perhaps the topic entities' documents suffice
            reasoning = tools.reasoner.reason(question, (), _top(state.pool, params.k), "", False)
            yield from placed(reasoning.steps, 0)
            reasoning = _hop_left(question, reasoning, state, graph, ctx)
            if reasoning.sufficient:
                yield DecisionStep(iteration=0, title="Enough knowledge", action="answer",
                                   detail="the initial check answered from the topic entities' documents at "
                                   "iteration 0, before any exploration")
                yield _answer(reasoning, state, ctx, 0)
                return
            state = yield from _carry_on(question, tools, state, reasoning, 0)
        for depth in range(1, params.depth + 1):
            ctx.check()
            final = depth == params.depth
            state, reasoning, stop = yield from self._round(question, ctx, graph, tools, state, depth, final)
            if reasoning is None:  # nothing left to explore: one best-effort call over what was gathered
                reasoning = tools.reasoner.reason(question, state.facts, _top(state.pool, params.k), state.clue, True)
                yield from placed(reasoning.steps, depth)
                reasoning, forced = yield from _forced_answer(question, ctx, state, reasoning, depth)
                yield DecisionStep(iteration=depth, title="Exploration ended", action="answer", detail=stop + forced)
                yield _answer(reasoning, state, ctx, depth)
                return
            if reasoning.sufficient and not _forced(reasoning, final, params):
                yield DecisionStep(iteration=depth, title="Enough knowledge", action="answer",
                                   detail=f"the reasoning step answered at depth {depth}")
                yield _answer(reasoning, state, ctx, depth)
                return
            if final:
                reasoning, forced = yield from _forced_answer(question, ctx, state, reasoning, depth)
                yield DecisionStep(iteration=depth, title="Depth cap reached", action="depth_cap",
                                   detail=f"depth cap D={params.depth} reached; best-effort answer from every "
                                   "triple and chunk gathered" + forced)
                yield _answer(reasoning, state, ctx, depth)
                return
            state = yield from _carry_on(question, tools, state, reasoning, depth)

    # ---- one round, spec §2.2 -------------------------------------------------------------------

    def _round(self, question, ctx, graph, tools, state: _State, depth: int, final: bool):  # noqa: ANN001, ANN202
        params: Tog2Params = ctx.params
        # §2.2.1 relation discovery, both directions
        relations = {e: graph.relations(e, state.arrived.get(e)) for e in state.frontier}
        if not any(relations.values()):
            return state, None, f"no relations left around {', '.join(state.frontier)} at depth {depth}"
        # §2.2.2 relation prune
        choice = tools.relations.prune(question, state.clue, state.paths, relations, params.width, params.prune_mode)
        yield from placed(choice.steps, depth)
        # §2.2.3 entity discovery (capped)
        kept_relations = [(s.entity, s.relation, s.score) for s in choice.kept]
        candidates = discover_candidates(graph, question, kept_relations, set(state.visited),
                                         params.candidate_cap, params.max_candidates)
        documented = [c for c in candidates if graph.documents.chunks(c.name)]
        literals = [c for c in candidates if c not in documented]
        known = revisited_links(graph, kept_relations, set(state.visited), params.candidate_cap)
        if not candidates:
            yield _relations_delta(depth, choice, known)
            state = replace(state, facts=_with_facts(state.facts, known))
            return state, None, f"the kept relations lead to no new entity at depth {depth}"
        # §2.2.4 entity-guided context retrieval, ranked globally
        queries = [question] + ([state.query] if state.query and state.query != question else [])
        ranked = score_chunks(graph.documents, queries, [(c.name, c.sentence) for c in documented])[:params.k]
        yield RetrievalStep(iteration=depth, title=f"Depth {depth}: top {len(ranked)} chunks of "
                            f"{len(documented)} candidates' documents", query=" | ".join(queries),
                            retriever=RETRIEVER, hits=_hits(ranked))
        # §2.2.5 context-based entity prune (Eq. 6)
        scores = entity_scores(ranked, params.alpha)
        keep = tuple(sorted((c for c in scores if scores[c] > 0), key=lambda c: -scores[c])[:params.width])
        yield _round_delta(depth, choice, candidates, literals, scores, keep, known)
        state = _advance(state, candidates, [*literals, *known], keep, ranked)
        if not keep:
            return state, None, f"no candidate's chunks reached the top {params.k} at depth {depth}"
        # §2.2.6 reasoning step
        reasoning = tools.reasoner.reason(question, state.facts, _top(state.pool, params.k), state.clue, final)
        yield from placed(reasoning.steps, depth)
        return state, reasoning if final else _hop_left(question, reasoning, state, graph, ctx), ""

    def _text_only(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: Tog2Params = ctx.params
        yield DecisionStep(iteration=0, title="No entity linked", action="fallback",
                           detail="no entity of the pack was found in the question; falling back to plain "
                           f"text retrieval ({params.retriever}) and the reader")
        yield from retrieve_and_read(question, ctx, params.k, params.retriever,
                                     title=f"Top {{n}} chunks ({params.retriever})")


def tog2_tools(bundle: ToolBundle, embedder: Embedder, sufficiency: float,
               temperature: float = EXPLORE_TEMPERATURE) -> Tog2Tools:
    """The ToG-2 tools in the bundle's form (LLM or offline); the method never looks at the backend.

    `temperature` is the exploration temperature of topic and relation prune (reasoning stays at 0).
    """
    return bundle.twin(
        lambda chat: Tog2Tools(LlmTopicPruner(chat, replace(TOPIC_SETTINGS, temperature=temperature)),
                               LlmRelationPruner(chat, replace(RELATION_SETTINGS, temperature=temperature)),
                               LlmReasoner(chat, embedder=embedder), LlmQueryReformer(chat)),
        lambda: Tog2Tools(OfflineTopicPruner(embedder, bundle.kg), OfflineRelationPruner(embedder),
                          OfflineReasoner(bundle.reader, sufficiency, bundle.classifier), OfflineQueryReformer()),
    )


# ---- helpers ----------------------------------------------------------------------------------------


def call_bound(params: Tog2Params) -> int:
    """Spec §2.3: relation-prune and reasoning calls, the initial check included (TP and re-form apart)."""
    per_round = params.width + 1 if params.prune_mode == "per-entity" else 2
    return per_round * params.depth + 1


def _with_budget(decision: DecisionStep, roles: Sequence[str], params: Tog2Params) -> DecisionStep:
    counted = sum(role in BOUNDED_ROLES for role in roles)
    bound = call_bound(params)
    formula = "WD+D+1" if params.prune_mode == "per-entity" else "2D+1"
    apart = ", ".join(f"{roles.count(r)} {r}" for r in sorted(set(roles) - BOUNDED_ROLES))
    verdict = "within" if counted <= bound else "OVER"
    return replace(decision, detail=f"{decision.detail}. LLM calls: {counted} relation prune + reasoning, {verdict} "
                   f"the paper's bound {formula} = {bound}" + (f" (besides: {apart})" if apart else ""))


def is_bare_year(name: str) -> bool:
    """'1921', 'in 1905', '300 BC': a date literal, never a topic entity (it may still be a tail)."""
    return bool(_BARE_YEAR.match(name))


def _carry_on(question: str, tools: Tog2Tools, state: _State, reasoning: Reasoning,
              iteration: int) -> Iterator[Step]:
    """After a {No}: keep the clue, re-formulate the retrieval query (spec §2.2.6), and say so."""
    clue = reasoning.clue
    reform = tools.requery.reform(question, clue, state.facts)
    yield from placed(reform.steps, iteration)
    missing = f"; missing: {reform.missing}" if reform.missing else ""
    yield DecisionStep(iteration=iteration, title="Not enough yet", action="continue",
                       detail=f"clue for depth {iteration + 1}: {clue or '(none)'}{missing}; "
                       f"next retrieval query: {reform.query}")
    return replace(state, clue=clue, query=reform.query)


def _retrieved_links(retrieved: Sequence[Hit], graph: ExplorationGraph, width: int) -> list[EntityLink]:
    """No name of the pack in the question: the documents text retrieval ranks first stand for their
    entities (the paper's entity-document links read backwards), so the walk still starts somewhere
    ("the first person to fly in space" names no one; issue 27: a quarter of HotpotQA runs never walked)."""
    titles = [h.title for h in retrieved if graph.documents.chunks(h.title) and not is_bare_year(h.title)]
    return [EntityLink(title, title, "retrieval", RETRIEVED_SCORE) for title in list(dict.fromkeys(titles))[:width]]


def _seed(graph: ExplorationGraph, question: str, topics: Sequence[str], retrieved: Sequence[Hit]) -> list[ScoredChunk]:
    """Spec §2.1.3: the topic entities' best chunks; or, for topics found by retrieval, the retrieved chunks
    themselves (rescored like every chunk of the walk), so the walk starts from what plain RAG reads."""
    if not retrieved:
        return top_per_entity(score_chunks(graph.documents, [question], [(e, "") for e in topics]), INITIAL_PER_ENTITY)
    ids = {h.chunk_id for h in retrieved}
    owners = [(title, "") for title in dict.fromkeys(h.title for h in retrieved)]
    return [s for s in score_chunks(graph.documents, [question], owners) if s.chunk.id in ids]


def _hop_left(question: str, reasoning: Reasoning, state: _State, graph: ExplorationGraph,
              ctx: RunContext) -> Reasoning:
    """An offline answer that names an entity the walk has not expanded yet (its relations not followed) is a
    hop still to take, not an answer: the extractive reader cannot tell a bridge from the end of the chain
    (issue 27: the chain stopped one hop short, "the rocket that launched X …" answered with the rocket).
    An entity with no relation to follow but the one that reached it is an answer. A question that
    describes what it asks about by a relative clause ("the rocket that lifted Mir's core module") is not
    answered from the topic entities' own documents before any walk. The LLM reasoner decides itself."""
    if not reasoning.sufficient or ctx.tools.backend != "offline":
        return reasoning
    if not state.expanded and describes_by_clause(question):
        return replace(reasoning, sufficient=False)
    name = entity_linker(ctx.tools.kg, ctx.retrieval.embedder).canonical(reasoning.reading.answer)
    if name is None or name in state.expanded or not graph.relations(name, state.arrived.get(name)):
        return reasoning
    clue = "; ".join(filter(None, [reasoning.clue, f"{name} (not explored yet)"]))
    return replace(reasoning, sufficient=False, clue=clue)


def _forced(reasoning: Reasoning, final: bool, params: Tog2Params) -> bool:
    """At the cap the answer was asked for; it counts as sufficient only if it would have been anyway."""
    return final and reasoning.reading.confidence < params.sufficiency



def _advance(state: _State, candidates: Sequence[Candidate], literals: Sequence[Candidate],
             keep: tuple[str, ...], ranked: Sequence[ScoredChunk]) -> _State:
    by_name = {c.name: c for c in candidates}
    facts = _with_facts(state.facts, [by_name[c] for c in keep] + list(literals))
    pool = {s.chunk.id: s for s in state.pool}
    for item in ranked:
        if item.entity in keep:
            pool.setdefault(item.chunk.id, item)
    paths = {c: f"{state.paths.get(by_name[c].via, '')} {by_name[c].sentence}".strip() for c in keep}
    return replace(state, frontier=keep, arrived={c: by_name[c].relation for c in keep}, paths=paths,
                   visited=state.visited | set(by_name), expanded=state.expanded | set(state.frontier), facts=facts,
                   pool=tuple(pool.values()))


def _with_facts(facts: tuple[Triple, ...], reached: Sequence[Candidate]) -> tuple[Triple, ...]:
    return tuple(dict.fromkeys(facts + tuple(Triple(*c.triple) for c in reached)))


def _top(pool: Sequence[ScoredChunk], k: int) -> tuple[Hit, ...]:
    return _hits(sorted(pool, key=lambda s: -s.score)[:k])  # ties keep the pool's order, never the ids


def _hits(items: Sequence[ScoredChunk]) -> tuple[Hit, ...]:
    return tuple(Hit(doc_id=s.chunk.doc_id, chunk_id=s.chunk.id, title=s.chunk.title, text=s.chunk.text,
                     score=s.score, rank=rank, retriever="tog2", provenance=s.entity)
                 for rank, s in enumerate(items, start=1))


def _forced_answer(question: str, ctx: RunContext, state: _State, reasoning: Reasoning,
                   depth: int) -> Iterator[Step]:
    """Spec §8 item 9: a forced final answer over all gathered evidence. A model told that this is the last
    round may still answer {No} (SmolLM2-135M did on 18 of 18 demo questions, so every run was refused);
    then the reader answers from the triples and chunks gathered, with no {No} to choose. Returns the
    reasoning to answer with and what to add to the ending decision. The offline reasoner already reads
    with the pack's reader at the cap, so it is not asked twice."""
    if reasoning.sufficient or ctx.tools.backend == "offline":
        return reasoning, ""
    reading = ctx.tools.reader.read(question, _top(state.pool, ctx.params.k), state.facts)
    yield from placed(reading.steps, depth)
    return Reasoning(not reading.refused, reading), "; the last reasoning call gave no answer, so the reader " \
        "answered from them (a forced final answer)"


def _answer(reasoning: Reasoning, state: _State, ctx: RunContext, depth: int) -> Step:
    # DESIGN §10: the evidence list is the union over rounds, in the method's final ranking
    return answer_step(reasoning.reading, _top(state.pool, len(state.pool)), ctx.tools, iteration=depth)


def _linking_delta(links: Sequence[EntityLink], choice: TopicChoice) -> GraphDeltaStep:
    kept = set(choice.kept)
    nodes = [Node(id=link.entity, label=link.entity, kind="topic", score=link.score) for link in links]
    return GraphDeltaStep(iteration=0, title=f"Linked {len(links)} entities; {len(kept)} topic entities",
                          added_nodes=tuple(n for n in nodes if n.id in kept),
                          pruned_nodes=tuple(n for n in nodes if n.id not in kept), focus=choice.kept)


def _linking_decision(links: Sequence[EntityLink], choice: TopicChoice, years: Sequence[str] = ()) -> DecisionStep:
    listed = "; ".join(f"{link.entity} ({link.method} '{link.mention}', {link.score:.2f})" for link in links)
    dropped = [link.entity for link in links if link.entity not in choice.kept]
    detail = f"linked: {listed}. Topic entities: {', '.join(choice.kept)}" + (
        f"; topic prune dropped {', '.join(dropped)}" if dropped else "") + (
        f"; bare years are not topic entities: {', '.join(years)}" if years else "")
    return DecisionStep(iteration=0, title="Entity linking and topic prune", action="link", detail=detail)


def _relation_stubs(depth: int, choice: RelationChoice) -> tuple[tuple[Node, ...], tuple[Edge, ...]]:
    """Pruned relations as faded stubs from their entity (spec §6), at most MAX_STUBS per entity."""
    nodes, edges, per_entity = [], [], {}
    for s in choice.scores:
        if s.kept or per_entity.get(s.entity, 0) >= MAX_STUBS:
            continue
        per_entity[s.entity] = per_entity.get(s.entity, 0) + 1
        stub = f"{s.entity} · {s.relation}"
        nodes.append(Node(id=stub, label=f"{relation_label(s.relation)} …", kind="relation", score=s.score))
        edges.append(Edge(source=s.entity, relation=s.relation, target=stub, score=s.score,
                          provenance=f"relation prune {s.score:.1f}/10 at depth {depth}"))
    return tuple(nodes), tuple(edges)


def _relations_delta(depth: int, choice: RelationChoice, known: Sequence[Candidate]) -> GraphDeltaStep:
    nodes, edges = _relation_stubs(depth, choice)
    return GraphDeltaStep(iteration=depth, title=f"Depth {depth}: relations scored, no new entity",
                          added_edges=tuple(_edge(c) for c in known), pruned_nodes=nodes, pruned_edges=edges)


def _round_delta(depth: int, choice: RelationChoice, candidates: Sequence[Candidate],
                 literals: Sequence[Candidate], scores: dict[str, float], keep: tuple[str, ...],
                 known: Sequence[Candidate]) -> GraphDeltaStep:
    stub_nodes, stub_edges = _relation_stubs(depth, choice)
    nodes = [Node(id=c.name, label=c.name, kind="literal" if c in literals else "entity",
                  score=scores.get(c.name, 0.0)) for c in candidates]
    edges = [_edge(c) for c in [*candidates, *known]]
    pruned = tuple(n for n in nodes if n.id not in keep and n.kind != "literal")
    return GraphDeltaStep(iteration=depth, title=f"Depth {depth}: {len(candidates)} candidates, kept {len(keep)}",
                          added_nodes=tuple(nodes), added_edges=tuple(edges), pruned_nodes=pruned + stub_nodes,
                          pruned_edges=stub_edges, focus=keep)


def _edge(candidate: Candidate) -> Edge:
    head, relation, tail = oriented(candidate.via, candidate.relation, candidate.name)
    return Edge(head, relation, tail, score=candidate.relation_score, provenance=candidate.sentence)
