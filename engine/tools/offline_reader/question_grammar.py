"""What a question's grammar says, without a tagger: the noun it asks for, and whether it describes another
entity (a bridge question: 'the record label based in …'). Shared by RAS's sufficiency check and the
calibration's features, so both read a question the same way."""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.text import STOPWORDS, words
from engine.tools.offline_reader.lexicon import IRREGULAR, PARTICIPLES, PREPOSITIONS

_WH_DETERMINERS = frozenset({"what", "which"})
_SKIPPED = frozenset("other same kind type sort name one ones".split())  # 'what other school' asks for a school
_ARTICLES = frozenset({"the", "a", "an"})
# 'the rocket that lifted …', 'the laboratory where …': an entity the question describes by a relative clause
_DESCRIBED_BY_CLAUSE = re.compile(r"\bthe\s+(?:[\w'’-]+\s+){1,4}(?:that|who|whom|whose|which|where)\s", re.IGNORECASE)


def asked_noun(question: str) -> str:
    """The noun the question asks for, lower-cased; '' when its grammar names none (who, when, how many)."""
    said = words(question)
    for i, word in enumerate(said[:-1]):
        if word not in _WH_DETERMINERS:
            continue
        rest = said[i + 1:]
        if rest[0] in ("is", "was", "are", "were") and len(rest) > 3 and rest[1] == "the" and "of" in rest[3:5]:
            head = rest[rest.index("of", 3) - 1]  # 'what is the nationality of …', 'what was the birth name of …'
            return "" if head in _SKIPPED else head
        while rest and (rest[0] in _SKIPPED or rest[0] == "of"):  # 'what type of product', 'what other school'
            rest = rest[1:]
        return _head(rest)
    return ""


def _head(tokens: Sequence[str]) -> str:
    """The last word of the first run of content words before a verb ('which american writer' → writer,
    'which baroque composer wrote' → composer); without a tagger a verb is a past form ('-ed', an irregular
    one, a participle) or a present one before an article or preposition ('which bridge crosses the river',
    'what river flows through' → bridge, river; 'which doctoral students of' stays a noun)."""
    run: list[str] = []
    for token, after in zip(tokens, [*tokens[1:], ""]):
        if token in STOPWORDS or token in IRREGULAR or token in PARTICIPLES or token.endswith("ed"):
            break
        if run and token.endswith("s") and (after in _ARTICLES or after in PREPOSITIONS - {"of"}):
            break
        run.append(token)
    return run[-1] if run else ""


def describes_another(question: str) -> bool:
    """Whether the question holds a definite description of a common noun besides the phrase it asks with."""
    tokens = re.findall(r"[\w'’-]+", question)
    for i, token in enumerate(tokens[:-1]):
        follower = tokens[i + 1]
        asking = i >= 2 and tokens[i - 2].lower() in _WH_DETERMINERS  # 'what is the nationality of'
        if token.lower() == "the" and follower.islower() and follower not in STOPWORDS and not asking:
            return True
    return False


def describes_by_clause(question: str) -> bool:
    """Whether the question describes an entity by a relative clause ('the rocket that lifted Mir's core
    module'): a narrower reading than describes_another, which any 'the <noun>' satisfies."""
    return bool(_DESCRIBED_BY_CLAUSE.search(question))
