"""Whether an answer is the kind of thing the question asks for, read from the retrieved text (issue 27).

The offline reader types its candidates from the evidence (engine/tools/offline_reader/answer_types.py):
a name's own defining sentence ('Siemens AG is a German conglomerate company' → company; 'Oksana Baiul
(born 1977) is a … skater' → a person), against the noun a which/what question names ('which company')
and the class its grammar asks ('who' → a person, 'where' → a place). The reader uses the typing to
prefer a candidate; the calibration reads it again for the answer the run gave, because an answer whose
own definition names the asked noun was right on every pack measured far more often than the rest, and
one of another coarse class (a person for 'which city') never was:

    agrees:    demo 0.73 right (56 answers) vs 0.57, geo 1.00 (15) vs 0.40, HotpotQA 0.75 (24) vs 0.28,
               spaceflight 1.00 (17) vs 0.31;
    conflicts: 0 right of 1, 8, 8 and 0 answers.

A weaker disagreement — a thing of another head noun ('a public research university' for 'which
institution') — is no conflict here: on the demo pack those were mostly right, and as a feature it
flipped sign between packs. An answer no retrieved sentence defines is neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.text import split_sentences
from engine.tools.offline_reader.answer_types import CONFLICTS, Asked, defined_types, type_fit
from engine.tools.offline_reader.names import Gazetteer, key_of
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import MAX_SENTENCES, tokenised

_NO_NAMES = Gazetteer(())  # the pack's names are not at hand here: capitalised spans find the defined names


@dataclass(frozen=True)
class Kind:
    """How the answer's own type, as the retrieved text defines it, meets the asked one."""

    agrees: bool     # its head noun is the asked noun, or a person for 'who' by its definition
    conflicts: bool  # it is of another coarse class than asked: a person for 'which city', a place for 'who'


def answer_kind(question: str, items: Sequence[str], asked_kind: str, evidence: Sequence[str]) -> Kind:
    """`items` are the answer's items (one, or each of a listed answer 'A, B and C': it agrees when every
    item does and conflicts when one does — 'Moon, Saturn V and Apollo' for 'who were the three
    astronauts'); `asked_kind` is the offline classifier's kind of the question (person, place, …)."""
    sentences = [tokenised(Sentence(text, str(i), "", i)) for i, document in enumerate(evidence)
                 for text in split_sentences(document)][:MAX_SENTENCES]
    types = defined_types(sentences, _NO_NAMES)
    asked = Asked.of(question, asked_kind)  # as the reader asks (Context.asked)
    fits = [type_fit(asked, types[key_of(item)], "", False) if key_of(item) in types else 1.0
            for item in items]
    return Kind(agrees=bool(fits) and all(fit > 1.0 for fit in fits), conflicts=any(fit <= CONFLICTS for fit in fits))
