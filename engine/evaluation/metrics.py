"""Answer and retrieval metrics, one definition for every method (DESIGN §10)."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from engine.knowledge.records import Pack, Question
from engine.text import list_items
from engine.tools.base import IDK
from engine.trace import ErrorStep, Trace

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
RECALL_KS = (5, 10)


def normalize(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces.

    Kept as SQuAD defines it, so our EM compares with published figures, with its known quirk: answers that
    differ only in punctuation are one answer — "C", "C++" and "C#" all normalise to "c", "U.S." and "US" to
    "us". A pack whose answers differ that way is scored leniently by EM; read F1 and the answers themselves."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def exact_match(answer: str, golds: Sequence[str]) -> float:
    return float(any(normalize(answer) == normalize(g) for g in golds))


def token_f1(answer: str, gold: str) -> float:
    pred, ref = normalize(answer).split(), normalize(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or common == 0:
        return float(pred == ref)
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def contains(answer: str, gold: str) -> bool:
    norm_gold = normalize(gold)
    return bool(norm_gold) and re.search(rf"(?<!\w){re.escape(norm_gold)}(?!\w)", normalize(answer)) is not None


@dataclass(frozen=True)
class AnswerScores:
    em: float
    f1: float
    acc: float
    outcome: str  # correct | missing | hallucinated (CRAG)


_CRAG_SCORE = {"correct": 1.0, "missing": 0.0, "hallucinated": -1.0}


def crag_score(outcome: str) -> float:
    """One answer's CRAG score: +1 correct, 0 missing (a refusal), −1 hallucinated; its mean is the CRAG score."""
    return _CRAG_SCORE.get(outcome, 0.0)


def set_scores(answer: str, golds: Sequence[str]) -> tuple[float, float]:
    """(set F1, recall) of a listed answer against a set question's gold items.

    Recall is the share of gold items the answer names; precision the share of the answer's items (split at
    commas, semicolons, 'and') that name a gold item or are part of one ('Marks' and 'Spencer' from
    'Marks and Spencer'). Naming every item of the set and more is no longer a full answer."""
    if not golds:
        return 0.0, 0.0
    recall = sum(contains(answer, g) for g in golds) / len(golds)
    items = [item for item in list_items(answer) if normalize(item)]
    matched = sum(any(contains(item, g) or contains(g, item) for g in golds) for item in items)
    precision = matched / len(items) if items else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f1, recall


def score_answer(answer: str, golds: Sequence[str], qtype: str, refused: bool = False) -> AnswerScores:
    """`set` questions score by set F1 (`set_scores`): EM and the CRAG outcome need exactly the set, F1 is
    the set F1 and accuracy the share of gold items named; others take the max over aliases."""
    if qtype == "set":
        f1, acc = set_scores(answer, golds)
        em = float(f1 == 1.0)
    else:
        em = exact_match(answer, golds)
        f1 = max((token_f1(answer, g) for g in golds), default=0.0)
        acc = float(any(contains(answer, g) for g in golds))
    # CRAG: "I don't know" is missing, also on a false premise, whose correct answer is "invalid question"
    missing = refused or normalize(answer) in ("", normalize(IDK))
    right = em == 1.0 if qtype == "set" else acc == 1.0
    outcome = "correct" if right else "missing" if missing else "hallucinated"
    return AnswerScores(em=em, f1=f1, acc=acc, outcome=outcome)


def backend_failure(trace: Trace) -> ErrorStep | None:
    """The first step saying a model server, vector store or other outside service failed in this run, or None.

    The one test of "this answer rests on a failed backend" (issue 26): the run ended on it (engine.runner) or a
    tool fell back after it (a failed model call); either way the answer is not what the method gives with its
    backend working, so evaluations count it, `ask` and `eval` exit non-zero and the answer card says so."""
    return next((s for s in trace.steps if isinstance(s, ErrorStep) and s.backend_failure), None)


def pack_question(trace: Trace, pack: Pack) -> Question | None:
    """The pack question the trace asked, only when it was asked on that pack: a question id alone could name
    another pack's question."""
    return pack.questions_by_id.get(trace.question_id) if trace.pack == pack.info.name else None


def grade_trace(trace: Trace, pack: Pack) -> tuple[tuple[str, ...], AnswerScores | None]:
    """The gold answers and the answer's scores when the trace's question is one of `pack`'s (asked on
    that pack); ((), None) for a question of the user's own."""
    question = pack_question(trace, pack)
    if question is None:
        return (), None
    if trace.answer is None:
        return question.answers, None
    return question.answers, score_answer(trace.answer.text, question.answers, question.type, trace.answer.refused)


def recall_at(evidence: Sequence[str], supporting: Sequence[str], k: int | None) -> float | None:
    """1.0 when every supporting doc is among the first k distinct evidence docs; None if no gold."""
    if not supporting:
        return None
    ranked = list(dict.fromkeys(evidence))
    window = set(ranked if k is None else ranked[:k])
    return float(all(doc in window for doc in supporting))


def average_precision(evidence: Sequence[str], supporting: Sequence[str]) -> float | None:
    """AP of the distinct evidence ranking: mean precision at each supporting doc's rank, over all
    supporting docs (one never retrieved counts 0); None if no gold. MAP is its mean over questions."""
    if not supporting:
        return None
    gold, found, total = set(supporting), 0, 0.0
    for rank, doc in enumerate(dict.fromkeys(evidence), start=1):
        if doc in gold:
            found += 1
            total += found / rank
    return total / len(gold)


def reciprocal_rank(evidence: Sequence[str], supporting: Sequence[str]) -> float | None:
    """1/rank of the first supporting doc in the distinct evidence ranking, 0.0 when none was retrieved; None
    if no gold. MRR is its mean over questions with gold (Voorhees, TREC-8 QA track, 1999), as MAP is AP's."""
    if not supporting:
        return None
    gold = set(supporting)
    return next((1 / rank for rank, doc in enumerate(dict.fromkeys(evidence), start=1) if doc in gold), 0.0)


def ndcg_at(evidence: Sequence[str], supporting: Sequence[str], k: int) -> float | None:
    """nDCG@k with binary relevance (Järvelin & Kekäläinen 2002, "Cumulated gain-based evaluation of IR
    techniques"): DCG@k = Σ_{i≤k} rel_i / log2(i+1) over the distinct evidence ranking, divided by the ideal
    IDCG@k = Σ_{i≤min(k,|gold|)} 1/log2(i+1), every supporting doc ranked first. Unlike recall@k it credits
    a supporting doc more the higher it ranks; None if no gold."""
    if not supporting:
        return None
    gold = set(supporting)
    dcg = sum(1 / math.log2(rank + 1) for rank, doc in enumerate(list(dict.fromkeys(evidence))[:k], start=1)
              if doc in gold)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


def auroc(confidences: Sequence[float], right: Sequence[bool]) -> float | None:
    """Area under the ROC curve of `confidences` as a score for `right`: the probability that a random
    right answer has a higher confidence than a random wrong one, a tie counting one half (the
    Mann–Whitney U statistic over both counts). It measures ordering only — what a refusal threshold
    needs first — so it is unchanged by any monotone rescaling, unlike ECE. 0.5 is chance, 1.0 puts
    every right answer above every wrong one. None when either class is empty: nothing to order."""
    if len(confidences) != len(right):
        raise ValueError(f"{len(confidences)} confidences for {len(right)} outcomes")
    ranked = sorted(zip(confidences, right), key=lambda pair: pair[0])
    positives = sum(right)
    negatives = len(ranked) - positives
    if positives == 0 or negatives == 0:
        return None
    wins, start = 0.0, 0
    wrong_below = 0  # wrong answers with a strictly lower confidence than the current group
    while start < len(ranked):
        end = start
        while end < len(ranked) and ranked[end][0] == ranked[start][0]:
            end += 1
        group = [r for _, r in ranked[start:end]]
        hits = sum(group)
        wins += hits * wrong_below + hits * (len(group) - hits) / 2
        wrong_below += len(group) - hits
        start = end
    return round(wins / (positives * negatives), 4)
