"""One hop short: an answer that is the bridge entity, not what the question asks for (issue 27).

Of the wrong offline RAS answers on HotpotQA, 31 % were the bridge entity: the reader answered the question
with the entity its description picks out ('the most praised player in the 2002–03 season' → Daniel Van
Buyten) and the planner declared [SUFFICIENT], although the question asks for a property of that entity
(its nationality). A sufficiency check must see that the gathered facts reach what is asked:

- the *asked noun* is the noun the question asks for, by English question grammar: 'what city',
  'which company', 'what is the nationality of …' → city, company, nationality;
- an answer *reaches* it when a sentence read names the answer (or one item of a listed answer) together
  with that noun ('Ninja Tune is an independent record label' does not make Ninja Tune a city; 'Seoul is
  the capital city' makes Seoul one). A number or year is not checked: the reader's answer typing decides;
- only a question that *describes another entity* can stop one hop short: it holds a definite description
  of a common noun ('the record label based in …', 'the most praised player'), not only names ('the James
  Webb Space Telescope') and the phrase it asks with ('what is the nationality of'). Measured on the
  shipped packs, checking every question moved right one-hop answers ('Which rocket carried …?' →
  Ariane 5, rarely written beside the word 'rocket'). A question for several things (a plural asked noun,
  'which two companies') is not checked either: its listed answer is the reader's set reading;
- an answer that does not reach it is a bridge: the question is asked again with the bridge written in
  (`bridged_question`), over what is retrieved for it, and the entity one hop on answers — only when the
  reader gives another answer there with enough confidence; otherwise the bridge answer stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.methods.ras.query_graph import fold
from engine.text import is_year, list_items, split_sentences, words
from engine.tools.base import Reading
from engine.tools.offline_reader.question_grammar import asked_noun, describes_another
from engine.tools.offline_reader.sentences import word_stem

_NAME_PART = re.compile(r"\s*[,(]")  # where the qualifier of a name starts
_NUMBER = re.compile(r"[\d.,\s]+(?:[a-z]{1,3})?")  # '1943', '26,788', '517 km'


def reaches(answer: str, noun: str, texts: Sequence[str]) -> bool:
    """Whether some sentence of `texts` names `answer` together with `noun` (by stem), or the answer is a
    number or year (the reader only gives those where one is asked)."""
    if not noun or _NUMBER.fullmatch(answer.strip().lower()) or is_year(answer.strip()):
        return True
    name, stem = fold(_NAME_PART.split(answer)[0]), word_stem(noun)  # 'Seoul, South Korea' is named 'Seoul'
    for text in texts:
        for sentence in split_sentences(text):
            if name in fold(sentence) and stem in {word_stem(w) for w in words(sentence)}:
                return True
    return False


def bridged_question(question: str, bridge: str) -> str:
    """The question with the bridge entity written in: the reader never answers a name the question gives,
    so it reads one hop on."""
    return f"{question.strip().rstrip('?').strip()} ({bridge})?"


def is_bridge(question: str, reading: Reading, texts: Sequence[str]) -> bool:
    """Whether a confident reading stops one hop short: the question describes another entity and the answer
    is not the (single) kind of thing asked for."""
    noun = asked_noun(question)
    if reading.refused or not noun or _plural(noun) or not describes_another(question):
        return False
    return not any(reaches(item, noun, texts) for item in list_items(reading.answer))


def _plural(noun: str) -> bool:
    return noun.endswith("s") and not noun.endswith("ss")


def beyond(question: str, bridge: Reading, onward: Reading, needed: float) -> Reading | None:
    """The reading one hop past the bridge, when it is confident and names something else; else None."""
    if onward.refused or onward.confidence < needed or fold(onward.answer) == fold(bridge.answer):
        return None
    noun = asked_noun(question) or "thing"
    return Reading(onward.answer, tuple(dict.fromkeys(bridge.citations + onward.citations)), onward.confidence,
                   rationale=f"{bridge.answer!r} is no {noun}, so one hop on: {onward.rationale}",
                   steps=bridge.steps + onward.steps)
