"""False-premise check: the question's presupposition about its subject, checked against the pack KG.

The paper leaves premise checking to the LLM (spec §2.7 S5/S6); offline there is no LLM, so the
presupposition is read from general English question grammar and looked up. The subject S is the
entity right after the auxiliary ("In which year did S receive …", "was S born") or a possessor
("S's wife"). A premise counts as *contradicted* only under a closed-world reading per relation —
the KG knows facts of that relation about S, and none fits:
- ordinal: "S's second O" / "did S receive his second O" while the KG links S to O fewer times;
- object: the question ties S to a named O, S has facts of a relation that reaches O, none reaches O;
- place: "which German city was S born in" while none of S's born-in places is located in Germany
  (via the pack's containment relations, two hops at most — found from the KG's shape, never by name:
  see `containment_relations`);
- missing relation: the verb or possessed noun names relations S has no fact of either way round (and no
  pack rule derives), though S is well covered (≥ MIN_FACTS facts) and entities of its kind have them;
- gender: "S's son" while every child of S is referred to as "she" in their documents.
Anything else is *unknown*: the check never claims a premise is false without a KG fact to show.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import ALIAS_SCORE, EntityLink
from engine.knowledge.records import Document, Rule
from engine.retrieval.embedder import Embedder
from engine.rules.walk import TIME_LIMIT_S, Deadline, walk_body
from engine.text import STOPWORDS, alpha_words
from engine.tools.offline_reader.sentences import content_stems, word_stem

MIN_FACTS = 5  # a subject the KG barely knows proves nothing by a missing fact
PEER_RELATIONS = 2  # relations two entities share to count as the same kind (a person, a rocket, a probe)
RELATION_SIM = 0.55  # MiniLM cosine for a word to name a relation …
RELATION_MARGIN = 0.15  # … and by this much more than the runner-up
TYPE_PREFIX = 4  # 'Germ-an' / 'Germ-any': a demonym shares this much of its country's name
AUXILIARIES = ("did", "does", "do", "was", "were", "is", "are", "has", "have", "had")
ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
GENDERED = {"son": "m", "daughter": "f", "wife": "f", "husband": "m", "brother": "m", "sister": "f",
            "father": "m", "mother": "f", "nephew": "m", "niece": "f", "uncle": "m", "aunt": "f"}
_AUX = re.compile(rf"\b(?:{'|'.join(AUXILIARIES)})\s+(?:the\s+)?", re.IGNORECASE)
_COORDINATION = re.compile(r"\s*(?:,|,?\s*(?:and|or|&))\s+(?:the\s+)?", re.IGNORECASE)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_LITERAL = re.compile(r"[\d\s.,:/-]+")
# a containment relation ('located_in', 'in_country', 'part_of'…) by its shape in the KG: see containment_relations
CONTAINMENT_FUNCTIONAL = 0.9  # share of heads with a single tail: a place lies in one larger place
CONTAINMENT_FAN_IN = 1.5  # heads per tail: many places lie in one
CONTAINMENT_HEADS_AS_VALUES = 0.5  # share of heads that other relations point at: cities people were born in
_HE = re.compile(r"\b(?:he|his|him|himself)\b", re.IGNORECASE)
_SHE = re.compile(r"\b(?:she|her|hers|herself)\b", re.IGNORECASE)


def containment_relations(kg: KnowledgeGraph) -> frozenset[str]:
    """Relations that place a thing inside a larger one, recognised by shape rather than by name: nearly
    functional (one larger place each), many heads per tail, and heads that are themselves the values of
    other relations (the cities people were born in, companies are based in). A pack without one skips
    the place check; 'doctoral_advisor' (1.3 heads per tail) and 'employer' (many tails) are not one."""
    heads: dict[str, dict[str, int]] = {}
    tails: dict[str, set[str]] = {}
    values_of: dict[str, set[str]] = {}  # entity → relations pointing at it
    for head, tail, data in kg.graph.edges(data=True):
        relation = data["triple"].relation
        heads.setdefault(relation, {}).setdefault(head, 0)
        heads[relation][head] += 1
        tails.setdefault(relation, set()).add(tail)
        values_of.setdefault(tail, set()).add(relation)
    found = set()
    for relation, counts in heads.items():
        functional = sum(1 for c in counts.values() if c == 1) / len(counts)
        fan_in = sum(counts.values()) / len(tails[relation])
        as_values = sum(1 for h in counts if values_of.get(h, set()) - {relation}) / len(counts)
        if functional >= CONTAINMENT_FUNCTIONAL and fan_in >= CONTAINMENT_FAN_IN \
                and as_values >= CONTAINMENT_HEADS_AS_VALUES:
            found.add(relation)
    return frozenset(found)


@dataclass(frozen=True)
class PremiseCheck:
    verdict: str  # contradicted | unknown
    reason: str
    subject: str = ""
    check: str = ""  # ordinal | object | type | missing_relation | gender

    @property
    def contradicted(self) -> bool:
        return self.verdict == "contradicted"


UNKNOWN = PremiseCheck("unknown", "no presupposition about a well-known subject could be checked")


@dataclass(frozen=True)
class Subject:
    """The entity a question's presupposition is about, where it sits, and whether it is 'S's …'."""

    link: EntityLink
    start: int
    end: int
    possessive: bool


def named_objects(question: str, links: Sequence[EntityLink], start: int, subject: str) -> list[EntityLink]:
    """Entities named after `start`: years and numbers are qualifiers, and an embedding link is too loose
    to build on."""
    found = [link for link in links if link.entity != subject and link.score >= ALIAS_SCORE
             and not _LITERAL.fullmatch(link.entity) and question.lower().find(link.mention.lower()) >= start]
    # 'Planck' inside 'Max Planck Medal' is part of that name, not a second object
    return [link for link in found if not any(link.mention.lower() in other.mention.lower() and other is not link
                                              for other in found)]


def verb_after(text: str, links: Sequence[EntityLink]) -> str:
    """The first content word of `text` that is not part of a linked name ('and T discover' → 'discover')."""
    for link in links:
        text = re.sub(re.escape(link.mention), " ", text, flags=re.IGNORECASE) if link.mention else text
    return next((w for w in alpha_words(text) if w.lower() not in STOPWORDS), "")


class PremiseChecker:
    def __init__(self, kg: KnowledgeGraph, embedder: Embedder, documents: Sequence[Document] = (),
                 rules: Sequence[Rule] = ()):
        self.kg = kg
        self.embedder = embedder
        self.rules = tuple(rules)
        self._documents = {d.title: d for d in documents}
        self.relations = kg.relations
        # one-word names that something is located in: what 'German', 'Norwegian' can refer to
        self._containment = containment_relations(kg)
        self._place_order = tuple(dict.fromkeys(v for _, v, d in kg.graph.edges(data=True)
                                                if d["triple"].relation in self._containment))
        self._places = frozenset(self._place_order)
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def check(self, question: str, links: Sequence[EntityLink], is_choice: bool) -> PremiseCheck:
        if is_choice:  # "A or B" questions presuppose only a disjunction
            return PremiseCheck("unknown", "a choice question presupposes only that one option fits")
        subject = self.subject(question, links)
        if subject is None or self.kg.graph.degree(subject.link.entity) < MIN_FACTS:
            return UNKNOWN
        after = question[subject.end:]
        objects = named_objects(question, links, subject.end, subject.link.entity)
        for found in (self._ordinal(subject, after, objects), self._object(question, subject, objects),
                      self._possessed(subject, after) if subject.possessive
                      else self._verb(question, subject, after, links)):
            if found is not None:
                return found
        return PremiseCheck("unknown", f"the KG does not contradict what the question assumes about "
                            f"{subject.link.entity}", subject.link.entity)

    # ---- the subject -----------------------------------------------------------------------------------

    def subject(self, question: str, links: Sequence[EntityLink]) -> Subject | None:
        """The entity right after an auxiliary ('did S …'), or a possessor ('S's …'); None if neither."""
        low = question.lower()
        for link in links:
            at = low.find(link.mention.lower())
            if at < 0 or link.entity not in self.kg.graph:
                continue
            end = at + len(link.mention)
            possessive = question[end:end + 2] in ("'s", "’s")
            after_aux = any(m.end() == at for m in _AUX.finditer(question))
            if after_aux or possessive:
                return Subject(link, at, end + (2 if possessive else 0), possessive)
        return None

    # ---- the checks ------------------------------------------------------------------------------------

    def _ordinal(self, subject: Subject, after: str, objects: Sequence[EntityLink]) -> PremiseCheck | None:
        words = [w.lower() for w in alpha_words(after)]
        k = next((ORDINALS[w] for w in words if w in ORDINALS), 0)
        if not k or not objects:
            return None
        target = objects[0].entity
        count = self._links(subject.link.entity, target)
        if count < k:
            return PremiseCheck("contradicted", f"the question assumes {subject.link.entity} is linked to {target} at "
                                f"least {k} times; the KG links them {count} time(s)", subject.link.entity, "ordinal")
        return None

    @staticmethod
    def _coordinated(question: str, subject: Subject, link: EntityLink) -> bool:
        """'S and O', 'S, O': both are what the question is about, and it ties neither to the other (issue 27)."""
        between = question[subject.end:question.lower().find(link.mention.lower(), subject.end)]
        return bool(_COORDINATION.fullmatch(between))

    def _object(self, question: str, subject: Subject, objects: Sequence[EntityLink]) -> PremiseCheck | None:
        entity = subject.link.entity
        own = {r for r in self.kg.relations_of(entity) if not r.startswith("~")}
        for link in objects:
            target = link.entity
            if target not in self.kg.graph or self._links(entity, target) or self._coordinated(question, subject, link):
                continue
            reaching = {r[1:] for r in self.kg.relations_of(target) if r.startswith("~")} & own
            if reaching:
                relation = next(r for r in self.relations if r in reaching)  # the KG's first, not A–Z
                known = ", ".join(self.kg.follow(entity, relation)[:4])
                return PremiseCheck("contradicted", f"the question ties {entity} to {target}, but the KG's "
                                    f"{relation.replace('_', ' ')} facts about {entity} name only {known}",
                                    entity, "object")
        return None

    def _verb(self, question: str, subject: Subject, after: str,
              links: Sequence[EntityLink]) -> PremiseCheck | None:
        word = verb_after(after, links)
        relation = self.relation_for(word)
        if not relation:
            return None
        missing = self._missing(subject.link.entity, self.relations_for(word))
        if missing is not None:
            return missing
        return self._typed(question, subject, relation, links)

    def _possessed(self, subject: Subject, after: str) -> PremiseCheck | None:
        words = [w for w in alpha_words(after)[:3] if w.lower() not in STOPWORDS and w.lower() not in ORDINALS]
        noun = words[0].lower() if words else ""
        relation = self.relation_for(noun)
        if not relation:
            return None
        entity = subject.link.entity
        return self._missing(entity, self.relations_for(noun)) or self._gender(entity, relation, noun)

    def _missing(self, entity: str, relations: Sequence[str]) -> PremiseCheck | None:
        """Contradicted only when no relation the word may name holds either way round (issue 27): 'was S
        founded' may be founded_by or founded_year, and 'Slovakia's capital' is 'Bratislava is_capital_of
        Slovakia'."""
        if any(self._has(entity, r) or self._derivable(entity, r) for r in relations) \
                or not self._peers_have(entity, relations):
            return None
        named = " or ".join(r.replace("_", " ") for r in relations)
        return PremiseCheck("contradicted", f"the question assumes a {named} fact about {entity}; the KG has "
                            f"{self.kg.graph.degree(entity)} facts about {entity} and none of that relation either way "
                            "round, and no rule derives one", entity, "missing_relation")

    def _typed(self, question: str, subject: Subject, relation: str,
               links: Sequence[EntityLink]) -> PremiseCheck | None:
        """'which German city' before the subject: a linked type word every value must lead to."""
        head = question[:subject.start]
        types = [link.entity for link in links if link.mention and link.mention in head and link.entity in self._places]
        types += [name for word in _CAPITALISED.findall(head)[1:] for name in [self._demonym(word)] if name]
        values = [v for v in self.kg.follow(subject.link.entity, relation)
                  if any(self.kg.follow(v, r) for r in self._containment)]
        for kind in types:
            if values and not any(self._reaches(v, kind) for v in values):
                return PremiseCheck("contradicted", f"the question assumes {subject.link.entity}'s "
                                    f"{relation.replace('_', ' ')} is in {kind}; the KG says {', '.join(values)}, "
                                    f"which it does not place in {kind}", subject.link.entity, "type")
        return None

    def _gender(self, entity: str, relation: str, noun: str) -> PremiseCheck | None:
        wanted = GENDERED.get(noun)
        values = self.kg.follow(entity, relation)
        genders = [self._gender_of(v) for v in values]
        if wanted and values and all(g and g != wanted for g in genders):
            return PremiseCheck("contradicted", f"the question asks for {entity}'s {noun}; the KG's "
                                f"{relation.replace('_', ' ')} facts name {', '.join(values)}, none of whom is "
                                f"referred to as {'he' if wanted == 'm' else 'she'}", entity, "gender")
        return None

    def _demonym(self, word: str) -> str:
        """'German' → Germany, 'Norwegian' → Norway: the one-word KG place sharing the longest prefix (≥ 4)."""
        best, length = "", TYPE_PREFIX - 1
        for name in (n for n in self._place_order if " " not in n):  # ties: the KG's first, not A–Z
            shared = len(os.path.commonprefix([word.lower(), name.lower()]))
            if shared > length and name.lower() != word.lower():
                best, length = name, shared
        return best

    # ---- KG helpers ------------------------------------------------------------------------------------

    def _has(self, entity: str, relation: str) -> bool:
        return bool(self.kg.follow(entity, relation) or self.kg.follow(entity, "~" + relation))

    def _peers_have(self, entity: str, relations: Sequence[str]) -> bool:
        """Whether any entity of the subject's kind — sharing PEER_RELATIONS of its relations — has one of
        `relations`: a relation nothing like the subject ever has is not what the question's word means
        for it ('did the Space Shuttle fly' is not flew_past, a probe's relation; issue 27)."""
        own = self._relation_sets.get(entity, frozenset())
        wanted = {*relations, *("~" + r for r in relations)}
        return any(len(own & held) >= PEER_RELATIONS and held & wanted
                   for peer, held in self._relation_sets.items() if peer != entity)

    @cached_property
    def _relation_sets(self) -> dict[str, frozenset[str]]:
        """Each entity's relations, both ways round (`~` incoming), computed once per KG."""
        return {entity: frozenset(self.kg.relations_of(entity)) for entity in self.kg.graph}

    def _links(self, a: str, b: str) -> int:
        return self.kg.graph.number_of_edges(a, b) + self.kg.graph.number_of_edges(b, a)

    def _reaches(self, start: str, target: str, hops: int = 2) -> bool:
        frontier = {start}
        for _ in range(hops + 1):
            if target in frontier:
                return True
            frontier = {v for u in frontier for v in self.kg.graph.successors(u)} if frontier else set()
        return False

    def _derivable(self, entity: str, relation: str) -> bool:
        """A pack rule with this head whose body path exists from the entity (spec: rules close the KG), walked
        in bounded time (engine.rules.walk)."""
        deadline = Deadline.after(TIME_LIMIT_S)
        return any(walk_body(self.kg.follow, entity, rule.body, deadline).counts
                   for rule in self.rules if rule.head == relation)

    def _gender_of(self, name: str) -> str:
        doc = self._documents.get(name)
        if doc is None:
            return ""
        he, she = len(_HE.findall(doc.text)), len(_SHE.findall(doc.text))
        return "m" if he > 2 * she and he else "f" if she > 2 * he and she else ""

    def relations_for(self, word: str) -> tuple[str, ...]:
        """Every KG relation the word may name: all that share its stem ('found' → founded_by, founded_year),
        else the one MiniLM picks."""
        return self._by_stem(word) or tuple(r for r in [self.relation_for(word)] if r)

    def _by_stem(self, word: str) -> tuple[str, ...]:
        if not word or word.lower() in STOPWORDS:
            return ()
        stem = word_stem(word)
        return tuple(r for r in self.relations if stem in content_stems(r.replace("_", " ")))

    def relation_for(self, word: str) -> str:
        """The KG relation a verb or noun names: by stem ('discover' → discovered), else by MiniLM."""
        if not word or word.lower() in STOPWORDS:
            return ""
        by_stem = self._by_stem(word)
        if by_stem:
            return min(by_stem, key=lambda r: len(content_stems(r.replace("_", " "))))
        sims = self._relation_vectors() @ self.embedder.encode_queries([word.lower()])[0]  # (r,)
        order = np.argsort(-sims)
        best = float(sims[order[0]])
        second = float(sims[order[1]]) if len(order) > 1 else 0.0
        return self.relations[int(order[0])] if best >= RELATION_SIM and best - second >= RELATION_MARGIN else ""

    def _relation_vectors(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                self._vectors = self.embedder.encode([r.replace("_", " ") for r in self.relations])  # (r, d)
            return self._vectors
