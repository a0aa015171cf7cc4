"""The features the calibration model reads: general properties of a question and its answer.

Nothing here names a domain: the asked kind comes from the offline classifier's question grammar, the
answer's shape from its characters (digits, capitals), overlap from the shared tokenizer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from engine.text import content_words, split_sentences, words
from engine.tools.offline_classifier import OfflineQuestionClassifier

KINDS = ("yes_no", "choice", "number", "date", "person", "place", "entity", "other")
FEATURES = (
    "raw_logit",       # the method's own score, as a log-odds
    "question_words",  # content words in the question / 20, capped at 1: long questions chain more hops
    "answer_in_question",  # share of the answer's content words the question already holds
    "answer_words",    # words in the answer / 6, capped at 1
    "shape_mismatch",  # 1 when the answer cannot be what the question asks for (no number for 'how many')
    "answer_support",  # documents among those the run retrieved that state the answer / 3, capped at 1
    "answer_in_top",   # 1 when the run's first retrieved chunk states the answer
    "sentence_coverage",  # most of the question's other content words one sentence stating the answer holds
    "answer_in_graph",  # 1 when a graph fact of the run links a name the question gives to the answer
    *(f"asks_{kind}" for kind in KINDS),
)
_DIGIT = re.compile(r"\d")
_NUMBER_WORDS = frozenset("one two three four five six seven eight nine ten eleven twelve dozen hundred "
                          "thousand million billion".split())
_CLASSIFIER = OfflineQuestionClassifier()


def answer_features(question: str, answer: str, raw: float, evidence: Sequence[str] = (),
                    facts: Sequence[tuple[str, str]] = ()) -> dict[str, float]:
    """Feature name → value for one answered question (FEATURES order is the model's).

    `evidence` is the text of each document the run retrieved, best first: an answer many of them state
    says the answer; `facts` the (source, target) names of the graph edges the run added.

    What the evaluation runs show (all three packs alike): an answer that most retrieved documents
    state, or that the first one states, is more often wrong than right — it is usually the topic the
    question is about, not its answer; an answer one sentence states beside most of the question's
    words, or a graph fact ties to a name in the question, is more often right."""
    kind = _CLASSIFIER.classify(question).kind
    kind = kind if kind in KINDS else "other"
    asked = set(content_words(question))
    said = content_words(answer) or words(answer)
    clipped = min(0.99, max(0.01, float(raw)))
    values = {
        "raw_logit": math.log(clipped / (1 - clipped)),
        "question_words": min(len(asked), 20) / 20,
        "answer_in_question": sum(w in asked for w in said) / len(said) if said else 1.0,
        "answer_words": min(len(words(answer)), 6) / 6,
        "shape_mismatch": float(_mismatch(kind, answer)),
        **_support(question, answer, evidence),
        "answer_in_graph": float(_in_graph(question, answer, facts)),
    }
    values.update({f"asks_{k}": float(k == kind) for k in KINDS})
    return values


def _support(question: str, answer: str, evidence: Sequence[str]) -> dict[str, float]:
    needle = " ".join(words(answer))
    if not needle:
        return {"answer_support": 0.0, "answer_in_top": 0.0, "sentence_coverage": 0.0}
    pattern = re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")
    stating = [bool(pattern.search(" ".join(words(text)))) for text in evidence]
    asked = set(content_words(question)) - set(words(answer))
    coverage = 0.0
    for text, states in zip(evidence, stating):
        if states and asked:
            for sentence in split_sentences(text):
                if pattern.search(" ".join(words(sentence))):
                    coverage = max(coverage, len(asked & set(content_words(sentence))) / len(asked))
    return {"answer_support": min(sum(stating), 3) / 3, "answer_in_top": float(bool(stating) and stating[0]),
            "sentence_coverage": coverage}


def _in_graph(question: str, answer: str, facts: Sequence[tuple[str, str]]) -> bool:
    said, asked = " ".join(words(answer)), set(content_words(question))
    for a, b in facts:
        for end, other in ((a, b), (b, a)):
            if said and " ".join(words(end)) == said and asked & set(content_words(other)):
                return True
    return False


def _mismatch(kind: str, answer: str) -> bool:
    """An answer whose form rules it out: no number for a count, no year for a date, a number for a name."""
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
