"""Word tokenisation shared by BM25 and the offline tools (lexical overlap, answer typing)."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being do does did "
    "which who whom whose what when where why how that this these those it its as into than then "
    "there their they he she his her him i you we our your not no yes if so such any all each "
    "has have had also can could would should may might will shall about after before did".split()
)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Lower-cased words without stopwords: what lexical matching should compare."""
    return [w for w in words(text) if w not in STOPWORDS]
