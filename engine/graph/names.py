"""When a known name found in a text is a real mention of it, not a function word or part of a longer name.

Issue 27: imported HotpotQA packs hold paragraphs titled "Who", "One" or "John", and whole-word matching
linked every question's "who" to the first and every "John Smith" to the last. Two rules, for any pack:
- a name that is an English function word (question words, pronouns, articles, small numerals …) is a
  mention only where the text capitalises it mid-sentence ("the song One"), never lower case or first in
  a sentence, where capitals are grammar;
- a one-word name is no mention where it is glued to a capitalised neighbour ("John" in "John Smith"):
  that span names someone else. A function word beside it ("Did Einstein") is no neighbour.
"""

from __future__ import annotations

import re

# A short list of English grammar, not of any domain: what a question or sentence is built from.
FUNCTION_WORDS = frozenset("""
a an the this that these those it its he him his she her hers they them their we us our you your i me my
who whom whose what which where when why how whether if then than so as and or but nor not no yes
is am are was were be been being do does did done have has had having will would shall should can could
may might must of in on at to for from by with about into onto over under after before since until
up down out off again also only just very more most some any all each every both either neither other
one two three four five six seven eight nine ten first last here there name named
""".split())

_WORD = re.compile(r"[\w'’.-]+")
_LAST_WORD = re.compile(r"(?<![\w'’.-])([\w'’.-]+) $")
_SENTENCE_END = re.compile(r"[.!?:;\"“”(\[]\s*$")


def is_function_word(name: str) -> bool:
    """Whether the whole name is one function word ('Who', 'one', 'The'), whatever its case."""
    return name.strip().lower() in FUNCTION_WORDS


def is_mention(text: str, start: int, end: int) -> bool:
    """Whether text[start:end], a whole-word match of a known name, names that thing (the rules above)."""
    found = text[start:end]
    if is_function_word(found):
        return found[:1].isupper() and not _sentence_start(text, start)
    if len(found.split()) == 1:
        return not (_capitalised_word(_word_before(text, start)) or _capitalised_word(_word_after(text, end)))
    return True


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start]
    return not before.strip() or bool(_SENTENCE_END.search(before))


def _word_before(text: str, start: int) -> str:
    """The word right before `start`, when one space separates them ('' otherwise)."""
    match = _LAST_WORD.search(text, 0, start)
    return match.group(1) if match else ""


def _word_after(text: str, end: int) -> str:
    """The word right after `end`, when one space separates them ('' otherwise)."""
    if text[end:end + 1] != " ":
        return ""
    match = _WORD.match(text, end + 1)
    return match.group(0) if match else ""


def _capitalised_word(word: str) -> bool:
    """A capitalised word that is no function word and ends no sentence ('U2.' in 'by U2. Einstein')."""
    return word[:1].isupper() and not is_function_word(word) and not word.endswith(".")
