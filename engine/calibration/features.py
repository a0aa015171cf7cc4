"""The features the calibration model reads: general properties of a question and its answer, and
`statement`, how plainly the retrieved text states the answer, which the model's rules read.

Nothing here names a domain: the asked kind comes from the offline classifier's question grammar, the
answer's shape from its characters (digits, capitals), overlap from the shared tokenizer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.calibration.answer_kind import answer_kind
from engine.knowledge.records import INVALID_QUESTION
from engine.text import STOPWORDS, WORD, content_words, list_items, split_sentences, words
from engine.tools.offline_classifier import OfflineQuestionClassifier, choice_options
from engine.tools.offline_reader.question_grammar import describes_another
from engine.tools.offline_reader.sentences import word_stem

# The question forms that bound the answer itself: one of two options, yes or no. How often a person, a place or
# a number is answered right is a pack's mix of questions and domain, not a property of the answer: such kind
# features flipped or drifted between packs and cost held-out AUROC on every pack (issue 27), so none is read.
ANSWER_FORMS = ("yes_no", "choice")
FEATURES = (
    "raw_logit",       # the method's own score, as a log-odds
    "shape_mismatch",  # 1 when the answer cannot be what the question asks for (no number for 'how many')
    "answer_support",  # documents among those the run retrieved that state the answer / 3, capped at 1
    "answer_beyond_top",  # 1 when a retrieved document after the first states the answer and the first does not
    "answer_in_graph",  # 1 when a graph fact of the run links a name the question gives to the answer
    "answer_type_agrees",  # 1 when the answer's own defining sentence makes it the asked noun (answer_kind)
    "answer_type_conflicts",  # 1 when that sentence makes it another coarse class: a person for 'which city'
    "bridge_in_top",   # 1 when the question describes another entity and the first document states the answer
    "answer_calculated",  # 1 when a calculation of the run over numbers the text writes gave the answer
    "premise_refuted",  # 1 when the answer is the run's own premise check's verdict that the question is invalid
    *(f"asks_{form}" for form in ANSWER_FORMS),
)
_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"(?<!\w)(?<!\d\.)\d+(?:\.\d+)?(?!\w)(?!\.\d)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # '1,000' is 1000; '1867, 1934' stays two numbers
_ASIDE = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")  # '(born Maria Skłodowska, 1867–1934)' is not the clause's
_CLAUSE_BREAK = re.compile(r"[,;:]|\s[–—-]\s")  # an apposition or a listed fact ends a clause
_WH_DETERMINERS = frozenset({"which", "what", "whose"})
_PLAIN_GAP = 2  # words between a relation word and the answer in a plain statement: 'born in', 'painted by the'
_NUMBER_WORDS = frozenset("one two three four five six seven eight nine ten eleven twelve dozen hundred "
                          "thousand million billion once twice thrice".split())
_CLASSIFIER = OfflineQuestionClassifier()


def answer_features(question: str, answer: str, raw: float, evidence: Sequence[str] = (),
                    facts: Sequence[tuple[str, str]] = (), derived: Derived | None = None) -> dict[str, float]:
    """Feature name → value for one answered question (FEATURES order is the model's).

    `evidence` is the text of each document the run retrieved, best first: an answer many of them state
    says the answer; `facts` the (source, target) names of the graph edges the run added; `derived` what
    the run concluded itself (its calculations).

    Whether the *first* document states the answer is no feature (issue 27): its sign is the pack's mix
    of question types — a single-hop answer is in the first document when right (demo factoids 0.84
    right when it is, 0.00 when not), a multi-hop answer found there is the topic or the bridge, not the
    answer (hotpot 0.17 vs 0.63) — so a pack of factoids (an unseen programming pack: 61 of 63 factoid
    answers under 0.5, 77 % right) flips it. An answer only a later document states is right more often
    than the rest on every pack measured (demo 0.66 vs 0.57, geo 0.53 vs 0.39, hotpot 0.71 vs 0.18,
    spaceflight 0.48 vs 0.30): the run read past the topic, and a single-hop answer, in the first
    document, is not penalised for it. Split by the question's grammar, the first document's answer
    does keep one sign: where the question describes another entity ('the rocket that launched …',
    engine.tools.offline_reader.question_grammar.describes_another) an answer the first document states is the described
    entity or its page's topic, one hop short — right 0.26 vs 0.61 on demo, 0.10 vs 0.49 geo, 0.08 vs
    0.43 HotpotQA, 0.11 vs 0.38 spaceflight (`bridge_in_top`); for any other question it flips, and is
    no feature. Each feature's sign is fixed beforehand (model.SIGNS); the fit only weighs them
    (scripts/fit_calibration.py: a feature without a known sign whose weight flips between packs is out)."""
    kind = _CLASSIFIER.classify(question).kind
    typed = answer_kind(question, _items(answer), kind, evidence)
    derived = derived or Derived()
    clipped = min(0.99, max(0.01, float(raw)))
    values = {
        "raw_logit": math.log(clipped / (1 - clipped)),
        "shape_mismatch": float(_mismatch(kind, answer)),
        **_support(question, answer, evidence),
        "answer_in_graph": float(_in_graph(question, answer, facts)),
        "answer_type_agrees": float(typed.agrees),
        "answer_type_conflicts": float(typed.conflicts),
        "answer_calculated": float(_calculated(answer, evidence, facts, derived.calculations)),
        "premise_refuted": float(_refuted(answer, derived)),
    }
    values.update({f"asks_{form}": float(form == kind) for form in ANSWER_FORMS})
    return values


def _support(question: str, answer: str, evidence: Sequence[str]) -> dict[str, float]:
    needle = " ".join(words(answer))
    if not needle:
        return {"answer_support": 0.0, "answer_beyond_top": 0.0, "bridge_in_top": 0.0}
    pattern = re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")
    stating = [bool(pattern.search(" ".join(words(text)))) for text in evidence]
    beyond = bool(stating) and not stating[0] and any(stating[1:])
    bridge_first = stating[:1] == [True] and describes_another(question)
    return {"answer_support": min(sum(stating), 3) / 3, "answer_beyond_top": float(beyond),
            "bridge_in_top": float(bridge_first)}


@dataclass(frozen=True)
class Statement:
    """How the retrieved text states an answer, item by item for a listed one ('A, B and C')."""

    plain: bool      # each item: one clause holds it and every term of the question, next to a relation word
    supported: bool  # each item: some sentence stating it shares a term with the question


def statement(question: str, answer: str, evidence: Sequence[str]) -> Statement:
    """Terms are stems, so 'discover' meets 'discovered'. The relation words are the question's terms
    written in lower case (what it says of the names it gives), and 'next to' is at most _PLAIN_GAP
    words away: 'Curie was born in Warsaw' states Warsaw plainly for 'Where was Curie born?'; 'Perey
    discovered francium at the Radium Institute in Paris' does not state Paris as what she discovered,
    nor does 'the electron by Thomson, the neutron by Chadwick' state Thomson as the neutron's finder.
    An item that repeats a word of the question ('Radio City Music Hall' for '… Live at Radio City')
    is never a plain statement of it."""
    sentences = [sentence for text in evidence for sentence in split_sentences(text)]
    readings = [_item_reading(question, item, sentences) for item in _items(answer)]
    return Statement(plain=all(plain for plain, _ in readings), supported=all(related for _, related in readings))


def _item_reading(question: str, item: str, sentences: Sequence[str]) -> tuple[bool, bool]:
    """(stated plainly, stated in a sentence related to the question) for one item."""
    needle = words(item)
    asked = asked_terms(question, item)
    relations = asked & frozenset(word_stem(w) for w in WORD.findall(question) if w.islower())
    pattern = _phrase(" ".join(needle))
    plain, related = False, False
    for sentence in sentences:
        if not needle or not pattern.search(" ".join(words(sentence))):
            continue
        related = related or not asked or bool(asked & _terms(sentence))
        for part in _CLAUSE_BREAK.split(_ASIDE.sub(" ", sentence)):
            said = words(part)
            starts = [i for i in range(len(said) - len(needle) + 1) if said[i:i + len(needle)] == needle]
            near = [i for i, w in enumerate(said) if word_stem(w) in relations]
            plain = plain or bool(asked) and asked <= _terms(part) and any(
                min(abs(r - s), abs(r - (s + len(needle) - 1))) <= _PLAIN_GAP + 1 for s in starts for r in near)
    return plain and not set(needle) & set(content_words(question)), related


def asked_terms(question: str, answer: str) -> frozenset[str]:
    """The stems a plain statement of `answer` must hold: the question's content words, less the
    answer's own, the noun naming what is asked for ('year' in 'what year', 'city' in 'which city'),
    which a statement gives as the answer itself, and the options of an 'A or B' question: naming the
    other option says nothing of the property they are compared by."""
    said = words(question)
    asked_for = {i + 1 for i, w in enumerate(said[:-1]) if w in _WH_DETERMINERS
                 or (w in ("many", "much") and i > 0 and said[i - 1] == "how")}
    options = frozenset().union(*(_terms(option) for option in choice_options(question)))
    return frozenset(word_stem(w) for i, w in enumerate(said) if w not in STOPWORDS and i not in asked_for) \
        - _terms(answer) - options


def _terms(text: str) -> frozenset[str]:
    return frozenset(word_stem(w) for w in words(text))


def _items(answer: str) -> list[str]:
    """A listed answer's items ('A, B and C' → A, B, C); any other answer is one item."""
    return [part for part in list_items(answer) if words(part)] or [answer]


def _phrase(needle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")


@dataclass(frozen=True)
class Derived:
    """What the run concluded itself from what it read, which no sentence need state: its calculations
    that gave a result, (expression, result), and whether its premise check found the question's premise
    false (a decision step of action 'false_premise')."""

    calculations: tuple[tuple[str, float], ...] = ()
    false_premise: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"calculations": [list(c) for c in self.calculations], "false_premise": self.false_premise}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Derived:
        return cls(tuple((str(e), float(r)) for e, r in data.get("calculations", ())),
                   bool(data.get("false_premise", False)))


def derived_support(question: str, answer: str, evidence: Sequence[str], facts: Sequence[tuple[str, str]],
                    derived: Derived) -> bool:
    """Whether the run derived the answer from what it read, though no sentence states it: a graph fact
    of the run ties it to a name the question gives; its premise check refuted the question it calls
    invalid; or a calculation of the run whose every operand is a number the retrieved text or a graph
    fact writes gave it — as the number itself ('1934 - 1867' for how old Curie was), or as the number
    a sentence or fact gives of it ('max(1094, 1047)' for the Elbe, 1,094 km long, as the longer river).
    A number the calculation made up is no support."""
    if _in_graph(question, answer, facts):
        return True
    return _refuted(answer, derived) or _calculated(answer, evidence, facts, derived.calculations)


def _refuted(answer: str, derived: Derived) -> bool:
    """Whether the answer is the verdict of the run's premise check (the question is invalid). The method
    scores that verdict 0 (the hybrid's raw confidence), so the raw score alone put these answers near
    0.1, though on the demo pack all 11 were right (spaceflight 2 of 3, geo 0 of 1)."""
    return derived.false_premise and answer.strip().lower() == INVALID_QUESTION


def _calculated(answer: str, evidence: Sequence[str], facts: Sequence[tuple[str, str]],
                calculations: Sequence[tuple[str, float]]) -> bool:
    """Whether a calculation whose every operand the retrieved text or a graph fact writes gave the answer
    (derived_support). As a feature it raised the odds on all four packs measured (demo 0.79 right vs
    0.51, geo 0.82 vs 0.35, HotpotQA 1.00 vs 0.35, spaceflight 0.50 vs 0.31): an answer computed from
    stated numbers is no guess, though no sentence states it."""
    if not calculations:
        return False
    units = [*(sentence for text in evidence for sentence in split_sentences(text)), *(" ".join(f) for f in facts)]
    given = set(_numbers(" ".join(units)))
    said, needle = _numbers(answer), _phrase(" ".join(words(answer)))
    for expression, result in calculations:
        operands = set(_numbers(expression))
        if not operands or not operands <= given:
            continue
        if said[:1] == [result] or not said and any(
                result in _numbers(unit) and needle.search(" ".join(words(unit))) for unit in units):
            return True
    return False


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(_THOUSANDS.sub("", text))]


def _in_graph(question: str, answer: str, facts: Sequence[tuple[str, str]]) -> bool:
    said, asked = " ".join(words(answer)), set(content_words(question))
    for a, b in facts:
        for end, other in ((a, b), (b, a)):
            if said and " ".join(words(end)) == said and asked & set(content_words(other)):
                return True
    return False


def _mismatch(kind: str, answer: str) -> bool:
    """An answer whose form rules it out: no number for a count, no year for a date, a number for a name.
    The premise check's verdict (INVALID_QUESTION) answers a question of any kind and says nothing of its
    form, and 'twice' is a count: counted as mismatches, these two made 9 of the demo pack's 10 mismatches,
    all right, and an unconstrained fit weighed the mismatch +1.49 (issue 27)."""
    if answer.strip().lower() == INVALID_QUESTION:
        return False
    lowered = set(words(answer))
    has_number = bool(_DIGIT.search(answer)) or bool(lowered & _NUMBER_WORDS)
    if kind == "number":
        return not has_number
    if kind == "date":
        return not _DIGIT.search(answer)  # a year, a day, a decade: every date has a digit
    if kind in ("person", "place"):
        return has_number and not any(c.isupper() for c in answer)
    if kind == "yes_no":
        return not lowered & {"yes", "no"}
    return False
