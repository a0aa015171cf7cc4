"""Evidence as sentences: splitting, tokens, stems, IDF, lexical overlap, bridging and title links."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from engine.knowledge.records import Triple
from engine.text import STOPWORDS, WORD, contains_run, split_sentences
from engine.tools.offline_reader.lexicon import IRREGULAR, SUBJECT_PRONOUNS, lower_words
from engine.tools.offline_reader.names import capitalised_spans
from engine.tools.offline_reader.records import Sentence
from engine.trace import Hit

MAX_SENTENCES = 400  # lexical scoring bound for very long evidence
MAX_CHARS_PER_HIT = 20_000
MAX_SENTENCE_CHARS = 600
EMBED_CHARS = 300  # encoder cost grows with length; the head of a sentence carries its topic


# ---- evidence → sentences ------------------------------------------------------------------------


def evidence_sentences(evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> list[Sentence]:
    sentences: list[Sentence] = []
    for position, hit in enumerate(evidence):
        text = str(getattr(hit, "text", "") or "")[:MAX_CHARS_PER_HIT]
        doc_id, title = str(getattr(hit, "doc_id", "") or ""), str(getattr(hit, "title", "") or "")
        for piece in split_sentences(text, MAX_SENTENCE_CHARS):
            sentences.append(tokenised(Sentence(piece, doc_id, title, position)))
    for triple in facts:
        text = fact_sentence(triple)
        if text:
            sentences.append(tokenised(Sentence(text, "", str(triple.head), len(evidence))))
    return sentences[:MAX_SENTENCES]


def fact_sentence(triple: Triple) -> str:
    """A KG triple read as a sentence: 'head relation with spaces tail (time)'."""
    relation = re.sub(r"[_\s]+", " ", str(triple.relation or "")).strip()
    parts = (str(triple.head or "").strip(), relation, str(triple.tail or "").strip())
    text = " ".join(p for p in parts if p)
    return f"{text} ({triple.time})" if getattr(triple, "time", "") else text


def as_sentence(text: str) -> Sentence:
    """A text with no source (the question) read like evidence, for the same span finders."""
    return tokenised(Sentence(text, "", "", 0))


def tokenised(sentence: Sentence) -> Sentence:
    spans = tuple((m.start(), m.end()) for m in WORD.finditer(sentence.text))
    lowered = tuple(sentence.text[a:b].lower() for a, b in spans)
    breaks = [0] * (len(spans) + 1)
    for i in range(1, len(spans)):
        gap = sentence.text[spans[i - 1][1]: spans[i][0]]
        breaks[i] = breaks[i - 1] + gap.count(",") + gap.count(";")
    return replace(sentence, tokens=spans, lowered=lowered, clauses=tuple(breaks[: len(spans)]))


def bare_title(title: str) -> str:
    """A title without its qualifier: 'Mercury (planet)' → 'Mercury'."""
    return re.sub(r"\s*\(.*\)\s*$", "", title).strip()


def embedding_text(sentence: Sentence) -> str:
    # the title resolves pronouns ("She won…") for the encoder; KG facts already name their head
    text = sentence.text
    if sentence.title and sentence.doc_id and sentence.title.lower() not in text.lower():
        text = f"{sentence.title}: {text}"
    return text[:EMBED_CHARS]


def extra_names(evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> list[str]:
    names = [str(getattr(h, "title", "") or "") for h in evidence]
    for triple in facts:
        names.extend((str(triple.head), str(triple.tail)))
    return [n for n in names if n]


# ---- lexical overlap ----------------------------------------------------------------------------


def word_stem(word: str) -> str:
    """A crude stem so 'founded'/'founder', 'died'/'die' and 'received'/'receive' meet."""
    word = word.lower()
    word = IRREGULAR.get(word, word)
    if len(word) <= 3:
        return word
    if len(word) == 4 and word.endswith("ied"):
        return word[:-1]
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def content_stems(text: str) -> frozenset[str]:
    return frozenset(word_stem(w) for w in WORD.findall(text) if w.lower() not in STOPWORDS)


def content_stems_of(texts: Iterable[str]) -> frozenset[str]:
    return frozenset().union(*(content_stems(t) for t in texts))


def _sentence_stems(sentence: Sentence) -> frozenset[str]:
    return frozenset(word_stem(w) for w in sentence.lowered if w not in STOPWORDS)


def idf_weights(sentences: Sequence[Sentence]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for sentence in sentences:
        for stem in _sentence_stems(sentence) | content_stems(sentence.title):
            counts[stem] = counts.get(stem, 0) + 1
    total = len(sentences) + 1
    return {stem: math.log(1 + total / (n + 0.5)) for stem, n in counts.items()} | {
        "": math.log(1 + total / 0.5)
    }


def lexical_overlap(question_stems: frozenset[str], sentence: Sentence, idf: dict[str, float]) -> float:
    """IDF-weighted share of the question's content words found in the sentence (title at half)."""
    if not question_stems:
        return 0.0
    body, title = _sentence_stems(sentence), content_stems(sentence.title)
    # 'She was born in Warsaw' on the page 'Marie Curie' is about Marie Curie
    title_share = 1.0 if sentence.lowered[:1] and sentence.lowered[0] in SUBJECT_PRONOUNS else 0.5
    unseen = idf[""]
    found = weight = 0.0
    for stem in question_stems:
        w = idf.get(stem, unseen)
        weight += w
        found += w if stem in body else title_share * w if stem in title else 0.0
    return found / weight if weight else 0.0


def boost_bridges(
    sentences: list[Sentence], question_stems: frozenset[str], idf: dict[str, float]
) -> list[Sentence]:
    """Multi-hop: names in the best sentences that the question lacks pull in their own sentences."""
    top = sorted(sentences, key=lambda s: -s.score)[:2]
    bridge = frozenset(
        word_stem(w)
        for s in top
        for a, b in capitalised_spans(s)
        for w in s.lowered[a: b + 1]
        if w not in STOPWORDS
    ) - question_stems
    if not bridge:
        return sentences
    keep = {id(s) for s in top}
    return [
        s if id(s) in keep else replace(s, score=s.score + 0.15 * lexical_overlap(bridge, s, idf))
        for s in sentences
    ]


def link_titles(sentences: list[Sentence]) -> list[Sentence]:
    """Multi-hop: a document named in another document's relevant sentence is the next hop."""
    links: dict[str, float] = {}
    for title in {s.title for s in sentences if s.title and s.doc_id}:
        words = lower_words(bare_title(title))
        if not words or all(w in STOPWORDS for w in words):
            continue
        linked = [s.score for s in sentences if s.title != title and contains_run(list(s.lowered), words)]
        if linked:
            links[title] = max(linked)
    if not links:
        return sentences
    return [replace(s, score=s.score + 0.3 * max(0.0, links[s.title])) if s.title in links else s
            for s in sentences]
