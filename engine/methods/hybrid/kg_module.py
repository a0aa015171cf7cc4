"""The KG module (spec §2.6): entities from the question → capped look-ups in the pack KG (CRAG's mock API).

Entities come from the LLM (the question and its query time → the flat JSON of [C]'s domain keys,
prompts/entities.txt, parsed with `json.loads` and a fallback scan for `{…}`, then for `"name_key":
"value"` pairs; for small models (issue 23) three demonstrations (prompts/entity_examples.txt) come as
user turns answered by assistant turns — a 135M model copied the key list of a one-turn prompt — and
the reply stops at its first '}', the end of a flat object) or, offline, from the
pack lexicon through the `EntityLinker`; LLM names are mapped onto the pack's names by the same
linker. The aspect, metric and time keys are shown in the trace's llm_call but not used: the pack KG
is looked up by name (below), not through per-domain mock-API routes. Decision on spec §8.8: the look-up is the pack
KG's facts about each entity (both directions), ranked by word overlap with the question, at most
`max_facts` in all, and where the KG has no fact of a relation about an entity the pack's rules
derive one — the rule that reads most like the question first (marked with the rule in the trace);
the block handed to the reasoner is cut at 1000 characters (spec §2.7 U2),
while the trace keeps every fact found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.prompting import question_pieces
from engine.retrieval.embedder import Embedder
from engine.rules.walk import TIME_LIMIT_S, Deadline, walk_body
from engine.tools.llm_call import fill_with_segments
from engine.tools.offline_reader import fact_sentence
from engine.tools.offline_reader.sentences import content_stems
from engine.tools.prompts import PromptFolder
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)

KG_BLOCK_CHARS = 1000
MAX_DERIVED = 3  # tails one rule may derive for one entity
# [C]: 512 tokens; a flat object needs fewer, and it ends at its first '}' (put back by the parser)
ENTITY_SETTINGS = GenerationSettings(max_new_tokens=64, temperature=0.1, stop=("}",))
_OBJECT = re.compile(r"\{[^{}]*\}")
NAME_KEYS = ("main_entity", "market_identifier", "movie_name", "person", "artist_name", "song_name", "tournament",
             "team")  # spec §2.6 keys whose values name entities
_PAIR = re.compile(rf'"?({"|".join(NAME_KEYS)})"?\s*:\s*"([^"\n]+)"')
NOT_NAMES = frozenset({"domain", "metric", "datetime", "year", "sport_type", "movie_aspect", "person_aspect",
                       "artist_aspect", "song_aspect"})  # spec §2.6 keys whose values name no entity


@dataclass(frozen=True)
class KgLookup:
    entities: tuple[str, ...]  # pack names, in the order found
    mentions: tuple[str, ...]  # what the question (or the LLM) called them
    facts: tuple[Triple, ...]  # ranked, capped
    steps: tuple[Step, ...] = ()
    derived: tuple[tuple[Triple, str], ...] = ()  # (fact, rule id) for facts a pack rule derived

    def block(self, limit: int = KG_BLOCK_CHARS) -> tuple[str, bool]:
        """U2 of the reasoning prompt: '### KG Ref i:' lines cut at `limit` chars; True when cut."""
        text = "\n".join(f"### KG Ref {n}: {fact_sentence(t)}" for n, t in enumerate(self.facts, start=1))
        return (text[:limit], True) if len(text) > limit else (text, False)


def lookup(question: str, entities: Sequence[str], mentions: Sequence[str], kg: KnowledgeGraph,
           max_facts: int, steps: tuple[Step, ...] = (), rules: Sequence[Rule] = ()) -> KgLookup:
    """Every fact about the entities (plus what the pack's rules derive where the KG has no fact of that
    relation), ranked by overlap with the question's words, cut to `max_facts`."""
    wanted = content_stems(question)
    derived = tuple((t, rule_id) for entity in entities for t, rule_id in derive(entity, kg, rules))
    facts: dict[Triple, float] = {}
    for triple in [t for entity in entities for t in kg.facts_about(entity, limit=200)] + [t for t, _ in derived]:
        overlap = len(wanted & content_stems(f"{triple.relation.replace('_', ' ')} {triple.tail} {triple.head}"))
        facts[triple] = max(facts.get(triple, 0.0), float(overlap))
    ranked = sorted(facts, key=lambda t: -facts[t])[:max_facts]  # stable: ties keep the KG's order
    kept = set(ranked)
    return KgLookup(tuple(entities), tuple(mentions), tuple(ranked), steps, tuple(d for d in derived if d[0] in kept))


def derive(entity: str, kg: KnowledgeGraph, rules: Sequence[Rule]) -> list[tuple[Triple, str]]:
    """head(entity, y) by the first rule (in the given order) whose body path leads from the entity to y,
    where the KG has no head fact about the entity (rules fill gaps, they never overrule a stated fact). The
    bodies are walked in bounded time (engine.rules.walk): a walk the time limit cuts derives nothing."""
    found: dict[Triple, str] = {}
    derived_heads: set[str] = set()
    deadline = Deadline.after(TIME_LIMIT_S)
    for rule in rules:
        if rule.head in derived_heads or kg.follow(entity, rule.head):
            continue
        frontier = list(walk_body(kg.follow, entity, rule.body, deadline).counts)
        for tail in frontier[:MAX_DERIVED]:
            found.setdefault(Triple(entity, rule.head, tail), rule.id)
        if frontier:
            derived_heads.add(rule.head)
    return list(found.items())


def rules_for(question: str, rules: Sequence[Rule], embedder: Embedder) -> list[Rule]:
    """Rules by MiniLM similarity of their sentence to the question: when two rules derive different values
    ('citizen by birth' vs 'at the end of his life'), the one that reads like the question wins."""
    if not rules:
        return []
    vectors = embedder.encode_queries([question, *(r.describe() for r in rules)])  # (1 + r, d)
    sims = vectors[1:] @ vectors[0]
    return [rules[i] for i in sorted(range(len(rules)), key=lambda i: (-float(sims[i]), -rules[i].confidence))]


def entity_messages(question: str, query_time: str) -> tuple[tuple[Message, ...], tuple[PromptSegment, ...]]:
    """The instruction, each demonstration as a user turn answered by an assistant turn, then the query."""
    shots = []
    for block in PROMPTS.load("entity_examples").strip().split("\n\n"):  # the question's lines, then its JSON
        lines = block.strip().splitlines()
        shots += [Message("user", "\n".join(lines[:-1])), Message("assistant", lines[-1])]
    user, segments = fill_with_segments("Query time: {query_time}\nQuestion: {question}",
                                        {"question": question_pieces(question)},
                                        query_time=query_time or "unknown", question=question)
    return (Message("system", PROMPTS.load("entities").strip()), *shots, Message("user", user)), segments


def parse_entities(text: str) -> tuple[str, ...]:
    """String values of the entity JSON (flat object or list), `json.loads` first, then any `{…}` in it, then
    `"main_entity": "…"`-style pairs of the name keys; an object cut at its '}' (the stop string) is closed."""
    text = str(text or "").strip()
    text += "}" if text.count("{") > text.count("}") else ""
    for raw in [text, *_OBJECT.findall(text)]:
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict):
            values = [v for k, v in data.items() if k not in NOT_NAMES]
        elif isinstance(data, list):
            values = data
        else:
            continue
        names = [x.strip() for v in values for x in (v if isinstance(v, list) else [v])
                 if isinstance(x, str) and x.strip()]
        if names:
            return tuple(dict.fromkeys(names))
    return tuple(dict.fromkeys(value.strip() for _, value in _PAIR.findall(text) if value.strip()))
