"""The offline `Reader`: score the evidence sentences, answer by question type, refuse below the threshold.

The threshold (`RAW_REFUSAL_SCORE`) is the reader's own cut-off on its raw score, set by hand; the run's
min_confidence (engine.params.AnswerPolicy) is another thing, on the calibrated confidence, applied after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from engine.cache import LruCache
from engine.knowledge.records import Triple
from engine.retrieval.embedder import Embedder
from engine.tools.base import IDK, AnswerType, QuestionClassifier, Reading
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.tools.offline_reader.candidates import in_question
from engine.tools.offline_reader.choice import read_choice
from engine.tools.offline_reader.context import Context, refusal
from engine.tools.offline_reader.count import asks_count, read_count
from engine.tools.offline_reader.difference import asks_difference, read_difference
from engine.tools.offline_reader.extractive import read_extractive
from engine.tools.offline_reader.hops import find_hop
from engine.tools.offline_reader.mentions import mentioned
from engine.tools.offline_reader.names import Gazetteer, key_of, named_spans, span_text
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import (
    as_sentence,
    boost_bridges,
    content_stems,
    embedding_text,
    evidence_sentences,
    extra_names,
    idf_weights,
    lexical_overlap,
    link_titles,
)
from engine.tools.offline_reader.yes_no import read_yes_no
from engine.trace import ErrorStep, Hit

RAW_REFUSAL_SCORE = 0.3  # the reader's own raw score below which it refuses: not the run's min_confidence
MAX_EMBEDDED = 8  # sentences embedded per read: MiniLM costs ~3-4 ms a sentence on 2 cores
MAX_HOPS = 2  # nested relations: 'the uncle of the physicist who shared …'
HOP_CONFIDENCE = 0.3
_CACHE_SIZE = 4096


class OfflineReader:
    """Extractive, answer-type-aware reading with the MiniLM encoder; no language model needed."""

    def __init__(
        self,
        embedder: Embedder,
        classifier: QuestionClassifier | None = None,
        entities: Sequence[str] = (),
        threshold: float = RAW_REFUSAL_SCORE,
        relations: Sequence[str] = (),
        *,
        max_embedded: int = MAX_EMBEDDED,
    ):
        self.embedder = embedder
        self.classifier = classifier or OfflineQuestionClassifier()
        self.threshold = float(threshold)
        self.max_embedded = max(1, int(max_embedded))
        self._gazetteer = Gazetteer(entities, relations)
        self._sentences: LruCache[str, np.ndarray] = LruCache(_CACHE_SIZE)

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        try:
            return self._read(str(question or ""), tuple(evidence or ()), tuple(facts or ()))
        except Exception as exc:  # noqa: BLE001 — the Reader contract: never raise, report instead
            message = f"offline reader failed: {type(exc).__name__}: {exc}"
            error = ErrorStep(title="reader error", message=message, recoverable=True)
            return Reading(answer=IDK, refused=True, rationale=message, steps=(error,))

    def _read(self, question: str, evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> Reading:
        if not question.strip():
            return refusal("the question is empty")
        sentences = evidence_sentences(evidence, facts)
        if not sentences:
            return refusal("there is no evidence to read")
        gazetteer = self._gazetteer.extended(extra_names(evidence, facts))
        reading = _check_premise(question, self._answer(question, sentences, gazetteer), sentences, gazetteer)
        if reading.refused or reading.confidence >= self.threshold:
            return reading
        return replace(
            reading,
            answer=IDK,
            refused=True,
            rationale=f"best guess {reading.answer!r} at confidence {reading.confidence:.2f} is below "
            f"the threshold {self.threshold:.2f}; {reading.rationale}",
        )

    def _answer(
        self, question: str, sentences: list[Sentence], gazetteer: Gazetteer,
        depth: int = 0, answer_type: AnswerType | None = None,
    ) -> Reading:
        answer_type = answer_type or self.classifier.classify(question)
        context = Context(question, answer_type, gazetteer, self._score(question, sentences))
        if depth < MAX_HOPS and answer_type.kind not in ("choice", "yes_no"):
            bridged = self._bridged(context, sentences, depth)
            if bridged is not None:
                return bridged
        return _dispatch(context)

    def _bridged(self, context: Context, sentences: list[Sentence], depth: int) -> Reading | None:
        """Multi-hop by substitution: answer 'X's advisor' first, then the question about them."""
        hop = find_hop(context)
        if hop is None:
            return None
        sub = self._answer(hop.sub_question, sentences, context.gazetteer, depth + 1, AnswerType(hop.kind))
        if sub.refused or sub.confidence < HOP_CONFIDENCE:
            return None
        if in_question(key_of(sub.answer), context.question_words):
            return None
        rewritten = context.question.replace(hop.phrase, sub.answer)
        final = self._answer(rewritten, sentences, context.gazetteer, depth + 1)
        if final.refused:
            return None
        return Reading(
            answer=final.answer,
            citations=tuple(dict.fromkeys(sub.citations + final.citations)),
            confidence=round(final.confidence * (0.6 + 0.4 * sub.confidence), 4),
            rationale=f"first hop: {hop.phrase!r} is {sub.answer!r} ({sub.rationale}); "
            f"then {final.rationale}",
            steps=sub.steps + final.steps,
        )

    # ---- sentence scoring: MiniLM cosine + content-word overlap + rank prior ----------------

    def _score(self, question: str, sentences: list[Sentence]) -> list[Sentence]:
        question_stems = content_stems(question)
        idf = idf_weights(sentences)
        lexical = [lexical_overlap(question_stems, s, idf) for s in sentences]
        order = sorted(range(len(sentences)), key=lambda i: (-lexical[i], sentences[i].position))
        # the same sentences whatever was read before: an answer must not depend on earlier questions
        embedded = order[: self.max_embedded]
        vectors = self._cosines(question, [sentences[i] for i in embedded])
        cosines = dict(zip(embedded, vectors))
        # sentences left out of the embedding batch ranked lower lexically; give them the floor
        floor = min(min(vectors, default=0.0), 0.2)
        scored = []
        for i, sentence in enumerate(sentences):
            cosine = cosines.get(i, floor)
            prior = 1.0 / (1.0 + sentence.position)
            score = 0.55 * cosine + 0.45 * lexical[i] + 0.05 * prior
            scored.append(replace(sentence, score=score))
        return link_titles(boost_bridges(scored, question_stems, idf))

    def _cosines(self, question: str, sentences: list[Sentence]) -> list[float]:
        if not sentences:
            return []
        query = self.embedder.encode_queries([question])[0]
        vectors = self._encode([embedding_text(s) for s in sentences])  # (n, 384)
        return [float(v) for v in vectors @ query]

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors through a small LRU cache: iterative methods re-read the same chunks."""
        return np.stack(self._sentences.get_many(texts, self.embedder.encode))


def _dispatch(context: Context) -> Reading:
    kind = context.answer_type.kind
    if kind == "choice":
        return read_choice(context)
    if kind == "yes_no":
        return read_yes_no(context)
    if kind == "number" and asks_difference(context.question_words):
        reading = read_difference(context)
        if reading is not None:
            return reading
    if kind == "number" and asks_count(context.question):
        reading = read_count(context)
        if reading is not None:
            return reading
    return read_extractive(context)


# ---- premise check ------------------------------------------------------------------------------


def _check_premise(
    question: str, reading: Reading, sentences: list[Sentence], gazetteer: Gazetteer
) -> Reading:
    """A name the question relies on that no evidence sentence mentions makes any answer doubtful."""
    if reading.refused:
        return reading
    missing = [a for a in _premise_anchors(question, gazetteer) if not mentioned(a, sentences)]
    if not missing:
        return reading
    return replace(
        reading,
        confidence=round(reading.confidence * 0.4 ** len(missing), 4),
        rationale=f"the evidence never mentions {', '.join(missing)}; {reading.rationale}",
    )


def _premise_anchors(question: str, gazetteer: Gazetteer) -> list[str]:
    sentence = as_sentence(question)
    anchors = []
    for a, b, source in named_spans(sentence, gazetteer):
        # the first word of a question is capitalised anyway ('Roughly how old …')
        if a == 0 and b == 0 and source == "caps":
            continue
        anchors.append(span_text(sentence, a, b))
    return anchors
