"""Rule-based answer typing from a question's wording: the offline `QuestionClassifier`.

The rules follow general English question grammar (wh-word, the head noun after which/what,
auxiliary-first yes/no questions, "A or B" choices), not the phrasing of any one dataset.
"""

from __future__ import annotations

import re

from engine.tools.base import AnswerType

AUXILIARIES = frozenset(
    "is was are were am did does do has have had can could will would should shall may might must".split()
)
# "older" means an earlier birth year; "min"/"max" apply to the year or number being compared
MIN_WORDS = frozenset(
    "first earlier earliest older oldest before fewer fewest smaller smallest less least shorter "
    "shortest lower lowest sooner previous".split()
)
MAX_WORDS = frozenset(
    "later last latest younger youngest more most larger largest bigger biggest longer longest "
    "higher highest taller tallest greater greatest newer newest recent recently heavier faster "
    "after".split()
)
PERSON_NOUNS = frozenset(
    "person people man woman men women actor actress author writer poet novelist playwright singer "
    "musician composer songwriter rapper director producer player athlete footballer politician "
    "president king queen emperor empress prince princess leader founder artist painter sculptor "
    "scientist physicist chemist mathematician philosopher coach manager ceo wife husband son "
    "daughter father mother brother sister child host presenter journalist inventor explorer "
    "architect designer model comedian dancer boxer wrestler driver pilot astronaut saint pope "
    "bishop general officer senator governor mayor minister chancellor individual".split()
)
PLACE_NOUNS = frozenset(
    "place city country town village state province county region location island continent "
    "nation capital district area neighborhood neighbourhood suburb municipality borough "
    "territory parish".split()
)
DATE_NOUNS = frozenset("year years decade century date month day era".split())
NUMBER_NOUNS = frozenset(
    "number percentage percent amount population height length width depth distance speed "
    "weight cost price size capacity count total age".split()
)
HOW_NUMBER = frozenset("many much old long far tall big high large often fast deep wide heavy".split())
WH_WORDS = frozenset("who whom whose when where which what how".split())
_DETERMINERS = frozenset("the a an this that these those".split())
_WINDOW_STOP = frozenset(
    "of in on at to for from by with that who whom which whose where when did does do is was are "
    "were has have had".split()
)
_GENERIC_HEADS = frozenset("name type kind sort form title".split())
_LEADING_PREPOSITIONS = frozenset("in on at for of by to from during and so".split())
_CONNECTORS = frozenset("of de da di del della du la le von van der den the and &".split())
# words that are never an option of their own ('is it true or not', 'did he win or lose at all')
_FUNCTION_WORDS = frozenset(
    "not no yes it this that there he she they we you him her his them me us a an the of in on at to for "
    "from by with so".split()
) | AUXILIARIES
_TOKEN = re.compile(r"[\w][\w'’\-.&]*|[^\w\s]")


class OfflineQuestionClassifier:
    """Answer typing from wh-words, head nouns, auxiliaries and 'A or B' choices."""

    def classify(self, question: str) -> AnswerType:
        text = " ".join(str(question or "").split())
        lowered = [w.lower() for w in re.findall(r"\w+(?:['’]\w+)?", text)]
        if not lowered:
            return AnswerType("other")
        options = choice_options(text)
        if len(options) >= 2:
            return AnswerType("choice", options=options, order=question_order(lowered))
        if lowered[0] in AUXILIARIES:
            return AnswerType("yes_no")
        return AnswerType(_wh_kind(lowered))


def question_order(lowered: list[str]) -> str:
    """'min' or 'max' from the first ordering word of a comparison, '' when it has none."""
    for word in lowered:
        if word in MIN_WORDS:
            return "min"
        if word in MAX_WORDS:
            return "max"
    return ""


def choice_options(question: str) -> tuple[str, ...]:
    """The options of an 'A or B' (or 'between A and B') question, as written; () if it has none."""
    body = question.strip().rstrip("?!. ").strip()
    if re.search(r"\s+or\s+", body, flags=re.IGNORECASE):
        return _or_options(body)
    match = re.search(r"\bbetween\s+(.+?)\s+and\s+(.+)$", body, flags=re.IGNORECASE)
    first = body.split(maxsplit=1)[0].lower() if body else ""
    if match and first in ("which", "who") and "," not in match.group(2):
        return _clean_options([match.group(1), match.group(2)])
    return ()


_AUX_RE = "|".join(sorted(AUXILIARIES))
# 'is A shorter than B, or the other way round?': a choice between A and B, not a yes/no question
_REVERSIBLE = re.compile(
    rf"^(?:{_AUX_RE})\s+(?P<a>.+?)\s+(?:\w+er|more\s+\w+|less\s+\w+)\s+than\s+(?P<b>.+?),?\s+or\s+"
    r"(?:the\s+other\s+way\s+a?round|vice\s+versa|the\s+reverse)$",
    flags=re.IGNORECASE,
)
_WORD_CHOICE = re.compile(
    rf"^(?:{_AUX_RE})\b.*?\b(?P<a>[a-z]+)\s+or\s+(?:an?\s+|the\s+)?(?P<b>[a-z]+)\b", flags=re.IGNORECASE
)


def _or_options(body: str) -> tuple[str, ...]:
    reversible = _REVERSIBLE.match(body)
    if reversible:
        return _clean_options([reversible.group("a"), reversible.group("b")])
    left, right = re.split(r"\s+or\s+(?!.*\s+or\s+)", body, maxsplit=1, flags=re.IGNORECASE)
    head, sep, listed = _split_head(left)
    if sep:
        parts = [p for p in re.split(r",\s*", listed)] + [right]
        if all(len(p.split()) <= 10 for p in parts):
            return _clean_options(parts)
        return ()
    # no comma: "Who is younger Kirk Humphreys or Tom Coburn?" -- both sides must be names
    left_name = _trailing_name(left)
    right_name = _leading_name(right)
    if left_name and right_name:
        return _clean_options([left_name, right_name])
    return _word_options(body)


def _word_options(body: str) -> tuple[str, ...]:
    """'Is Ely north or south of Cambridge?': two lower-case words around 'or' after an auxiliary are the
    options, so its answer is one of them, never yes or no."""
    match = _WORD_CHOICE.match(body)
    if not match or match.group("a").lower() in _FUNCTION_WORDS or match.group("b").lower() in _FUNCTION_WORDS:
        return ()
    return _clean_options([match.group("a"), match.group("b")])


def _split_head(left: str) -> tuple[str, str, str]:
    """Split 'Which is older, A, B' into the question head and the listed options."""
    match = re.search(r"[,:;]\s*", left)
    if not match:
        return left, "", ""
    return left[: match.start()], match.group(0), left[match.end():]


def _clean_options(parts: list[str]) -> tuple[str, ...]:
    cleaned = []
    for part in parts:
        text = re.sub(r"^(?:either|between)\s+", "", part.strip(), flags=re.IGNORECASE)
        text = text.strip(" ,;:'\"“”‘’")
        if text:
            cleaned.append(text)
    unique = tuple(dict.fromkeys(cleaned))
    return unique if len(unique) >= 2 else ()


def _is_name_token(token: str) -> bool:
    return token[:1].isupper() or token[:1].isdigit()


def _trailing_name(text: str) -> str:
    tokens = _TOKEN.findall(text)
    start = len(tokens)
    while start > 0 and (_is_name_token(tokens[start - 1]) or (
        tokens[start - 1].lower() in _CONNECTORS and start - 1 > 0 and start < len(tokens)
    )):
        start -= 1
    while start < len(tokens) and tokens[start].lower() in _CONNECTORS:
        start += 1
    # a capitalised sentence-initial question word ("Who", "Is") is not part of the name
    if start == 0 and tokens and (tokens[0].lower() in WH_WORDS or tokens[0].lower() in AUXILIARIES):
        start = 1
    while start < len(tokens) and tokens[start].lower() in _CONNECTORS:
        start += 1
    return " ".join(tokens[start:]) if start < len(tokens) else ""


def _leading_name(text: str) -> str:
    tokens = _TOKEN.findall(text)
    if tokens and tokens[0].lower() == "the":
        tokens = tokens[1:]
    end = 0
    while end < len(tokens) and (_is_name_token(tokens[end]) or (
        tokens[end].lower() in _CONNECTORS and end + 1 < len(tokens) and _is_name_token(tokens[end + 1])
    )):
        end += 1
    return " ".join(tokens[:end])


def _question_word_index(lowered: list[str]) -> int:
    """Where the question word is: at the start, else the first what/how, else the last wh-word."""
    start = 1 if len(lowered) > 1 and lowered[0] in _LEADING_PREPOSITIONS else 0
    if lowered[start] in WH_WORDS:
        return start
    for i, word in enumerate(lowered):
        if word in ("what", "how"):
            return i
    if "whom" in lowered:
        return lowered.index("whom")
    # relative pronouns come before the question word, so the last one is the question's
    found = [i for i, word in enumerate(lowered) if word in WH_WORDS]
    return found[-1] if found else -1


def _wh_kind(lowered: list[str]) -> str:
    index = _question_word_index(lowered)
    if index < 0:
        return "other"
    wh, rest = lowered[index], lowered[index + 1:]
    if wh in ("who", "whom", "whose"):
        return "person"
    if wh == "when":
        return "date"
    if wh == "where":
        return "place"
    if wh == "how":
        return "number" if rest and rest[0] in HOW_NUMBER else "other"
    if not rest and index >= 2 and lowered[index - 1] == "of":
        # "a population of what?" asks for the noun before "of"
        return _noun_kind(lowered[index - 2]) or "other"
    return _head_noun_kind(rest)


def asked_nouns(question: str) -> tuple[str, ...]:
    """The words of the noun phrase a which/what question asks for ('which US city' → ('us', 'city');
    'what type of product' → ('product',)); () for who/when/where/how and descriptions. Without a tagger
    the head is not known, so the reader matches a candidate's own head noun against any of them."""
    lowered = [w.lower() for w in re.findall(r"\w+(?:['’]\w+)?", " ".join(str(question or "").split()))]
    index = _question_word_index(lowered) if lowered else -1
    if index < 0 or lowered[index] not in ("which", "what"):
        return ()
    rest = lowered[index + 1:]
    window = _noun_window(rest)
    while window and window[0] in _GENERIC_HEADS and rest[rest.index(window[0]) + 1:][:1] == ["of"]:
        rest = rest[rest.index(window[0]) + 2:]
        window = _noun_window(rest)
    nouns: list[str] = []
    for word in window:
        # 'which company developed the game': a past verb or a determiner ends the asked phrase
        if nouns and (word in _DETERMINERS or word.endswith("ed")):
            break
        if not word.isdigit() and word not in ("other", "another"):
            nouns.append(word)
    return tuple(nouns)


def _head_noun_kind(rest: list[str]) -> str:
    """Type a which/what question by the head noun of the phrase after it."""
    window = _noun_window(rest)
    if not window:
        return "other"
    if window[0] in _GENERIC_HEADS and rest[rest.index(window[0]) + 1:][:1] == ["of"]:
        inner = _head_noun_kind(rest[rest.index(window[0]) + 2:])
        return "entity" if inner == "other" else inner
    # without a tagger the head noun is unknown, so the first typed noun of the phrase decides
    for word in window:
        kind = _noun_kind(word)
        if kind:
            return kind
    return "entity"


def _noun_kind(word: str) -> str:
    for kind, nouns in (("date", DATE_NOUNS), ("number", NUMBER_NOUNS), ("place", PLACE_NOUNS),
                        ("person", PERSON_NOUNS)):
        if word in nouns or word.rstrip("s") in nouns:
            return kind
    return ""


def _noun_window(rest: list[str]) -> list[str]:
    """The words of the noun phrase after which/what, e.g. 'which US city' -> ['us', 'city']."""
    words = list(rest)
    if words[:1] and words[0] in AUXILIARIES:
        # "what is the capital ..." names a noun; "what is Drisheen" asks for a description
        if len(words) < 2 or words[1] not in _DETERMINERS:
            return []
        words = words[1:]
    while words[:1] and (words[0] in _DETERMINERS or words[0].isdigit()):
        words = words[1:]
    window: list[str] = []
    for word in words[:4]:
        if word in _WINDOW_STOP or word in AUXILIARIES:
            break
        window.append(word)
    return window
