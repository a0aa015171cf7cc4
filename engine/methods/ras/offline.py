"""RAS's offline planner and answerer: question decomposition by relational phrases, the extractive reader.

[decide] the offline planner works without a language model:
- round 1's sub-query is the question itself (spec §2.8);
- then the question is *resolved* over what has been read: its innermost relational phrase ('Lise
  Meitner's nephew', 'the physicist who supervised X') is asked on its own; a confident answer (the
  bridge entity) is written into the question in its place, and so on outwards;
- the next sub-query is the first phrase that could not be answered yet (as its own question), or, once
  every phrase is answered, the rewritten question (the bridge entity plus the unresolved part);
- [SUFFICIENT] when the reader answers the fully rewritten question with confidence >= `sufficiency`
  (an answer that merely repeats a name in the question never counts) and the answer reaches what the
  question asks (engine.methods.ras.bridge, issue 27: an answer that is not the kind of thing asked for
  is the bridge entity; the question is asked once more with it written in, and the answer one hop on
  is taken when the reader is confident of it), or when there is nothing new to
  ask: a question without relational phrases falls back to the bridge entity of the last round's
  triples whose relation is closest to the question, asked as 'What links <entity> to <question
  entity>?' (issue 22: pasting the entity before the question's leftover words read as nonsense);
- a phrase's answer is written into the question only if it names someone else: not a name of the
  question nor an alias of one, capitalised where a person or place is asked for, and no institution or
  place where a person is ('Where was Princeton University born?').
The answerer resolves the same way over everything read and reads the rewritten question (falling back
to the original one).
- the offline reader reads the chunks, not the graph's triples: offline triples are noisy (a relation
  phrase mapped onto the wrong pack relation) and, read as facts, they outvoted the sentences they came
  from. The graph still decides which chunks count most (evidence order), supplies names for the
  question's relational phrases, and gives the bridge when the question has no relational phrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import entity_linker
from engine.knowledge.records import Triple
from engine.methods.ras.bridge import beyond, bridged_question, is_bridge
from engine.methods.ras.query_graph import QueryGraph, fold
from engine.methods.ras.tools import Plan, Round
from engine.retrieval.embedder import Embedder
from engine.text import is_year
from engine.tools.base import QuestionClassifier, Reader, Reading, echoes_question
from engine.tools.llm_call import one_line
from engine.tools.offline_reader import Gazetteer, Hop, question_hop
from engine.tools.offline_reader.lexicon import GEO_WORDS, INSTITUTION_WORDS
from engine.tools.offline_reader.question_grammar import asked_noun
from engine.trace import DecisionStep, Hit, Step

BRIDGE_CONFIDENCE = 0.3  # a phrase's answer is trusted as a bridge from here (the reader's hop threshold)
MAX_RESOLVED = 3  # relational phrases answered per question: deeper nesting is not asked offline


@dataclass(frozen=True)
class Resolution:
    """The question with the relational phrases answered so far written in, and what is still open."""

    question: str
    bridges: tuple[tuple[str, str], ...] = ()  # (phrase, the entity it turned out to be)
    pending: Hop | None = None
    citations: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()

    def describe(self) -> str:
        return "; ".join(f"{phrase!r} is {answer!r}" for phrase, answer in self.bridges)


def innermost_hop(question: str, gazetteer: Gazetteer) -> Hop | None:
    """The relational phrase nested deepest: in 'the city where X's nephew was born', 'X's nephew'."""
    hop = question_hop(question, gazetteer)
    for _ in range(MAX_RESOLVED):
        inner = question_hop(hop.sub_question, gazetteer) if hop else None
        if inner is None or inner.phrase not in question:
            break
        hop = inner
    return hop


def evidence_for(text: str, rounds: Sequence[Round], evidence: Sequence[Hit]) -> tuple[Sequence[Hit], bool]:
    """What was retrieved for this very text when it was a sub-query (and True), else all evidence.

    Reading a question over the chunks retrieved for it, not over everything read so far, keeps the
    chunks gathered for other hops from outvoting the right one.
    """
    for r in rounds:
        if r.hits and fold(r.subquery) == fold(text):
            return r.hits, True
    return evidence, False


def resolve(question: str, reader: Reader, kg: KnowledgeGraph, graph: QueryGraph, rounds: Sequence[Round],
            evidence: Sequence[Hit], trust: float) -> Resolution:
    """Answer the question's relational phrases inside-out, writing each answer in.

    A phrase's answer becomes a bridge at BRIDGE_CONFIDENCE once the phrase was itself a sub-query
    (read over what came for it), and only at `trust` before: the evidence came for another question.
    """
    gazetteer = kg.derived("gazetteer", lambda: Gazetteer(kg.entities, kg.entity_relations))
    gazetteer = gazetteer.extended(graph.nodes.values())
    working, bridges, citations, steps = question, [], [], []
    for _ in range(MAX_RESOLVED):
        hop = innermost_hop(working, gazetteer)
        if hop is None:
            break
        chunks, asked = evidence_for(hop.sub_question, rounds, evidence)
        reading = reader.read(hop.sub_question, chunks)
        steps += reading.steps
        needed = BRIDGE_CONFIDENCE if asked else trust
        if reading.refused or reading.confidence < needed or hop.phrase not in working \
                or not _names_another(reading.answer, hop, graph, (question, working)):
            return Resolution(working, tuple(bridges), hop, tuple(citations), tuple(steps))
        working = working.replace(hop.phrase, reading.answer, 1)
        bridges.append((hop.phrase, reading.answer))
        citations += reading.citations
    return Resolution(working, tuple(bridges), None, tuple(dict.fromkeys(citations)), tuple(steps))


def _names_another(answer: str, hop: Hop, graph: QueryGraph, texts: Sequence[str]) -> bool:
    """An answer fit to be written into the question: not a name the question already gives (nor an
    alias of one), a capitalised name where the phrase asks for a person or a place ('physics' is neither),
    and no institution or place where it asks for a person (the reader's word lists)."""
    names = {answer, graph.alias_of(answer) or answer}
    if any(fold(name) in fold(text) for name in names for text in texts):
        return False
    if hop.kind == "person" and {w.lower() for w in answer.split()} & (INSTITUTION_WORDS | GEO_WORDS):
        return False  # 'Princeton University' is no one's doctoral advisor
    return answer[:1].isupper() or answer[:1].isdigit() or hop.kind not in ("person", "place")


def past_bridge(question: str, reading: Reading, reader: Reader, rounds: Sequence[Round], evidence: Sequence[Hit],
                needed: float) -> tuple[Reading, str]:
    """(the reading to answer with, the sub-query still to ask first or ''): a confident answer that stops one
    hop short (engine.methods.ras.bridge) is replaced by the answer one hop on, once that was retrieved for."""
    if not is_bridge(question, reading, [h.text for h in evidence]):
        return reading, ""
    follow = bridged_question(question, reading.answer)
    chunks, asked = evidence_for(follow, rounds, evidence)
    if not asked:
        return reading, follow
    return beyond(question, reading, reader.read(follow, chunks), needed) or reading, ""


class MemoReader:
    """One run's reader: the planner re-resolves the question every round, mostly over the same chunks."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self._memo: dict[tuple[str, tuple[str, ...]], Reading] = {}

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        if facts:
            return self.reader.read(question, evidence, facts)
        key = (question, tuple(h.chunk_id for h in evidence))
        if key not in self._memo:
            self._memo[key] = self.reader.read(question, evidence)
        return self._memo[key]


@dataclass(frozen=True)
class OfflinePlanner:
    reader: Reader
    kg: KnowledgeGraph
    embedder: Embedder
    sufficiency: float
    classifier: QuestionClassifier | None = None

    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan:
        if not rounds:
            return Plan("subq", question, "the first sub-query is the question itself (spec §2.8)")
        asked = {fold(r.subquery) for r in rounds}
        res = resolve(question, self.reader, self.kg, graph, rounds, evidence, self.sufficiency)
        found = f"found {res.describe()}; " if res.bridges else ""
        reading = None
        if res.pending is not None:
            target, why = res.pending.sub_question, f"{found}{res.pending.phrase!r} is not known yet"
        elif res.bridges and fold(res.question) not in asked:
            target, why = res.question, f"{found}retrieving for the rewritten question"
        else:
            reading = self.reader.read(res.question, evidence_for(res.question, rounds, evidence)[0])
            if (not reading.refused and reading.confidence >= self.sufficiency
                    and not echoes_question(question, reading.answer, self.classifier)):
                final, follow = past_bridge(res.question, reading, self.reader, rounds, evidence, self.sufficiency)
                if follow and fold(follow) not in asked:
                    return Plan("subq", follow, f"{found}{reading.answer!r} is not the {asked_noun(res.question)} "
                                "asked for: asking one hop on", res.steps + reading.steps)
                return Plan("sufficient", "", f"{found}the reader answers {final.answer!r} with confidence "
                            f"{final.confidence:.2f} >= {self.sufficiency}", res.steps + final.steps)
            target, why = res.question, "asking again"
        steps = res.steps + (reading.steps if reading else ())
        if fold(target) not in asked:
            return Plan("subq", target, why, steps)
        mentioned = self._mentions(question, graph)
        bridge = self._bridge(question, rounds, graph, mentioned)
        if bridge is None:
            return Plan("sufficient", "", "nothing new to ask; answering from the graph so far", steps)
        (anchor, relation, other), asked_about = bridge, f"What links {bridge[2]} to {bridge[0]}?"
        if fold(asked_about) in asked:
            return Plan("sufficient", "", "nothing new to ask; answering from the graph so far", steps)
        return Plan("subq", asked_about, f"bridge entity {other!r} found in round {len(rounds)} "
                    f"({anchor} –{relation}→ {other})", steps)

    def _mentions(self, question: str, graph: QueryGraph) -> list[str]:
        found = [link.mention for link in entity_linker(self.kg, self.embedder).link(question)]
        low = question.lower()
        found += [n for n in graph.nodes.values()
                  if len(n) > 2 and re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)]
        return list(dict.fromkeys(found))

    def _bridge(self, question: str, rounds: Sequence[Round], graph: QueryGraph,
                mentioned: Sequence[str]) -> tuple[str, str, str] | None:
        """(question entity, relation, entity) the last round linked, by the relation closest to the
        question; both are names (capitalised: a common noun such as 'physics' is not asked about)."""
        mentions = {fold(m) for m in mentioned}
        anchors = {graph.canonical(m)[0] for m in mentioned}
        used = " ".join(r.subquery.lower() for r in rounds)
        options: list[tuple[str, str, str]] = []
        for t in rounds[-1].triples:
            for end, other in ((t.head, t.tail), (t.tail, t.head)):
                if end in anchors and fold(other) not in mentions and other.lower() not in used \
                        and not is_year(other) and other[:1].isupper() and end[:1].isupper():
                    options.append((end, t.relation, other))
        if not options:
            return None
        rels = sorted({r for _, r, _ in options})
        vecs = self.embedder.encode_queries([unresolved(question, mentioned), *[r.replace("_", " ") for r in rels]])
        sim = dict(zip(rels, (vecs[1:] @ vecs[0]).tolist()))
        return max(options, key=lambda o: sim[o[1]])


def unresolved(question: str, mentions: Sequence[str]) -> str:
    """The question without the entity mentions it was linked by (the resolved part)."""
    text = question
    for m in sorted(mentions, key=len, reverse=True):
        text = re.sub(rf"(?:\b(?:the|a|an)\s+)?(?<!\w){re.escape(m)}(?:['’]s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return one_line(text).strip(" ?.,") + ("?" if question.strip().endswith("?") else "")


@dataclass(frozen=True)
class OfflineAnswerer:
    """The query graph first (the method's point: the answer is read from the triples it gathered), then
    the extractive reader on the resolved question over the chunks read; a decision step says which."""

    reader: Reader
    kg: KnowledgeGraph
    trust: float

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        """The graph's answer when it has one at `trust` and the chunks read do not say otherwise (they
        agree, or give nothing): the offline extractor's triples are noisy (bench/extractor.py), so where
        the graph and the text disagree the text, with its context, is the better witness."""
        from_graph = self.reader.read(question, (), [Triple(t.head, t.relation, t.tail) for t in graph.triples])
        from_chunks = self._from_chunks(question, rounds, graph, evidence)
        usable = bool(graph.triples) and not from_graph.refused and from_graph.confidence >= self.trust
        if usable and (from_chunks.refused or _same(from_graph.answer, from_chunks.answer)):
            cited = tuple(dict.fromkeys(t.doc_id for t in graph.triples if t.doc_id and
                                        from_graph.answer in (t.head, t.tail)))
            source = DecisionStep(title="Answered from the query graph", action="graph_answer",
                                  detail=f"{len(graph.triples)} triples; confidence {from_graph.confidence:.2f} "
                                         f">= {self.trust}" + ("" if from_chunks.refused else
                                                               f"; the chunks said {from_chunks.answer!r} at "
                                                               f"{from_chunks.confidence:.2f}"))
            return replace(from_graph, citations=cited or from_graph.citations, steps=from_graph.steps + (source,),
                           rationale=f"from the query graph: {from_graph.rationale}")
        why = ("the query graph is empty" if not graph.triples else
               "the query graph does not answer it" if from_graph.refused else
               f"the query graph gave {from_graph.answer!r} at {from_graph.confidence:.2f} < {self.trust}"
               if from_graph.confidence < self.trust else
               f"the chunks read say {from_chunks.answer!r}, not the graph's {from_graph.answer!r}")
        source = DecisionStep(title="Answered from the chunks read", action="chunk_answer",
                              detail=f"{why}; read {len(evidence)} chunks instead")
        return replace(from_chunks, steps=from_chunks.steps + (source,),
                       rationale=f"{why}; from the chunks: {from_chunks.rationale}")

    def _from_chunks(self, question: str, rounds: Sequence[Round], graph: QueryGraph,
                     evidence: Sequence[Hit]) -> Reading:
        res = resolve(question, self.reader, self.kg, graph, rounds, evidence, self.trust)
        if res.question != question:
            reading = self.reader.read(res.question, evidence_for(res.question, rounds, evidence)[0])
            if not reading.refused:
                reading = past_bridge(res.question, reading, self.reader, rounds, evidence, self.trust)[0]
                return Reading(reading.answer, tuple(dict.fromkeys(res.citations + reading.citations)),
                               reading.confidence, rationale=f"{res.describe()}; then {reading.rationale}",
                               steps=res.steps + reading.steps)
        return past_bridge(question, self.reader.read(question, evidence), self.reader, rounds, evidence,
                           self.trust)[0]


def _same(a: str, b: str) -> bool:
    return fold(a) == fold(b)
