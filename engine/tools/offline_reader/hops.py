"""Multi-hop questions: the relational phrase ('X's doctoral advisor') to answer on its own first."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.text import STOPWORDS
from engine.tools.offline_classifier import DATE_NOUNS, PERSON_NOUNS, PLACE_NOUNS
from engine.tools.offline_reader.context import Context
from engine.tools.offline_reader.lexicon import PARTICIPLES, lower_words
from engine.tools.offline_reader.names import Gazetteer, named_spans
from engine.tools.offline_reader.sentences import as_sentence

# general English nouns for a person in relation to another (the classifier's PERSON_NOUNS name people by
# what they are); a pack's own relations ('chief_executive' → executive) are added from its KG
_RELATIONAL_PERSONS = PERSON_NOUNS | frozenset(
    "advisor adviser supervisor student pupil teacher mentor nephew niece uncle aunt cousin "
    "grandfather grandmother grandson granddaughter spouse partner successor predecessor colleague "
    "collaborator owner discoverer creator".split()
)
_RELATIONAL_PLACES = PLACE_NOUNS | frozenset("birthplace hometown headquarters".split())
_RELATIONAL_THINGS = frozenset(
    "company organisation organization band team group element institution university laboratory "
    "film book album song novel school employer label publisher".split()
)
_POSSESSIVE_PLACES = frozenset("birthplace hometown headquarters".split())
_FRAMING_WORDS = frozenset("name names called full title kind type sort".split())


@dataclass(frozen=True)
class Hop:
    """A relational phrase in the question, answered on its own before the rest of the question."""

    phrase: str  # text to replace in the question, e.g. "Werner Heisenberg's doctoral advisor"
    sub_question: str
    kind: str


def find_hop(context: Context) -> Hop | None:
    return question_hop(context.question, context.gazetteer)


def question_hop(question: str, gazetteer: Gazetteer) -> Hop | None:
    """The first relational phrase of the question worth answering on its own, if the rest still asks."""
    hop = _relative_hop(question, gazetteer.relation_nouns) or _named_hop(question, gazetteer)
    if hop is None:
        return None
    rest = question.replace(hop.phrase, " ")
    asked = set(lower_words(rest)) - STOPWORDS - _FRAMING_WORDS
    return hop if asked else None  # 'Who was X's wife?' is itself the first hop: nothing to rewrite


def _relative_hop(question: str, pack_nouns: frozenset[str]) -> Hop | None:
    """'the physicist who supervised Louis de Broglie' → 'Who supervised Louis de Broglie?';
    'the country whose capital is Warsaw' → 'Which country's capital is Warsaw?'."""
    match = re.search(r"\bthe\s+([a-z]+)\s+(who|that|which|where|when|whose)\s+([^,?;]+)", question)
    if not match:
        return None
    noun, relative, clause = match.group(1), match.group(2), match.group(3).strip()
    kind = _relation_kind(noun, pack_nouns)
    if relative == "whose" and kind and len(clause.split()) >= 2:
        return Hop(match.group(0).strip(), f"Which {noun}'s {clause}?", kind)
    if relative in ("where", "when"):  # 'the city where …', 'the year when …'
        wanted = PLACE_NOUNS if relative == "where" else DATE_NOUNS
        kind = ("place" if relative == "where" else "date") if noun in wanted else ""
    if not kind or len(clause.split()) < 2:
        return None
    return Hop(match.group(0).strip(), f"{_wh(kind)} {clause}?", kind)


def _named_hop(question: str, gazetteer: Gazetteer) -> Hop | None:
    """'X's doctoral advisor' or 'the father of X', where X is a name the question gives."""
    nouns = gazetteer.relation_nouns
    sentence = as_sentence(question)
    spans = [(sentence.tokens[a][0], sentence.tokens[b][1]) for a, b, _ in named_spans(sentence, gazetteer)]
    spans += [(m.start(), m.end()) for m in re.finditer(r"[\"“][^\"”]{2,80}[\"”]", question)]
    for start, end in spans:
        after = re.match(r"['’]s\s+((?:[a-z]+\s*){1,3})", question[end:])
        if after:
            words = _relation_words(after.group(1).split(), nouns)
            if words:
                phrase = f"{question[start:end]}'s {' '.join(words)}"
                if phrase in question or phrase.replace("'", "’") in question:
                    return _named(phrase if phrase in question else phrase.replace("'", "’"), words[-1], nouns)
        before = re.search(r"\bthe\s+((?:[a-z]+\s+){1,3})of\s+$", question[:start])
        if before:
            words = before.group(1).split()
            if _relation_kind(words[-1], nouns):
                return _named(question[before.start(): end], words[-1], nouns)
    return None


def _relation_words(words: list[str], pack_nouns: frozenset[str]) -> list[str]:
    taken: list[str] = []
    for word in words:
        if word in STOPWORDS or word in PARTICIPLES or word.endswith("ed"):
            break
        taken.append(word)
    # up to the last relational noun: "X's doctoral advisor teach" → "X's doctoral advisor";
    # "X's country of citizenship" is an attribute, not a hop; "X's birthplace" is one
    while taken and not _relation_kind(taken[-1], pack_nouns, _POSSESSIVE_PLACES):
        taken.pop()
    return taken


def _relation_kind(noun: str, pack_nouns: frozenset[str], places: frozenset[str] = _RELATIONAL_PLACES) -> str:
    """person / place / entity for a noun that names a relation; '' for any other noun. A pack's own
    relation noun that is no general person or place noun asks for an entity ('What is X's advisor?')."""
    if noun in _RELATIONAL_PERSONS:
        return "person"
    if noun in places:
        return "place"
    return "entity" if noun in _RELATIONAL_THINGS or noun in pack_nouns else ""


def _named(phrase: str, noun: str, pack_nouns: frozenset[str]) -> Hop:
    kind = _relation_kind(noun, pack_nouns)
    return Hop(phrase, f"{_wh(kind)} is {phrase}?", kind)


def _wh(kind: str) -> str:
    return {"person": "Who", "place": "Where", "date": "When"}.get(kind, "What")
