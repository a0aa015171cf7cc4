"""Does a candidate have the type the question asks for? Learned from the evidence itself, no entity lists.

A candidate's type comes from its own defining sentence ('Siemens AG is a German conglomerate company' →
head noun 'company'; 'Oksana Baiul (born 1977) is a … skater' → a person by its birth parenthesis) and
from the words around it ('born in X', 'X-based' → a place). The asked type is the classifier's kind plus
the noun a which/what question names ('which country' → 'country'). A candidate whose known type agrees
is preferred, one whose type disagrees is down-weighted; an untyped candidate stays neutral, so the best
candidate still wins when none has the asked type (the reader never refuses for want of a typed one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.text import STOPWORDS
from engine.tools.offline_classifier import PERSON_NOUNS, PLACE_NOUNS, asked_nouns
from engine.tools.offline_reader.lexicon import GEO_WORDS, PARTICIPLES, PREPOSITIONS
from engine.tools.offline_reader.names import Gazetteer, key_of, named_spans, span_text
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import bare_title, content_stems, word_stem

_COPULAS = frozenset("is was are were".split())
_ARTICLES = frozenset("a an the one".split())
_PHRASE_END = frozenset(
    "who whom which that whose where when about after against among as before between during like over "
    "under since until without than".split()
) | PREPOSITIONS
_MAX_SUBJECT_GAP = 24  # tokens between a subject and its 'is': a parenthesis of birth dates and aliases
_AGENT = re.compile(r"(?:ist|ian|er|or|ess|ant|ent)s?$")  # English agent-noun endings: 'activist', 'skater'
_MODIFIER = re.compile(r"(?:an|ian|ese|ish|ch|ic)$")  # 'German', 'Chinese', 'British', 'Dutch', 'Icelandic'

AGREES = 1.5  # the candidate's own head noun is the asked noun
CONFLICTS = 0.3  # a person for a place, a company for a person …
BRIDGE = 0.6  # a thing the question names by another noun ('the game' in 'the game developed by which company')
SAME_CLASS = 1.2  # 'who' and a person by its own definition or birth parenthesis
MODIFIER = 0.3  # 'American' in 'an American writer' answers a nationality, not 'which writer'


@dataclass(frozen=True)
class EntityType:
    """What a candidate is, read from the evidence: its defining head noun and a coarse class."""

    head: str  # '' when no defining sentence was found
    coarse: str  # person | place | thing


def coarse_of(noun: str) -> str:
    """The classifier's own noun classes: 'physicist' → person, 'city' → place; an agent noun it does not
    list ('activist', 'racer') may be either, so '' (unknown); any other noun → thing."""
    for coarse, nouns in (("person", PERSON_NOUNS), ("place", PLACE_NOUNS | GEO_WORDS)):
        if noun in nouns or noun.rstrip("s") in nouns:
            return coarse
    return "" if _AGENT.search(noun) else "thing"


def defined_types(sentences: list[Sentence], gazetteer: Gazetteer) -> dict[str, EntityType]:
    """Candidate key → type, from every 'X (…) is/was a … NOUN' sentence of the evidence."""
    types: dict[str, EntityType] = {}
    for sentence in sentences:
        found = _definition(sentence, gazetteer)
        if found is None:
            continue
        subject, entity = found
        for key in (key_of(subject), key_of(bare_title(sentence.title)) if _about_title(sentence, subject) else ""):
            if key:
                types.setdefault(key, entity)
    return types


def _about_title(sentence: Sentence, subject: str) -> bool:
    """'Verena "Vreni" Schneider … is' on the page 'Vreni Schneider': the definition is the page's."""
    title = set(key_of(bare_title(sentence.title)).split())
    return bool(title) and bool(title & set(key_of(subject).split()))


def _definition(sentence: Sentence, gazetteer: Gazetteer) -> tuple[str, EntityType] | None:
    spans = [(a, b) for a, b, source in named_spans(sentence, gazetteer) if source != "lower"]
    if not spans or spans[0][0] != 0:
        return None
    a, b = spans[0]
    words = sentence.lowered
    copula = next((i for i in range(b + 1, min(len(words), b + 1 + _MAX_SUBJECT_GAP)) if words[i] in _COPULAS), -1)
    if copula < 0 or not _enclosed(sentence, b, copula):
        return None
    born = "born" in words[b + 1: copula] or "née" in words[b + 1: copula]
    head, ending = _head_noun(sentence, copula + 1)
    if not head and not born:
        return None
    coarse = "person" if born or ending == "who" else coarse_of(head)
    if not coarse and not head:
        return None
    return span_text(sentence, a, b), EntityType(head, coarse)


def _enclosed(sentence: Sentence, last: int, copula: int) -> bool:
    """Between the subject and 'is' only a parenthesis or an aside may stand, not another clause."""
    if copula == last + 1:
        return True
    gap = sentence.text[sentence.tokens[last][1]: sentence.tokens[copula][0]]
    return gap.lstrip()[:1] in ("(", ",", '"', "“", "[")


def _head_noun(sentence: Sentence, start: int) -> tuple[str, str]:
    """The head of the noun phrase after 'is a' — its last lower-case word before a preposition, relative
    pronoun or punctuation ('a German conglomerate company headquartered in' → 'company') — and the
    word that ends the phrase ('who' says a person is meant)."""
    words = sentence.lowered
    i = start
    while i < len(words) and words[i] in _ARTICLES:
        i += 1
    if i == start:  # 'X is located in …' or 'X is German': no noun phrase
        return "", ""
    phrase: list[str] = []
    while i < len(words) and len(phrase) < 8 and words[i] not in _PHRASE_END:
        if phrase and re.search(r"[,;:()]", sentence.gap(i - 1, i)):
            break
        phrase.append(sentence.word(i))
        i += 1
    nouns = [w.lower() for w in phrase if w[:1].islower() and w.isalpha() and w.lower() not in STOPWORDS]
    # 'company headquartered', 'physicist born', 'band playing': a participle follows the head
    while len(nouns) > 1 and (nouns[-1].endswith(("ed", "ing")) or nouns[-1] in PARTICIPLES):
        nouns.pop()
    return (nouns[-1] if nouns else ""), (words[i] if i < len(words) else "")


def context_type(sentence: Sentence, a: int, b: int) -> str:
    """A class read from the words around one mention: 'born in X', 'X-based' → place; 'X (born' → person."""
    words = sentence.lowered
    after = sentence.text[sentence.tokens[b][1]:]
    if re.match(r"-based\b", after):
        return "place"
    if a >= 2 and words[a - 1] in ("in", "at") and words[a - 2] in ("born", "located", "based", "headquartered"):
        return "place"
    if re.match(r"\s*\(\s*(?:born|née|b\.)", after, flags=re.IGNORECASE):
        return "person"
    return ""


def named_as(sentence: Sentence, a: int, b: int, asked: tuple[str, ...]) -> bool:
    """The asked noun written beside the name: 'an Ariane 5 rocket', 'the city of Lyon', 'the band Muse'."""
    stems = {word_stem(w) for w in asked if w not in STOPWORDS}
    words = sentence.lowered
    before = [w for w in words[max(0, a - 2): a] if w != "of"][-1:]
    after = list(words[b + 1: b + 2])
    return any(word_stem(w) in stems for w in before + after)


def is_modifier(sentence: Sentence, a: int, b: int) -> bool:
    """A lone capitalised adjective before a lower-case noun: 'an American writer', 'Irish whiskey'."""
    if a != b or b + 1 >= len(sentence.tokens) or sentence.gap(b, b + 1) != " ":
        return False
    following = sentence.word(b + 1)
    return (bool(_MODIFIER.search(sentence.lowered[a])) and following[:1].islower()
            and following.lower() not in STOPWORDS)


@dataclass(frozen=True)
class Asked:
    """What a question asks for: the classifier's kind, the which/what nouns, and its own content stems
    (a typed thing the question itself names by its noun — 'the game developed by which company' — is
    the bridge it goes through, not its answer)."""

    kind: str
    nouns: tuple[str, ...]
    question_stems: frozenset[str]

    @classmethod
    def of(cls, question: str, kind: str) -> Asked:
        """What `question` asks for, given the classifier's `kind` of it: 'which country' → ('country',)."""
        return cls(kind, asked_nouns(question), content_stems(question))

    @property
    def noun_stems(self) -> frozenset[str]:
        return frozenset(word_stem(w) for w in self.nouns if w not in STOPWORDS)


def type_fit(asked: Asked, known: EntityType | None, context: str, called: bool) -> float:
    """How well a candidate's type agrees with the asked one: >1 agrees, <1 conflicts, 1 unknown.
    `context` is the class its surroundings give it, `called` whether the asked noun stands beside it."""
    head = word_stem(known.head) if known is not None and known.head else ""
    if called or head and head in asked.noun_stems:
        return AGREES
    wanted = _wanted_coarse(asked.kind, asked.nouns)
    if not wanted:
        return 1.0
    coarse = known.coarse if known is not None else context
    if not coarse:
        return 1.0
    if coarse != wanted:
        return CONFLICTS
    if coarse == "thing" and asked.noun_stems:
        # another kind of thing than asked: only the one the question names ('the game') is known wrong;
        # 'a space probe' for 'which spacecraft' may well be right
        return BRIDGE if head and head in asked.question_stems else 1.0
    return SAME_CLASS if not asked.noun_stems else 1.0


def _wanted_coarse(kind: str, asked: tuple[str, ...]) -> str:
    """The coarse class asked: 'who' → person, 'where' → place; 'which company' → thing."""
    if kind == "person":
        return "person"
    if kind == "place":
        return "place"
    nouns = [w for w in asked if w not in STOPWORDS]
    if kind in ("entity", "other") and nouns:
        classes = {coarse_of(w) for w in nouns}
        # 'which doctoral students': an agent noun the lists lack may be a person, so no class is asked
        return next((c for c in ("person", "place", "") if c in classes), "thing")
    return ""
