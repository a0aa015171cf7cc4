"""A direct KG answer: the pack's analogue of CRAG's mock-API result for simple and set questions.

CRAG's KG module turns the question into an API call whose result often *is* the answer (spec §2.6).
Offline the same look-up is read from general question grammar, and only in three shapes whose
direction is unambiguous:
- "Which/What/Who/Where … did S (and T) VERB [in YEAR]?" → the tails of S's VERB-relation (common to
  all subjects); not when S also has that relation incoming (supervised vs supervisor) or the question
  names an object after S (then it asks about a qualifier of that fact);
- "Who/What was S's NOUN?" → the tails of S's NOUN-relation;
- "Who VERBed O [in YEAR]?" → the heads reaching O by that relation (or by the only relation that
  reaches O), when O is only ever a tail of it.
A year in the question must match the facts' time; ordinals ("second") are left to the reader. More
than MAX_VALUES values means the question is not that specific: no answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.linking import EntityLink
from engine.knowledge.records import Triple
from engine.methods.hybrid.premise import ORDINALS, PremiseChecker, Subject, named_objects
from engine.text import STOPWORDS, YEAR_DIGITS
from engine.tools.offline_reader.sentences import content_stems, word_stem

MAX_VALUES = 5
_YEAR = re.compile(rf"\b({YEAR_DIGITS})\b")  # in a question, a word of its own
_ASKS_VALUE = re.compile(r"^\s*(?:which|what|who|whom|where)\b", re.IGNORECASE)
_WHO_VERB = re.compile(r"^\s*who\s+([a-z]+)\b", re.IGNORECASE)
_WHO_WAS = re.compile(r"^\s*(?:who|what|which\s+\w+)\s+(?:was|is|were|are)\s+(?:the\s+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class KgAnswer:
    answer: str
    facts: tuple[Triple, ...]
    reason: str


def kg_answer(question: str, links: Sequence[EntityLink], checker: PremiseChecker) -> KgAnswer | None:
    words = question.lower().split()
    if any(w.strip("?,.") in ORDINALS for w in words) or not _ASKS_VALUE.match(question):
        return None
    year = (_YEAR.findall(question) or [""])[0]
    subject = checker.subject(question, links)
    if subject is not None and subject.possessive:
        return _possessed(question, subject, checker)
    if subject is not None:
        return _subject_verb(question, subject, links, checker, year)
    return _who_verb(question, links, checker, year)


def _possessed(question: str, subject: Subject, checker: PremiseChecker) -> KgAnswer | None:
    if not _WHO_WAS.match(question[:subject.start]):  # "… the country whose capital is S's birthplace"
        return None
    words = [w for w in re.findall(r"[A-Za-z-]+", question[subject.end:]) if w.lower() not in STOPWORDS]
    relation = checker.relation_for(words[0]) if words else ""
    label = content_stems(relation.replace("_", " "))
    if not relation or any(word_stem(w) not in label for w in words[1:]):
        return None  # "Where was S's advisor born?" asks one hop further
    facts = _forward(checker, [subject.link.entity], relation, "")
    return _answer(facts, "tail", f"{subject.link.entity}'s {relation.replace('_', ' ')} in the pack KG")


def _subject_verb(question: str, subject: Subject, links: Sequence[EntityLink], checker: PremiseChecker,
                  year: str) -> KgAnswer | None:
    after = question[subject.end:]
    joined = [link for link in links if re.match(rf"^\s*and\s+{re.escape(link.mention)}\b", after, re.IGNORECASE)]
    verb = re.sub(rf"^\s*and\s+{re.escape(joined[0].mention)}", "", after, flags=re.IGNORECASE) if joined else after
    first = (re.findall(r"[A-Za-z-]+", verb) or [""])[0]
    if first.lower() in STOPWORDS:  # "was S when he was born": the predicate is not right after S
        return None
    relation = checker.relation_for(first)
    subjects = [subject.link.entity] + [link.entity for link in joined]
    objects = [o for o in named_objects(question, links, subject.end, subject.link.entity) if o.entity not in subjects]
    if not relation or objects or any(checker.kg.follow(s, "~" + relation) for s in subjects):
        return None
    facts = _forward(checker, subjects, relation, year)
    reason = f"{' and '.join(subjects)} –{relation}→ in the pack KG" + (f" ({year})" if year else "")
    return _answer(facts, "tail", reason)


def _who_verb(question: str, links: Sequence[EntityLink], checker: PremiseChecker, year: str) -> KgAnswer | None:
    match = _WHO_VERB.match(question)
    objects = named_objects(question, links, match.end() if match else 0, "")
    if match is None or len(objects) != 1:
        return None
    between = question[match.end():question.lower().find(objects[0].mention.lower())]
    if any(w.lower() not in STOPWORDS and w.lower() != "first" for w in re.findall(r"[A-Za-z-]+", between)):
        return None  # "who supervised the doctorate of the physicist who …": O is not the verb's object
    target = objects[0].entity
    reaching = sorted({r[1:] for r in checker.kg.relations_of(target) if r.startswith("~")})
    relation = checker.relation_for(match.group(1)) or (reaching[0] if len(reaching) == 1 else "")
    if relation not in reaching or checker.kg.follow(target, relation):
        return None
    facts = [t for t in _incoming(checker, target, relation) if not year or t.time == year]
    return _answer(facts, "head", f"–{relation}→ {target} in the pack KG" + (f" ({year})" if year else ""))


def _forward(checker: PremiseChecker, subjects: Sequence[str], relation: str, year: str) -> list[Triple]:
    if not relation:
        return []
    per_subject = [[t for t in checker.kg.facts_about(s, limit=500) if t.head == s and t.relation == relation
                    and (not year or t.time == year)] for s in subjects]
    common = set.intersection(*({t.tail for t in facts} for facts in per_subject)) if per_subject else set()
    return [t for t in per_subject[0] if t.tail in common] if per_subject else []


def _incoming(checker: PremiseChecker, target: str, relation: str) -> list[Triple]:
    return [t for t in checker.kg.facts_about(target, limit=500) if t.tail == target and t.relation == relation]


def _answer(facts: Sequence[Triple], side: str, reason: str) -> KgAnswer | None:
    values = list(dict.fromkeys(t.tail if side == "tail" else t.head for t in facts))
    if not values or len(values) > MAX_VALUES:
        return None
    return KgAnswer(", ".join(values), tuple(facts), reason)
