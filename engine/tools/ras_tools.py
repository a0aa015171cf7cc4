"""RAS's LLM-shaped tools, each with an LLM and an offline twin: planner, text-to-triples, answerer.

Prompts: prompts/ras_plan.txt, ras_t2t.txt, ras_answer.txt (spec §2.3). Every parser is tolerant and
falls back with an `error` step, never an exception.

[decide] choices that live here:
- planner: a reply without a control token falls back to the question as sub-query in round 0 and to
  [SUFFICIENT] later (never loop on garbage); a repeated sub-query counts as [SUFFICIENT].
- t2t parsing: one malformed triple drops only itself, not the round (spec §8 notes the [code] loses the
  whole round's graph).
- offline t2t: pack entity mentions per sentence (names + aliases, pronouns resolved to the page's own
  entity or the last subject, years as literals); the first mention is the subject; each later mention
  is an object whose relation phrase is the text since the previous mention (a list ', and' reuses the
  previous phrase); the phrase maps onto the pack's relation vocabulary by MiniLM cosine >= REL_THRESHOLD,
  else a generic verb-phrase relation; at most MAX_TRIPLES_PER_CHUNK per chunk.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import alias_table, entity_linker
from engine.graph.query_graph import GraphTriple, QueryGraph, fold
from engine.knowledge.records import Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.retrieval.embedder import Embedder
from engine.tools.base import IDK, QuestionClassifier, Reader, Reading
from engine.tools.bundle import ToolBundle
from engine.tools.llm_call import call_model, error_step, one_line, shorten
from engine.tools.prompts import fill, load_prompt
from engine.trace import Hit, Step

NO_RETRIEVAL, SUBQ, SUFFICIENT = "[NO_RETRIEVAL]", "[SUBQ]", "[SUFFICIENT]"
REL_THRESHOLD = 0.5
MAX_TRIPLES_PER_CHUNK = 12
MAX_PHRASE_WORDS = 4
MAX_PASSAGE_CHARS = 2000
PLAN_SETTINGS = GenerationSettings(max_new_tokens=64)
T2T_SETTINGS = GenerationSettings(max_new_tokens=200)
ANSWER_SETTINGS = GenerationSettings(max_new_tokens=64)
_TRIPLE = re.compile(r"\(?\s*S>\s*([^|()]*?)\s*\|\s*P>\s*([^|()]*?)\s*\|\s*O>\s*([^|()]*?)\s*(?:\)|$|,\s*\(|\n)",
                     re.IGNORECASE)
_TOKEN = re.compile(r"\[\s*(NO_RETRIEVAL|SUBQ|SUFFICIENT)\s*\]", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_YEAR = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)")
_PRONOUN = re.compile(r"\b(he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
_LIST_GAP = re.compile(r"^\W*(?:,|and|or|,\s*and|,\s*or)?\W*$", re.IGNORECASE)
_STOP = {"the", "a", "an", "who", "which", "that", "then", "also", "later", "he", "she", "it", "they", "his",
         "her", "its", "their", "where", "when"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


# ---- history ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    """One finished round: its sub-query and the triples extracted from its chunks."""

    subquery: str
    triples: tuple[GraphTriple, ...]


def render_history(rounds: Sequence[Round], subq_tag: str = SUBQ,
                   info_tag: str = "Retrieved Graph Information:") -> str:
    """Spec §2.1 history block; g_j as a Python list repr of triple strings ([code])."""
    return "".join(f"{subq_tag} {r.subquery}\n{info_tag} {[t.render() for t in r.triples]!r}\n" for r in rounds)


# ---- planner ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    action: str  # no_retrieval | subq | sufficient
    subquery: str = ""
    reason: str = ""
    reading: Reading | None = None  # offline: the reading that judged the graph sufficient
    steps: tuple[Step, ...] = ()


def parse_plan(text: str) -> tuple[str, str, bool]:
    """(action, sub-query, kept the format). The first control token wins; case-insensitive ([code])."""
    body = text or ""
    match = _TOKEN.search(body)
    if not match:
        return "", "", False
    token = match.group(1).upper()
    if token == "SUBQ":
        rest = body[match.end():].strip()
        rest = _TOKEN.split(rest)[0] if _TOKEN.search(rest) else rest
        query = one_line(rest.splitlines()[0] if rest else "").strip(" :-\"'")
        return ("subq", query, True) if query else ("", "", False)
    return ("sufficient" if token == "SUFFICIENT" else "no_retrieval"), "", True


class Planner(ABC):
    @abstractmethod
    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan: ...


@dataclass(frozen=True)
class LlmPlanner(Planner):
    chat: ChatModel
    settings: GenerationSettings = PLAN_SETTINGS

    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan:
        history = render_history(rounds, "[PREV_SUBQ]", "[PREV_GRAPH_INFO]")
        prompt = fill(load_prompt("ras_plan"), history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="planner")
        action, query, ok = parse_plan(reply.text)
        steps = reply.steps
        if action == "no_retrieval" and rounds:
            action, ok = "", False  # [NO_RETRIEVAL] is valid only as the first plan (spec §2.2)
        if not ok:
            action, query = ("subq", question) if not rounds else ("sufficient", "")
            if not reply.failed:
                then = "retrieving for the question itself" if not rounds else "answering from the graph so far"
                steps += (error_step("planner", f"planner output had no usable [SUBQ] q / [SUFFICIENT] / "
                                     f"[NO_RETRIEVAL]; got {shorten(reply.text)}; {then}"),)
            return Plan(action, query, "fallback", steps=steps)
        if action == "subq" and fold(query) in {fold(r.subquery) for r in rounds}:
            steps += (error_step("planner", f"planner repeated the sub-query {query!r}; answering instead"),)
            return Plan("sufficient", "", "repeated sub-query", steps=steps)
        return Plan(action, query, "model", steps=steps)


@dataclass(frozen=True)
class OfflinePlanner(Planner):
    """Round 0: the question. Then [SUFFICIENT] if the reader answers confidently from the graph, else
    the bridge entity just found + the part of the question its entities do not cover."""

    reader: Reader
    kg: KnowledgeGraph
    embedder: Embedder
    sufficiency: float
    classifier: QuestionClassifier | None = None

    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan:
        if not rounds:
            return Plan("subq", question, "the first sub-query is the question itself (spec §2.8)")
        reading = self.reader.read(question, evidence, graph.facts())
        if not reading.refused and reading.confidence >= self.sufficiency and not self._echoes(question, reading):
            return Plan("sufficient", "", f"the reader answers {reading.answer!r} with confidence "
                        f"{reading.confidence:.2f} >= {self.sufficiency}", reading, reading.steps)
        bridge = self._bridge(question, rounds, graph)
        if not bridge:
            return Plan("sufficient", "", "no new bridge entity to follow; answering from the graph so far",
                        reading, reading.steps)
        rest = unresolved(question, self._mentions(question, graph))
        return Plan("subq", f"{bridge} {rest}".strip(), f"bridge entity {bridge!r} found in round "
                    f"{len(rounds) - 1}", reading, reading.steps)

    def _mentions(self, question: str, graph: QueryGraph) -> list[str]:
        found = [link.mention for link in entity_linker(self.kg, self.embedder).link(question)]
        low = question.lower()
        found += [n for n in graph.nodes.values() if len(n) > 2 and re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)]
        return list(dict.fromkeys(found))

    def _bridge(self, question: str, rounds: Sequence[Round], graph: QueryGraph) -> str:
        mentions = {fold(m) for m in self._mentions(question, graph)}
        anchors = {graph.canonical(m)[0] for m in self._mentions(question, graph)}
        asked = {fold(r.subquery.split(" ")[0]) for r in rounds} | {fold(r.subquery) for r in rounds}
        used = " ".join(r.subquery.lower() for r in rounds)
        options: list[tuple[str, str]] = []
        for t in rounds[-1].triples:
            for end, other in ((t.head, t.tail), (t.tail, t.head)):
                if end in anchors and fold(other) not in mentions and other.lower() not in used \
                        and fold(other) not in asked and not _YEAR.fullmatch(other):
                    options.append((other, t.relation))
        if not options:
            return ""
        rels = sorted({r for _, r in options})
        vecs = self.embedder.encode_queries([question, *[r.replace("_", " ") for r in rels]])
        sim = dict(zip(rels, (vecs[1:] @ vecs[0]).tolist()))
        return max(options, key=lambda o: sim[o[1]])[0]

    def _echoes(self, question: str, reading: Reading) -> bool:
        if reading.answer.lower() not in question.lower():
            return False
        kind = self.classifier.classify(question).kind if self.classifier else ""
        return kind not in ("choice", "yes_no")


def unresolved(question: str, mentions: Sequence[str]) -> str:
    """The question without the entity mentions it was linked by (the resolved part)."""
    text = question
    for m in sorted(mentions, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(m)}(?:['’]s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return one_line(text).strip(" ?.,") + ("?" if question.strip().endswith("?") else "")


# ---- text to triples -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extraction:
    triples: tuple[Triple, ...]
    steps: tuple[Step, ...] = ()


def parse_triples(text: str) -> tuple[tuple[Triple, ...], int]:
    """`(S> s| P> p| O> o)` pieces, and how many `S>` pieces could not be read."""
    body = text or ""
    found = [Triple(s.strip(), p.strip(), o.strip().rstrip(",")) for s, p, o in _TRIPLE.findall(body)]
    good = tuple(dict.fromkeys(t for t in found if t.head and t.relation and t.tail))
    return good, max(len(re.findall(r"S>", body, re.IGNORECASE)) - len(good), 0)


class Extractor(ABC):
    @abstractmethod
    def extract(self, hit: Hit) -> Extraction: ...


@dataclass(frozen=True)
class LlmExtractor(Extractor):
    chat: ChatModel
    settings: GenerationSettings = T2T_SETTINGS

    def extract(self, hit: Hit) -> Extraction:
        passage = one_line(f"{hit.title}. {hit.text}")[:MAX_PASSAGE_CHARS]
        prompt = fill(load_prompt("ras_t2t"), passage=passage)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="text-to-triples")
        triples, bad = parse_triples(reply.text)
        steps = reply.steps
        if (bad or not triples) and not reply.failed:
            steps += (error_step("text-to-triples", f"{bad} malformed triple(s), {len(triples)} read from chunk "
                                 f"{hit.chunk_id}; got {shorten(reply.text)}; kept the well-formed ones"),)
        return Extraction(triples[:MAX_TRIPLES_PER_CHUNK], steps)


class _Mentions:
    """Pack names and aliases → canonical, as one regex (longest first)."""

    def __init__(self, kg: KnowledgeGraph):
        table = {e.lower(): e for e in kg.entities if len(e) > 2}
        for alias, name in alias_table(kg.entities).items():
            table.setdefault(alias.lower(), name)
        self.canonical = table
        names = sorted(table, key=len, reverse=True)
        self.pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(n) for n in names) + r")(?!\w)",
                                  re.IGNORECASE) if names else None


_MENTIONS: dict[int, tuple[KnowledgeGraph, _Mentions]] = {}
_LOCK = threading.Lock()


def _mentions_for(kg: KnowledgeGraph) -> _Mentions:
    with _LOCK:
        got = _MENTIONS.get(id(kg))
        if got is None or got[0] is not kg:
            got = (kg, _Mentions(kg))
            _MENTIONS[id(kg)] = got
        return got[1]


@dataclass
class OfflineExtractor(Extractor):
    kg: KnowledgeGraph
    embedder: Embedder
    relations: Sequence[str]
    threshold: float = REL_THRESHOLD
    cap: int = MAX_TRIPLES_PER_CHUNK
    _vocab: np.ndarray | None = field(default=None, repr=False)

    def extract(self, hit: Hit) -> Extraction:
        mentions = _mentions_for(self.kg)
        own = mentions.canonical.get(fold(hit.title).lower()) or mentions.canonical.get(hit.title.lower())
        raw: list[tuple[str, str, str, bool]] = []  # head, phrase, tail, tail is a year
        last_subject = own
        for sentence in _SENTENCE.split(hit.text):
            items = _sentence_mentions(sentence, mentions, own or last_subject)
            if len(items) < 2:
                continue
            subject = items[0]
            if subject[3]:
                continue  # a sentence led by a year has no subject entity
            last_subject = subject[2]
            phrase = ""
            for prev, cur in zip(items, items[1:]):
                gap = sentence[prev[1]:cur[0]]
                if not (_LIST_GAP.match(gap) and phrase):
                    phrase = gap
                if cur[2] != subject[2]:
                    raw.append((subject[2], phrase, cur[2], cur[3]))
        return Extraction(self._relations(raw)[: self.cap])

    def _relations(self, raw: list[tuple[str, str, str, bool]]) -> tuple[Triple, ...]:
        if not raw:
            return ()
        phrases = [_clean(p) for _, p, _, _ in raw]
        vocab = self._vocab_vectors()
        uniq = sorted({p for p in phrases if p})
        sims = dict(zip(uniq, self.embedder.encode_queries(uniq) @ vocab.T)) if uniq else {}
        out = []
        for (head, _, tail, year), phrase in zip(raw, phrases):
            if not phrase:
                continue
            row = sims[phrase]
            allowed = [i for i, r in enumerate(self.relations) if r.endswith("_year") == year]
            best = max(allowed, key=lambda i: row[i]) if allowed else -1
            if best >= 0 and row[best] >= self.threshold:
                relation = self.relations[best]
            elif year:
                continue  # a year with no year-like relation is noise
            else:
                relation = "_".join(phrase.split()[-MAX_PHRASE_WORDS:])
            out.append(Triple(head, relation, tail))
        return tuple(dict.fromkeys(out))

    def _vocab_vectors(self) -> np.ndarray:
        if self._vocab is None:
            self._vocab = self.embedder.encode_queries([r.replace("_", " ") for r in self.relations]) \
                if self.relations else np.zeros((0, 1))
        return self._vocab


def _sentence_mentions(sentence: str, mentions: _Mentions, referent: str | None) -> list[tuple[int, int, str, bool]]:
    """(start, end, canonical name, is a year) in order; a pronoun before the first name is the referent."""
    items: list[tuple[int, int, str, bool]] = []
    if mentions.pattern is not None:
        items += [(m.start(), m.end(), mentions.canonical[m.group(0).lower()],
                   bool(_YEAR.fullmatch(m.group(0)))) for m in mentions.pattern.finditer(sentence)]
    taken = [(a, b) for a, b, _, _ in items]
    items += [(m.start(), m.end(), m.group(0), True) for m in _YEAR.finditer(sentence)
              if not any(a <= m.start() < b for a, b in taken)]
    items.sort()
    names = [x for x in items if not x[3]]
    pronoun = _PRONOUN.search(sentence)
    if referent and pronoun and (not names or pronoun.start() < names[0][0]):
        items.append((pronoun.start(), pronoun.end(), referent, False))
        items.sort()
        names = [x for x in items if not x[3]]
    # years before the subject date an event, not the subject: drop them
    return [x for x in items if not names or x[0] >= names[0][0]]


def _clean(phrase: str) -> str:
    words = [w.lower() for w in _WORD.findall(phrase.split(";")[-1])]
    words = [w for w in words if w not in _STOP]
    return " ".join(words[-6:])


# ---- answerer --------------------------------------------------------------------------------------


class Answerer(ABC):
    @abstractmethod
    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading: ...


@dataclass(frozen=True)
class LlmAnswerer(Answerer):
    chat: ChatModel
    settings: GenerationSettings = ANSWER_SETTINGS

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        history = render_history(rounds) if rounds else f"{NO_RETRIEVAL}\n"
        prompt = fill(load_prompt("ras_answer"), history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="answerer")
        text = one_line(reply.text.strip().splitlines()[0] if reply.text.strip() else "")
        text = re.sub(r"^(?:answer\s*:\s*)", "", text, flags=re.IGNORECASE).strip()
        if not text:
            steps = reply.steps + (() if reply.failed else (error_step("answerer", "the answerer gave no text"),))
            return Reading(IDK, refused=True, rationale="the model gave no answer", steps=steps)
        cited = tuple(dict.fromkeys(t.doc_id for t in graph.triples if t.doc_id and text.lower() in
                                    f"{t.head} {t.tail}".lower()))
        return Reading(text, cited or tuple(dict.fromkeys(h.doc_id for h in evidence))[:1], 0.5,
                       rationale=one_line(reply.text)[:500], steps=reply.steps)


@dataclass(frozen=True)
class OfflineAnswerer(Answerer):
    """The extractive reader over the graph's triples (as facts) and the chunks that supported them."""

    reader: Reader

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        return self.reader.read(question, evidence, graph.facts())


# ---- bundle ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RasTools:
    planner: Planner
    extractor: Extractor
    answerer: Answerer


def ras_tools(bundle: ToolBundle, embedder: Embedder, relations: Sequence[str], sufficiency: float) -> RasTools:
    """The RAS tools in the bundle's form (LLM or offline); the method never looks at the backend."""
    return bundle.twin(
        lambda chat: RasTools(LlmPlanner(chat), LlmExtractor(chat), LlmAnswerer(chat)),
        lambda: RasTools(OfflinePlanner(bundle.reader, bundle.kg, embedder, sufficiency, bundle.classifier),
                         OfflineExtractor(bundle.kg, embedder, tuple(sorted(relations))),
                         OfflineAnswerer(bundle.reader)),
    )
