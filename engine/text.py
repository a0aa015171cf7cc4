"""The one text toolkit: word tokens, sentences and known-name matching, shared by every module.

BM25, chunking, the offline reader, the methods' offline tools and the KG all tokenise, split and
match names here, so a sentence or a name means the same thing wherever it is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# words keep inner apostrophes and hyphens ("O'Neill", "Jean-Marie") but not a possessive 's
WORD = re.compile(r"(?<!['’])\w+(?:['’](?!s\b)\w+|-\w+)*")
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being do does did "
    "which who whom whose what when where why how that this these those it its as into than then "
    "there their they he she his her him i you we our your not no yes if so such any all each "
    "has have had also can could would should may might will shall about after before did".split()
)
# a dot after these (or after a single capital, an initial) does not end a sentence
ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr mt ft co inc ltd corp vs etc no gen col lt sgt capt rev prof gov sen "
    "rep jan feb mar apr jun jul aug sep sept oct nov dec approx est fl ca".split()
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])([\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9À-Ý])")  # group 1: closers kept
_LINE_BREAK = re.compile(r"\s*\n\s*")
_LAST_WORD = re.compile(r"(\w+)\W*$")
_ALNUM = re.compile(r"[a-z0-9]+")
# a year as every offline tool reads one, 1000-2099; each reader adds the boundaries its text needs
YEAR_DIGITS = r"(?:1[0-9]{3}|20[0-9]{2})"
YEAR = re.compile(rf"(?<!\d)({YEAR_DIGITS})(?!\d)")  # a year with no digit on either side
RUN_ON_WORDS = 60  # words per piece of a run-on sentence cut for the encoder
# a listed answer's breaks: commas (not a thousands separator: '1,047 km' is one item), semicolons, lines, 'and'
_LIST_BREAK = re.compile(r",(?!\d{3}(?!\d))\s*|\s*[;\n]\s*|\s+and\s+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [w.lower() for w in WORD.findall(text)]


def alnum_words(text: str) -> list[str]:
    """Lower-cased runs of ASCII letters and digits: how relation names ('place_of_birth') and verdict words
    compare, whatever joins or surrounds them."""
    return _ALNUM.findall(text.lower())


def alpha_words(text: str) -> list[str]:
    """Word tokens that start with a letter, case kept: names and phrases, without numbers."""
    return [w for w in WORD.findall(text) if w[0].isalpha()]


def list_items(text: str) -> list[str]:
    """The items of a listed answer ('A, B and C' → A, B, C); any other text is one item."""
    return [part for part in _LIST_BREAK.split(text) if part.strip()] or [text]


def content_words(text: str) -> list[str]:
    """Lower-cased words without stopwords: what lexical matching should compare."""
    return [w for w in words(text) if w not in STOPWORDS]


def split_sentences(text: str, max_chars: int | None = None) -> list[str]:
    """Sentences of a text, keeping initials and abbreviations ('J. Smith', 'St. Louis') whole; a line
    break always ends a sentence. With `max_chars`, a longer run-on piece (a page without punctuation) is
    cut into RUN_ON_WORDS-word pieces a sentence encoder can use."""
    out: list[str] = []
    for line in _LINE_BREAK.split(text):
        last = 0
        for match in _SENTENCE_BREAK.finditer(line):
            before = line[last: match.end(1)]
            tail = _LAST_WORD.search(before[-64:])  # the word before the break; the whole piece was quadratic
            word = tail.group(1) if tail else ""
            if (len(word) == 1 and word.isupper()) or word.lower() in ABBREVIATIONS:
                continue
            out.append(before)
            last = match.end()
        out.append(line[last:])
    sentences = [s.strip() for s in out if s.strip()]
    return sentences if max_chars is None else [piece for s in sentences for piece in _run_on_pieces(s, max_chars)]


def _run_on_pieces(sentence: str, max_chars: int) -> list[str]:
    if len(sentence) <= max_chars:
        return [sentence]
    words = sentence.split()
    return [" ".join(words[i: i + RUN_ON_WORDS]) for i in range(0, len(words), RUN_ON_WORDS)]


def is_year(text: str) -> bool:
    """Whether the whole text is a year (YEAR_DIGITS): a year is rarely a count, and never a place to start from."""
    return re.fullmatch(YEAR_DIGITS, text) is not None


def name_pattern(names: Iterable[str], min_length: int = 3) -> re.Pattern[str] | None:
    """One case-insensitive regex over known names, longest first, matching whole words only."""
    ordered = sorted({n for n in names if len(n) >= min_length}, key=len, reverse=True)
    if not ordered:
        return None
    return re.compile(r"(?<!\w)(" + "|".join(re.escape(n) for n in ordered) + r")(?!\w)", re.IGNORECASE)


def contains_run(longer: Sequence[str], shorter: Sequence[str]) -> bool:
    """Whether `shorter` occurs in `longer` as consecutive items (word lists or tuples, of one kind)."""
    n = len(shorter)
    return any(longer[i: i + n] == shorter for i in range(len(longer) - n + 1))
