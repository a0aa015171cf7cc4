"""An answer-type-aware extractive reader that needs no language model: the offline `Reader`.

It splits evidence into sentences, scores them against the question (MiniLM cosine + content-word
overlap + retrieval rank), pulls typed candidates out of the best ones (years and dates, numbers,
named spans), and answers with the candidate whose supporting sentences weigh most. Comparisons
("A or B"), year differences and yes/no questions have small dedicated paths; arithmetic goes
through the safe calculator and is recorded as a `calculation` step.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from engine.knowledge.records import Triple
from engine.retrieval.embedder import Embedder
from engine.retrieval.text import STOPWORDS
from engine.tools.base import IDK, AnswerType, QuestionClassifier, Reader, Reading
from engine.tools.calculator import calculation_step
from engine.tools.offline_classifier import DATE_NOUNS, PERSON_NOUNS, PLACE_NOUNS, OfflineQuestionClassifier
from engine.trace import ErrorStep, Hit, Step

DEFAULT_THRESHOLD = 0.3
MAX_EMBEDDED = 8  # sentences embedded per read: MiniLM costs ~3-4 ms a sentence on 2 cores
MAX_SENTENCES = 400  # lexical scoring bound for very long evidence
MAX_CHARS_PER_HIT = 20_000
MAX_SENTENCE_CHARS = 600
EMBED_CHARS = 300  # encoder cost grows with length; the head of a sentence carries its topic
MAX_HOPS = 2  # nested relations: 'the uncle of the physicist who shared …'
HOP_CONFIDENCE = 0.3
_CACHE_SIZE = 4096

# ---- lexicons (general English, not tied to any dataset) ----------------------------------------

_MONTH_NAMES = (
    "january february march april may june july august september october november december".split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_CONNECTORS = frozenset("of de da di del della des du la le los las von van der den y the".split())
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr mt ft co inc ltd corp vs etc no gen col lt sgt capt rev prof gov sen "
    "rep jan feb mar apr jun jul aug sep sept oct nov dec approx est fl ca".split()
)
_NEGATIONS = frozenset("not never no neither nor without n't cannot none".split())
_PLACE_CUES = frozenset("in at from near located based into across of".split())
_INSTITUTION_WORDS = frozenset(
    "university college school institute institution laboratory company corporation inc ltd records "
    "club church museum party award prize medal festival station airport stadium league association "
    "society council department ministry bank hotel hospital academy theatre theater film album "
    "series band group team army navy force corps agency committee foundation".split()
)
_GEO_WORDS = frozenset(
    "river city county street province state kingdom republic empire park island mountain lake "
    "sea ocean bay valley district region".split()
)
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "dozen": 12, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "once": 1, "twice": 2,
}
_ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_UNITS = frozenset(
    "km kilometres kilometers mi miles mph m metres meters ft feet foot cm mm kg g tonnes tons lb "
    "pounds % percent acres hectares sq km² m² km/h kmh".split()
)
_TEMPORAL_WORDS = frozenset(
    "born birth died death founded established formed created built opened started launched "
    "released published premiered began first earlier earliest older oldest younger youngest later "
    "latest last before after newer newest sooner recent recently introduced incorporated".split()
)
_DEATH_WORDS = frozenset("died death dead killed".split())
_DEMONYM_NOUNS = frozenset("nationality nationalities citizenship ethnicity".split())
_DEMONYM = re.compile(r"(?:an|ian|ese|ish|ch|i|ic)$")
_IRREGULAR = dict(
    pair.split(":") for pair in (
        "won:win wrote:write written:write began:begin begun:begin became:become led:lead "
        "taught:teach built:build made:make held:hold gave:give given:give took:take taken:take "
        "met:meet left:leave sold:sell bought:buy grew:grow grown:grow knew:know spoke:speak "
        "chose:choose chosen:choose drew:draw drawn:draw sang:sing sung:sing fought:fight "
        "thought:think brought:bring sent:send spent:spend lost:lose fell:fall saw:see seen:see "
        "went:go gone:go came:come ran:run wore:wear worn:wear shot:shoot flew:fly flown:fly"
    ).split()
)
_SUBJECT_PRONOUNS = frozenset("he she his her it its they their".split())
# a relation read from the other side: 'X's uncle' is stated as 'Y, the nephew of X'
_INVERSES = {
    "uncle": "nephew niece", "aunt": "nephew niece", "nephew": "uncle aunt", "niece": "uncle aunt",
    "father": "son daughter child", "mother": "son daughter child", "parent": "son daughter child",
    "son": "father mother parent", "daughter": "father mother parent", "child": "father mother parent",
    "grandfather": "grandson granddaughter", "grandson": "grandfather grandmother",
    "husband": "wife", "wife": "husband", "advisor": "student students", "supervisor": "student students",
    "teacher": "student pupil", "student": "advisor supervisor teacher supervised", "employer": "employee",
}
_BIRTH_WORDS = frozenset("born birth".split())

# ---- patterns -------------------------------------------------------------------------------------

_MON = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_FULL_DATE = re.compile(
    rf"\b(?:{_MON}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?P<y1>\d{{3,4}})"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(?P<y2>\d{{3,4}})"
    rf"|{_MON},?\s+(?P<y3>\d{{4}}))(?!\d)"
)
_YEAR = re.compile(r"(?<![\d,.$£€])(1[0-9]{3}|20[0-9]{2})(s)?(?![\d]|,\d|\.\d)")
_NUMBER = re.compile(
    r"(?<![\w.,$£€])[$£€]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:st|nd|rd|th)?"
    r"(?:\s(?:thousand|million|billion|trillion))?(?![\w])"
)
_AGE = re.compile(
    r"\b(?:at the age of|aged|at age)\s+(\d+|[a-z]+(?:-[a-z]+)?)\b"
    r"|\b(\d+|[a-z]+(?:-[a-z]+)?)\s+years?\s+old\b",
    flags=re.IGNORECASE,
)
# words keep inner apostrophes and hyphens ("O'Neill", "Jean-Marie") but not a possessive 's
_WORD = re.compile(r"(?<!['’])\w+(?:['’](?!s\b)\w+|-\w+)*")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-Ý])")
_SPAN_GAP = re.compile(r"\s+|\.\s*|\s*&\s*|\s+&\s+|\s*-\s*")


# ---- records -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sentence:
    """One evidence sentence (or rendered KG fact) and the hit it came from."""

    text: str
    doc_id: str  # "" for KG facts: they have no document to cite
    title: str
    position: int  # order of the hit in the evidence list: a weak relevance prior
    score: float = 0.0
    tokens: tuple[tuple[int, int], ...] = ()  # (start, end) character offsets of words
    lowered: tuple[str, ...] = ()
    clauses: tuple[int, ...] = ()  # per token: how many ',' or ';' come before it

    def word(self, i: int) -> str:
        start, end = self.tokens[i]
        return self.text[start:end]


@dataclass(frozen=True)
class _Occurrence:
    """A candidate answer found at token `index` of a sentence, with its type-fit weight."""

    key: str  # normalised form that occurrences aggregate under
    surface: str  # the text as written, the answer's natural form
    index: int
    end: int
    weight: float = 1.0
    value: float | None = None  # numeric value for years and numbers


@dataclass(frozen=True)
class _Tally:
    """Aggregated evidence for one candidate answer."""

    key: str
    surface: str
    total: float
    best_sentence: float
    supports: tuple[tuple[float, _Sentence], ...] = field(default=(), compare=False)


# ---- the reader ----------------------------------------------------------------------------------


class OfflineReader(Reader):
    """Extractive, answer-type-aware reading with the MiniLM encoder; no language model needed."""

    def __init__(
        self,
        embedder: Embedder,
        classifier: QuestionClassifier | None = None,
        entities: Sequence[str] = (),
        threshold: float = DEFAULT_THRESHOLD,
        *,
        max_embedded: int = MAX_EMBEDDED,
    ):
        self.embedder = embedder
        self.classifier = classifier or OfflineQuestionClassifier()
        self.threshold = float(threshold)
        self.max_embedded = max(1, int(max_embedded))
        self._gazetteer = _Gazetteer(entities)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        try:
            return self._read(str(question or ""), tuple(evidence or ()), tuple(facts or ()))
        except Exception as exc:  # the Reader contract: never raise, report instead
            message = f"offline reader failed: {type(exc).__name__}: {exc}"
            error = ErrorStep(title="reader error", message=message, recoverable=True)
            return Reading(answer=IDK, refused=True, rationale=message, steps=(error,))

    def _read(self, question: str, evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> Reading:
        if not question.strip():
            return _refusal("the question is empty")
        sentences = _evidence_sentences(evidence, facts)
        if not sentences:
            return _refusal("there is no evidence to read")
        gazetteer = self._gazetteer.extended(_extra_names(evidence, facts))
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
        self, question: str, sentences: list[_Sentence], gazetteer: _Gazetteer,
        depth: int = 0, answer_type: AnswerType | None = None,
    ) -> Reading:
        answer_type = answer_type or self.classifier.classify(question)
        context = _Context(question, answer_type, gazetteer, self._score(question, sentences))
        if depth < MAX_HOPS and answer_type.kind not in ("choice", "yes_no"):
            bridged = self._bridged(context, sentences, depth)
            if bridged is not None:
                return bridged
        return _dispatch(context)

    def _bridged(self, context: _Context, sentences: list[_Sentence], depth: int) -> Reading | None:
        """Multi-hop by substitution: answer 'X's advisor' first, then the question about them."""
        hop = _find_hop(context)
        if hop is None:
            return None
        sub = self._answer(hop.sub_question, sentences, context.gazetteer, depth + 1, AnswerType(hop.kind))
        if sub.refused or sub.confidence < HOP_CONFIDENCE or _in_question(_key(sub.answer), context.question_words):
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

    def _score(self, question: str, sentences: list[_Sentence]) -> list[_Sentence]:
        question_stems = _stems(question)
        idf = _idf(sentences)
        lexical = [_overlap(question_stems, s, idf) for s in sentences]
        order = sorted(range(len(sentences)), key=lambda i: (-lexical[i], sentences[i].position))
        # sentences already encoded (an earlier hop, an earlier round) cost nothing to compare
        with self._lock:
            cached = [i for i in order[self.max_embedded:] if _embedding_text(sentences[i]) in self._cache]
        embedded = order[: self.max_embedded] + cached
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
        return _link_titles(_bridge(scored, question_stems, idf))

    def _cosines(self, question: str, sentences: list[_Sentence]) -> list[float]:
        if not sentences:
            return []
        query = self.embedder.encode_queries([question])[0]
        vectors = self._encode([_embedding_text(s) for s in sentences])  # (n, 384)
        return [float(v) for v in vectors @ query]

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors through a small LRU cache: iterative methods re-read the same chunks."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        fresh = self.embedder.encode(missing) if missing else np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            for text, vector in zip(missing, fresh):
                self._cache[text] = vector
                if len(self._cache) > _CACHE_SIZE:
                    self._cache.popitem(last=False)
            known = {t: self._cache.get(t) for t in texts}
        if any(v is None for v in known.values()):  # evicted between the two locks: encode directly
            return self.embedder.encode(texts)
        return np.stack([known[t] for t in texts])


@dataclass(frozen=True)
class _Context:
    """Everything one read works from: the question, its type and the scored sentences."""

    question: str
    answer_type: AnswerType
    gazetteer: _Gazetteer
    sentences: list[_Sentence]

    @cached_property
    def idf(self) -> dict[str, float]:
        return _idf(self.sentences)

    @cached_property
    def question_words(self) -> frozenset[str]:
        words = [w.lower() for w in _WORD.findall(self.question)]
        return frozenset(words + [p for w in words if "-" in w for p in w.split("-")])

    @cached_property
    def question_stems(self) -> frozenset[str]:
        return _stems(self.question)

    @cached_property
    def proximity_stems(self) -> frozenset[str]:
        """The question's stems plus the inverse of any relation it names."""
        extra = " ".join(_INVERSES.get(w, "") for w in self.question_words)
        return self.question_stems | _stems(extra)

    def ranked(self) -> list[_Sentence]:
        return sorted(self.sentences, key=lambda s: -s.score)


def _dispatch(context: _Context) -> Reading:
    kind = context.answer_type.kind
    if kind == "choice":
        return _read_choice(context)
    if kind == "yes_no":
        return _read_yes_no(context)
    if kind == "number" and _asks_difference(context.question_words):
        reading = _read_difference(context)
        if reading is not None:
            return reading
    if kind == "number" and _asks_count(context.question):
        reading = _read_count(context)
        if reading is not None:
            return reading
    return _read_extractive(context)


def _refusal(reason: str, steps: tuple[Step, ...] = ()) -> Reading:
    return Reading(answer=IDK, refused=True, confidence=0.0, rationale=reason, steps=steps)


# ---- evidence → sentences ---------------------------------------------------------------------------


def _evidence_sentences(evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> list[_Sentence]:
    sentences: list[_Sentence] = []
    for position, hit in enumerate(evidence):
        text = str(getattr(hit, "text", "") or "")[:MAX_CHARS_PER_HIT]
        doc_id, title = str(getattr(hit, "doc_id", "") or ""), str(getattr(hit, "title", "") or "")
        for piece in split_sentences(text):
            sentences.append(_tokenised(_Sentence(piece, doc_id, title, position)))
    for triple in facts:
        text = fact_sentence(triple)
        if text:
            sentences.append(_tokenised(_Sentence(text, "", str(triple.head), len(evidence))))
    return sentences[:MAX_SENTENCES]


def fact_sentence(triple: Triple) -> str:
    """A KG triple read as a sentence: 'head relation with spaces tail (time)'."""
    relation = re.sub(r"[_\s]+", " ", str(triple.relation or "")).strip()
    parts = (str(triple.head or "").strip(), relation, str(triple.tail or "").strip())
    text = " ".join(p for p in parts if p)
    return f"{text} ({triple.time})" if getattr(triple, "time", "") else text


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph, keeping initials and abbreviations ('J. Smith', 'St. Louis') whole."""
    out: list[str] = []
    for line in re.split(r"\s*\n\s*", text):
        pieces: list[str] = []
        last = 0
        for match in _SENTENCE_BREAK.finditer(line):
            before = line[last: match.start()]
            tail = re.search(r"(\w+)\W*$", before)
            word = tail.group(1) if tail else ""
            if (len(word) == 1 and word.isupper()) or word.lower() in _ABBREVIATIONS:
                continue
            pieces.append(before)
            last = match.end()
        pieces.append(line[last:])
        out.extend(_windows(p.strip()) for p in pieces if p.strip())
    return [w for group in out for w in group]


def _windows(sentence: str) -> list[str]:
    """Cut run-on text (no punctuation for pages) into pieces a sentence encoder can use."""
    if len(sentence) <= MAX_SENTENCE_CHARS:
        return [sentence]
    words = sentence.split()
    return [" ".join(words[i: i + 60]) for i in range(0, len(words), 60)]


def _tokenised(sentence: _Sentence) -> _Sentence:
    spans = tuple((m.start(), m.end()) for m in _WORD.finditer(sentence.text))
    lowered = tuple(sentence.text[a:b].lower() for a, b in spans)
    breaks = [0] * (len(spans) + 1)
    for i in range(1, len(spans)):
        gap = sentence.text[spans[i - 1][1]: spans[i][0]]
        breaks[i] = breaks[i - 1] + gap.count(",") + gap.count(";")
    return replace(sentence, tokens=spans, lowered=lowered, clauses=tuple(breaks[: len(spans)]))


def _embedding_text(sentence: _Sentence) -> str:
    # the title resolves pronouns ("She won…") for the encoder; KG facts already name their head
    text = sentence.text
    if sentence.title and sentence.doc_id and sentence.title.lower() not in text.lower():
        text = f"{sentence.title}: {text}"
    return text[:EMBED_CHARS]


def _extra_names(evidence: tuple[Hit, ...], facts: tuple[Triple, ...]) -> list[str]:
    names = [str(getattr(h, "title", "") or "") for h in evidence]
    for triple in facts:
        names.extend((str(triple.head), str(triple.tail)))
    return [n for n in names if n]


# ---- lexical overlap ---------------------------------------------------------------------------------


def _stem(word: str) -> str:
    """A crude stem so 'founded'/'founder', 'died'/'die' and 'received'/'receive' meet."""
    word = word.lower()
    word = _IRREGULAR.get(word, word)
    if len(word) <= 3:
        return word
    if len(word) == 4 and word.endswith("ied"):
        return word[:-1]
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text) if w.lower() not in STOPWORDS)


def _sentence_stems(sentence: _Sentence) -> frozenset[str]:
    return frozenset(_stem(w) for w in sentence.lowered if w not in STOPWORDS)


def _idf(sentences: Sequence[_Sentence]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for sentence in sentences:
        for stem in _sentence_stems(sentence) | _stems(sentence.title):
            counts[stem] = counts.get(stem, 0) + 1
    total = len(sentences) + 1
    return {stem: math.log(1 + total / (n + 0.5)) for stem, n in counts.items()} | {
        "": math.log(1 + total / 0.5)
    }


def _overlap(question_stems: frozenset[str], sentence: _Sentence, idf: dict[str, float]) -> float:
    """IDF-weighted share of the question's content words found in the sentence (title at half)."""
    if not question_stems:
        return 0.0
    body, title = _sentence_stems(sentence), _stems(sentence.title)
    # 'She was born in Warsaw' on the page 'Marie Curie' is about Marie Curie
    title_share = 1.0 if sentence.lowered[:1] and sentence.lowered[0] in _SUBJECT_PRONOUNS else 0.5
    unseen = idf[""]
    found = weight = 0.0
    for stem in question_stems:
        w = idf.get(stem, unseen)
        weight += w
        found += w if stem in body else title_share * w if stem in title else 0.0
    return found / weight if weight else 0.0


def _bridge(
    sentences: list[_Sentence], question_stems: frozenset[str], idf: dict[str, float]
) -> list[_Sentence]:
    """Multi-hop: names in the best sentences that the question lacks pull in their own sentences."""
    top = sorted(sentences, key=lambda s: -s.score)[:2]
    bridge = frozenset(
        _stem(w)
        for s in top
        for a, b in _capitalised_spans(s)
        for w in s.lowered[a: b + 1]
        if w not in STOPWORDS
    ) - question_stems
    if not bridge:
        return sentences
    keep = {id(s) for s in top}
    return [
        s if id(s) in keep else replace(s, score=s.score + 0.15 * _overlap(bridge, s, idf))
        for s in sentences
    ]


def _link_titles(sentences: list[_Sentence]) -> list[_Sentence]:
    """Multi-hop: a document named in another document's relevant sentence is the next hop."""
    links: dict[str, float] = {}
    for title in {s.title for s in sentences if s.title and s.doc_id}:
        words = [w.lower() for w in _WORD.findall(re.sub(r"\s*\(.*\)\s*$", "", title))]
        if not words or all(w in STOPWORDS for w in words):
            continue
        linked = [s.score for s in sentences if s.title != title and _contains(list(s.lowered), words)]
        if linked:
            links[title] = max(linked)
    if not links:
        return sentences
    return [replace(s, score=s.score + 0.3 * max(0.0, links[s.title])) if s.title in links else s
            for s in sentences]


# ---- gazetteer -----------------------------------------------------------------------------------------


class _Gazetteer:
    """Known multi-word names, matched on lower-cased word sequences (longest first)."""

    def __init__(self, names: Iterable[str]):
        self._names: dict[str, list[tuple[str, ...]]] = {}
        self._add(names)

    def _add(self, names: Iterable[str]) -> None:
        for name in names:
            tokens = tuple(w.lower() for w in _WORD.findall(str(name)))
            # bare numbers and function words are values, not names
            if tokens and not all(t in STOPWORDS or t.isdigit() for t in tokens):
                bucket = self._names.setdefault(tokens[0], [])
                if tokens not in bucket:
                    bucket.append(tokens)
                    bucket.sort(key=len, reverse=True)

    def extended(self, names: Iterable[str]) -> _Gazetteer:
        copy = _Gazetteer(())
        copy._names = {k: list(v) for k, v in self._names.items()}
        copy._add(names)
        return copy

    def matches(self, sentence: _Sentence) -> list[tuple[int, int, bool]]:
        """(first, last, capitalised) token indices of gazetteer names found in the sentence.

        Lower-case matches count too ('polonium', 'superconductivity'): packs name concepts as
        well as people and places.
        """
        found, i, words = [], 0, sentence.lowered
        while i < len(words):
            hit = next(
                (n for n in self._names.get(words[i], ()) if tuple(words[i: i + len(n)]) == n), None
            )
            if hit:
                first = sentence.word(i)[:1]
                found.append((i, i + len(hit) - 1, first.isupper() or first.isdigit()))
                i += len(hit)
            else:
                i += 1
        return found


# ---- named spans -------------------------------------------------------------------------------------

_STARTERS = frozenset(
    "after during since although however following later born today while until despite according "
    "along among both many most some several other another early late currently originally "
    "located based known since upon following like unlike under over through".split()
)


def _is_capitalised(sentence: _Sentence, i: int) -> bool:
    first = sentence.text[sentence.tokens[i][0]]
    return first.isupper()


def _gap_ok(sentence: _Sentence, i: int) -> bool:
    """May a name continue from token i to token i+1 across the text between them?"""
    gap = sentence.text[sentence.tokens[i][1]: sentence.tokens[i + 1][0]]
    if gap.strip() == "" and gap:
        return True
    if gap.startswith("."):
        word = sentence.lowered[i]
        return (len(word) == 1 or word in _ABBREVIATIONS) and _SPAN_GAP.fullmatch(gap) is not None
    return gap.strip() == "&"


def _capitalised_spans(sentence: _Sentence) -> list[tuple[int, int]]:
    """(first, last) token indices of capitalised runs; lower-case 'of', 'de', 'von'… may join them."""
    spans, i, n = [], 0, len(sentence.tokens)
    while i < n:
        if not _is_capitalised(sentence, i):
            i += 1
            continue
        j = i
        while j + 1 < n and _gap_ok(sentence, j):
            if _is_capitalised(sentence, j + 1):
                j += 1
            elif (sentence.lowered[j + 1] in _CONNECTORS and j + 2 < n and _gap_ok(sentence, j + 1)
                  and _is_capitalised(sentence, j + 2)):
                j += 2
            else:
                break
        trimmed = _trim(sentence, i, j)
        if trimmed:
            spans.append(trimmed)
        i = j + 1
    return spans


def _trim(sentence: _Sentence, i: int, j: int) -> tuple[int, int] | None:
    """Drop leading function words ('The', sentence-initial 'In') and trailing connectors."""
    words = sentence.lowered
    while i <= j and (words[i] in STOPWORDS or words[i] in _CONNECTORS or (i == 0 and words[i] in _STARTERS)):
        i += 1
    while j >= i and (words[j] in _CONNECTORS or words[j] in STOPWORDS):
        j -= 1
    if i > j or all(w in _WEEKDAYS or w in _MONTH_NAMES or w in STOPWORDS for w in words[i: j + 1]):
        return None
    return i, j


def _named_spans(sentence: _Sentence, gazetteer: _Gazetteer) -> list[tuple[int, int, str]]:
    """(first, last, source) of names: gazetteer matches ('known', or 'lower' when written in
    lower case) first, then capitalised spans ('caps') that do not overlap them."""
    known = gazetteer.matches(sentence)
    taken = {k for a, b, _ in known for k in range(a, b + 1)}
    spans = [(a, b, "known" if capitalised else "lower") for a, b, capitalised in known]
    for a, b in _capitalised_spans(sentence):
        if not any(k in taken for k in range(a, b + 1)):
            spans.append((a, b, "caps"))
    return sorted(spans)


def _surface(sentence: _Sentence, a: int, b: int) -> str:
    return sentence.text[sentence.tokens[a][0]: sentence.tokens[b][1]]


def _key(text: str) -> str:
    words = [w.lower() for w in _WORD.findall(text)]
    while words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


# ---- typed candidates ----------------------------------------------------------------------------------


def _occurrences(context: _Context, sentence: _Sentence) -> list[_Occurrence]:
    kind = context.answer_type.kind
    if kind in ("entity", "other", "place") and context.question_words & _DEMONYM_NOUNS:
        kind = "demonym"
    if kind == "date":
        found = _date_occurrences(sentence, _date_form(context.question_words))
    elif kind == "number":
        found = _number_occurrences(sentence)
    else:
        found = _span_occurrences(sentence, kind, context.gazetteer)
    asked = context.question_words
    return [o for o in found if not _in_question(o.key, asked)]


def _in_question(key: str, asked: frozenset[str]) -> bool:
    """The question's own words are not its answer ('Gustav Ludwig Hertz' when it names Gustav Hertz)."""
    words = [w for w in key.split() if w not in STOPWORDS] or key.split()
    if not words:
        return False
    stems = {_stem(w) for w in asked}
    shared = sum(w in asked or _stem(w) in stems for w in words)
    return shared == len(words) or (len(words) >= 3 and shared / len(words) > 0.6)


def _token_at(sentence: _Sentence, char: int) -> int:
    for i, (start, end) in enumerate(sentence.tokens):
        if end > char:
            return i
    return max(0, len(sentence.tokens) - 1)


def _date_form(asked: frozenset[str]) -> str:
    for form in ("decade", "century", "year", "month"):
        if form in asked:
            return form
    return "full"


def _date_occurrences(sentence: _Sentence, form: str) -> list[_Occurrence]:
    found, covered = [], []
    for match in _FULL_DATE.finditer(sentence.text):
        year = match.group("y1") or match.group("y2") or match.group("y3")
        covered.append((match.start(), match.end()))
        found.append(_date(sentence, match.start(), match.end(), year, match.group(0), form))
    for match in _YEAR.finditer(sentence.text):
        if any(a <= match.start() < b for a, b in covered):
            continue
        year = match.group(1)
        found.append(_date(sentence, match.start(), match.end(), year, match.group(0), form))
    return found


def _date(sentence: _Sentence, start: int, end: int, year: str, text: str, form: str) -> _Occurrence:
    value = int(year)
    if form == "decade":
        surface = f"{value // 10 * 10}s"
    elif form == "century":
        surface = text if text.endswith("s") else year
    elif form == "year":
        surface = year
    else:
        surface = text.strip()
    # a bare decade ("the 1990s") is a weaker answer to 'when' than a year or a date
    weight = 0.6 if text.endswith("s") and form != "decade" else 1.0
    key = f"{value // 10 * 10}s" if form == "decade" else year
    return _Occurrence(key, surface, _token_at(sentence, start), _token_at(sentence, end - 1), weight, value)


def _number_occurrences(sentence: _Sentence) -> list[_Occurrence]:
    dates = [(m.start(), m.end()) for m in _FULL_DATE.finditer(sentence.text)]
    found = []
    for match in _NUMBER.finditer(sentence.text):
        if any(a <= match.start() < b for a, b in dates):
            continue
        found.append(_number(sentence, match.start(), match.end(), match.group(0)))
    for i, word in enumerate(sentence.lowered):
        base = word.split("-")[0]
        if base in _NUMBER_WORDS and not (word == "one" and sentence.lowered[i + 1: i + 2] == ("of",)):
            ordinal = base in ("first", "second", "third") or base.endswith("th")
            value = float(sum(_NUMBER_WORDS.get(p, 0) for p in word.split("-")))
            found.append(_Occurrence(_fmt(value), sentence.word(i), i, i, 0.3 if ordinal else 0.7, value))
    return found


def _number(sentence: _Sentence, start: int, end: int, text: str) -> _Occurrence:
    digits = re.sub(r"[^\d.]", "", re.sub(r"(st|nd|rd|th)\b", "", text.split()[0]))
    value = float(digits or 0) * _SCALES.get(text.split()[-1].lower(), 1.0)
    first, last = _token_at(sentence, start), _token_at(sentence, end - 1)
    surface, weight = text, 1.0
    if re.fullmatch(r"(1[0-9]{3}|20[0-9]{2})", text):  # a year is rarely the answer to 'how many'
        before = sentence.lowered[first - 1] if first > 0 else ""
        weight = 0.2 if before in ("in", "since", "by", "from", "until", "of") else 0.5
    after = sentence.text[end:end + 1]
    if after == "%":
        surface = text + "%"
    elif last + 1 < len(sentence.tokens) and sentence.lowered[last + 1] in _UNITS:
        surface, last = f"{text} {sentence.word(last + 1)}", last + 1
    return _Occurrence(_fmt(value), surface, first, last, weight, value)


def _span_occurrences(sentence: _Sentence, kind: str, gazetteer: _Gazetteer) -> list[_Occurrence]:
    found = _title_subject(sentence)
    for a, b, source in _named_spans(sentence, gazetteer):
        surface = _surface(sentence, a, b)
        weight = _span_weight(sentence, a, b, source, kind)
        if kind == "place":
            surface, b = _with_region(sentence, surface, a, b)
        found.append(_Occurrence(_key(surface.split(",")[0]), surface, a, b, weight))
    return found


def _title_subject(sentence: _Sentence) -> list[_Occurrence]:
    """'His doctoral students included X' on the page 'Max Born': the pronoun is the page's subject."""
    title = re.sub(r"\s*\(.*\)\s*$", "", sentence.title).strip()
    if not (sentence.doc_id and title[:1].isupper() and sentence.lowered[:1]):
        return []
    if sentence.lowered[0] not in _SUBJECT_PRONOUNS:
        return []
    return [_Occurrence(_key(title), title, 0, 0, 0.8)]


def _span_weight(sentence: _Sentence, a: int, b: int, source: str, kind: str) -> float:
    """How well a name fits the asked type; 'demonym' asks for 'Belgian', 'Spanish', 'Chinese'."""
    if kind == "demonym":
        return 1.0 if a == b and _DEMONYM.search(sentence.lowered[a]) else 0.15
    words = sentence.lowered[a: b + 1]
    before = sentence.lowered[max(0, a - 2): a]
    cue = any(w in _PLACE_CUES for w in before)
    institution = any(w in _INSTITUTION_WORDS or w[:-1] in _INSTITUTION_WORDS for w in words)
    if source == "lower":  # a concept named in lower case: never a person or a place
        return 0.1 if kind in ("person", "place") else 0.8
    known = source == "known"
    if a == 0 and b == 0 and not known:  # a lone capitalised first word is usually just grammar
        return 0.4
    if kind == "person":
        size = len([w for w in words if w not in _CONNECTORS])
        weight = 1.0 if known or 2 <= size <= 4 else 0.6 if size == 1 else 0.4
        # 'Franck–Hertz experiment', 'United States', 'Nobel Prizes' are not people
        lower = any(sentence.word(i)[:1].islower() and w not in _CONNECTORS for i, w in enumerate(words, a))
        if institution or lower or any(w in _GEO_WORDS or w[:-1] in _GEO_WORDS for w in words):
            weight *= 0.3
        return weight * (0.5 if cue else 1.0)
    if kind == "place":
        return (1.0 if cue else 0.6) * (1.1 if known else 1.0) * (0.3 if institution else 1.0)
    return 1.1 if known else 1.0


def _with_region(sentence: _Sentence, surface: str, a: int, b: int) -> tuple[str, int]:
    """'Geneva, Switzerland': a place name followed by a comma and a larger place is one answer."""
    n = len(sentence.tokens)
    if b + 1 >= n or sentence.text[sentence.tokens[b][1]: sentence.tokens[b + 1][0]].strip() != ",":
        return surface, b
    end = b + 1
    if not _is_capitalised(sentence, end):
        return surface, b
    while end + 1 < n and end - b < 3 and _gap_ok(sentence, end) and _is_capitalised(sentence, end + 1):
        end += 1
    return _surface(sentence, a, end), end


# ---- aggregation ----------------------------------------------------------------------------------------


def _proximity(stems: frozenset[str], idf: dict[str, float], sentence: _Sentence, a: int, b: int) -> float:
    """Candidates near the question's words in a sentence, the rarer words most, are likelier answers."""
    nearest: dict[str, int] = {}
    for i, word in enumerate(sentence.lowered):
        if a <= i <= b or word in STOPWORDS:
            continue
        stem = _stem(word)
        if stem in stems:
            # a comma between them puts the word in another clause: count it as farther away
            distance = (a - i if i < a else i - b) + 3 * abs(sentence.clauses[a] - sentence.clauses[i])
            nearest[stem] = min(nearest.get(stem, distance), distance)
    if not nearest:
        return 0.35
    unseen = idf[""]
    # a number the question names ('in 1962') pins the answer down more than any word
    weights = {stem: idf.get(stem, unseen) * (2.0 if stem.isdigit() else 1.0) for stem in nearest}
    total = sum(weights.values())
    close = sum(weights[stem] * math.exp(-(d - 1) / 6.0) for stem, d in nearest.items())
    return 0.35 + 0.65 * close / total


def _sentence_weights(sentences: list[_Sentence]) -> list[float]:
    """Softly concentrate on the best sentences while letting repeated support add up."""
    best = max((s.score for s in sentences), default=0.0)
    return [max(s.score, 0.0) * math.exp((s.score - best) / 0.1) for s in sentences]


def _tally(context: _Context) -> list[_Tally]:
    sentences = context.sentences
    totals: dict[str, list] = {}
    stems, idf = context.proximity_stems, context.idf
    for sentence, weight in zip(sentences, _sentence_weights(sentences)):
        if weight <= 1e-4:
            continue
        for occ in _occurrences(context, sentence):
            gain = weight * occ.weight * _proximity(stems, idf, sentence, occ.index, occ.end)
            entry = totals.setdefault(occ.key, [0.0, {}, []])
            entry[0] += gain
            entry[1][occ.surface] = entry[1].get(occ.surface, 0.0) + gain
            entry[2].append((gain, sentence))
    tallies = [
        _Tally(key, _best_surface(surfaces), total, max(s.score for _, s in supports),
               tuple(sorted(supports, key=lambda x: -x[0])))
        for key, (total, surfaces, supports) in totals.items()
    ]
    # a surname alone is the same person; 'Vienna' is not the same place as 'University of Vienna'
    merged = _merge_partial_names(tallies) if context.answer_type.kind == "person" else tallies
    return sorted(merged, key=lambda t: -t.total)


def _best_surface(surfaces: dict[str, float]) -> str:
    # the longest form with real support: '7 February 1978' over '1978', 'Geneva, Switzerland' over 'Geneva'
    top = max(surfaces.values())
    return max((s for s, g in surfaces.items() if g >= 0.3 * top), key=lambda s: (len(s), surfaces[s]))


def _merge_partial_names(tallies: list[_Tally]) -> list[_Tally]:
    """Fold 'Coen' into the best-supported longer name that contains it ('Joel Coen')."""
    by_key = {t.key: t for t in tallies}
    for short in sorted(tallies, key=lambda t: len(t.key.split())):
        words = short.key.split()
        longer = [
            t for k, t in by_key.items()
            if k != short.key and len(k.split()) > len(words) and _contains(k.split(), words)
        ]
        if longer and short.key in by_key:
            target = max(longer, key=lambda t: t.total)
            by_key[target.key] = replace(
                target, total=target.total + short.total,
                best_sentence=max(target.best_sentence, short.best_sentence),
                supports=tuple(sorted(target.supports + short.supports, key=lambda x: -x[0])),
            )
            del by_key[short.key]
    return list(by_key.values())


def _contains(longer: list[str], shorter: list[str]) -> bool:
    n = len(shorter)
    return any(longer[i: i + n] == shorter for i in range(len(longer) - n + 1))


def _relevance(score: float) -> float:
    """Map a sentence score to [0, 1]: below ~0.2 the evidence is off topic."""
    return min(1.0, max(0.0, (score - 0.2) / 0.4))


def _citations(supports: Sequence[tuple[float, _Sentence]], limit: int = 3) -> tuple[str, ...]:
    if not supports:
        return ()
    top = supports[0][0]
    ids = [s.doc_id for gain, s in supports if gain >= 0.25 * top and s.doc_id]
    return tuple(dict.fromkeys(ids))[:limit]


def _read_extractive(context: _Context) -> Reading:
    tallies = _tally(context)
    kind = context.answer_type.kind
    if not tallies:
        return _refusal(
            f"no {kind} candidate found in the evidence; best sentence: {_quote(context.ranked()[0].text)}"
        )
    chosen = _chosen(tallies, _wanted_count(context))
    first = chosen[0]
    rest = [t.total for t in tallies if t not in chosen]
    runner = max(rest, default=0.0)
    margin = (min(t.total for t in chosen) - runner) / first.total if first.total > 0 else 0.0
    confidence = _relevance(first.best_sentence) * (0.35 + 0.65 * max(0.0, margin))
    shown = ", ".join(f"{t.surface} ({t.total:.2f})" for t in tallies[:4])
    return Reading(
        answer=_join([t.surface for t in chosen]),
        citations=tuple(dict.fromkeys(c for t in chosen for c in _citations(t.supports)))[:5],
        confidence=round(min(1.0, confidence), 4),
        rationale=f"{kind} question; read from {_quote(first.supports[0][1].text)}; candidates: {shown}",
    )


def _wanted_count(context: _Context) -> int:
    """How many answers the question wants: 1, a number it states ('which two'), or 0 for 'all'."""
    words = [w.lower() for w in _WORD.findall(context.question)]
    for i, word in enumerate(words):
        after = words[i + 1: i + 4]
        if word not in ("which", "what", "who") or not after:
            continue
        if after[0] in _NUMBER_WORDS and 2 <= _NUMBER_WORDS[after[0]] <= 10 and after[0] not in _ORDINALS:
            return _NUMBER_WORDS[after[0]]
        if after[0] == "both":
            return 2
        if word == "who" and after[0] in ("were", "are", "shared"):
            return 0
        window = []
        for token in after:
            if token in STOPWORDS:
                break
            window.append(token)
        if word != "who" and any(_plural(t) for t in window):
            return 0
    return 1


def _plural(word: str) -> bool:
    return (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics"))
            and word not in ("series", "species", "news"))


def _chosen(tallies: list[_Tally], wanted: int) -> list[_Tally]:
    if wanted == 1:
        return tallies[:1]
    top = tallies[0].total
    cut = 0.15 if wanted > 1 else 0.35  # a stated count is trusted further down the ranking
    return [t for t in tallies[: wanted or 5] if t.total >= cut * top]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _quote(text: str, limit: int = 160) -> str:
    return f"“{text[:limit]}{'…' if len(text) > limit else ''}”"


# ---- anchors and option mentions ---------------------------------------------------------------------


def _question_anchors(context: _Context) -> list[str]:
    """Names the question itself mentions: quoted titles, gazetteer names, capitalised spans."""
    sentence = _tokenised(_Sentence(context.question, "", "", 0))
    quoted = re.findall(r"[\"“]([^\"”]{2,80})[\"”]", context.question)
    names = [_surface(sentence, a, b) for a, b, _ in _named_spans(sentence, context.gazetteer)]
    return list(dict.fromkeys(quoted + names))


def _mentions(context: _Context, name: str) -> list[tuple[float, int, _Sentence]]:
    """Sentences about `name`: (match strength, token index of the mention or -1, sentence).

    Words count by IDF, so 'Heidelberg' and not 'University' identifies 'the University of
    Heidelberg'; a sentence under another document's title mentions the name only in passing.
    """
    words = [w.lower() for w in _WORD.findall(name)]
    words = [w for w in words if w not in STOPWORDS] or words
    if not words:
        return []
    unseen = context.idf[""]
    weights = {w: context.idf.get(_stem(w), unseen) for w in words}
    total = sum(weights.values())
    found = []
    for sentence in context.sentences:
        title = set(_WORD.findall(sentence.title.lower()))
        in_body = sum(weights[w] for w in words if w in sentence.lowered) / total
        in_title = sum(weights[w] for w in words if w in title) / total
        position = max((sentence.lowered.index(w) for w in words if w in sentence.lowered), default=-1)
        if in_title >= 0.6:
            found.append((max(in_body, in_title), position, sentence))
        elif in_body >= 0.6:
            found.append((in_body * (0.6 if sentence.title else 1.0), position, sentence))
    return sorted(found, key=lambda m: (-m[0], -m[2].score))


def _year_near(sentence: _Sentence, position: int, mode: str = "earliest") -> int | None:
    """The year that belongs to a mention, read as a birth, a death, or the earliest nearby year.

    'birth' and 'death' are strict (a 'born'/'died' cue or a '(1808–1875)' life span) so callers
    can fall back to 'earliest' only when no sentence states them.
    """
    years = [o for o in _date_occurrences(sentence, "year") if o.value is not None]
    if not years:
        return None
    if position >= 0:
        nearest = min(abs(o.index - position) for o in years)
        years = [o for o in years if abs(o.index - position) <= nearest + 6]
    if mode == "earliest":
        return int(min(o.value for o in years))
    cues = _BIRTH_WORDS if mode == "birth" else _DEATH_WORDS
    cue_at = [i for i, w in enumerate(sentence.lowered) if w in cues]
    after = [o for o in years if cue_at and 0 < o.index - cue_at[0] <= 8]
    if after:
        return int(after[0].value)
    spans = [(x, y) for x, y in zip(years, years[1:]) if y.index - x.index <= 8 and _is_range(sentence, x, y)]
    if spans:
        return int(spans[0][0].value if mode == "birth" else spans[0][1].value)
    return None


def _is_range(sentence: _Sentence, first: _Occurrence, second: _Occurrence) -> bool:
    gap = sentence.text[sentence.tokens[first.end][1]: sentence.tokens[second.index][0]]
    return bool(re.search(r"[–—-]|\bto\b|\buntil\b", gap)) and "(" not in gap


def _life_year(
    mentions: list[tuple[float, int, _Sentence]], mode: str, exclude: Collection[int] = ()
) -> tuple[int, _Sentence] | None:
    """A birth/death year from the best mentions, falling back to the earliest year for births."""
    passes = (mode, "earliest") if mode == "birth" else (mode,)
    for current in passes:
        for _strength, position, sentence in mentions[:6]:
            year = _year_near(sentence, position, current)
            if year is not None and year not in exclude:
                return year, sentence
    return None


def _number_near(
    context: _Context, sentence: _Sentence, position: int, exclude: frozenset[str]
) -> float | None:
    """The number a mention is about: the one closest to the question's other words."""
    numbers = [o for o in _number_occurrences(sentence) if o.value is not None]
    if not numbers:
        return None
    stems = context.question_stems - exclude

    def fit(o: _Occurrence) -> float:
        near = 1.0 / (1 + abs(o.index - position)) if position >= 0 else 0.0
        return o.weight * _proximity(stems, context.idf, sentence, o.index, o.end) + 0.1 * near

    return float(max(numbers, key=fit).value)


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# ---- comparison: "A or B" -------------------------------------------------------------------------------


def _read_choice(context: _Context) -> Reading:
    options = context.answer_type.options
    mentions = [_mentions(context, option) for option in options]
    if not any(mentions):
        return _refusal(f"none of the options {', '.join(options)} is mentioned in the evidence")
    if context.answer_type.order:
        reading = _compare_options(context, options, mentions)
        if reading is not None:
            return reading
    return _choose_by_relevance(context, options, mentions)


def _compare_options(context: _Context, options: tuple[str, ...], mentions: list) -> Reading | None:
    asked = context.question_words
    temporal = bool(asked & _TEMPORAL_WORDS) and not asked & {"more", "larger", "bigger", "higher"}
    option_stems = frozenset().union(*(_stems(o) for o in options))
    values: list[tuple[float, _Sentence]] = []
    for found in mentions:
        if temporal and asked & {"lived", "life", "lifespan", "lifetime"}:
            value = _lifespan(found)
        elif temporal:
            value = _life_year(found, _temporal_mode(asked))
        else:
            value = next(
                ((v, s) for _, position, s in found[:4]
                 if (v := _number_near(context, s, position, option_stems)) is not None),
                None,
            )
        if value is None:
            return None
        values.append((float(value[0]), value[1]))
    order = context.answer_type.order
    step = calculation_step(f"{order}({', '.join(_fmt(v) for v, _ in values)})")
    winners = [i for i, (v, _) in enumerate(values) if step.result is not None and v == step.result]
    if len(winners) != 1:
        return None
    support = sum(_relevance(s.score) for _, s in values) / len(values)
    sentence = values[winners[0]][1]
    what = "years" if temporal else "numbers"
    return Reading(
        answer=options[winners[0]],
        citations=tuple(dict.fromkeys(s.doc_id for _, s in values if s.doc_id)),
        confidence=round(0.45 + 0.45 * support, 4),
        rationale=f"compared {what} {step.expression} → {_fmt(step.result or 0)}; "
        f"from {_quote(sentence.text)}",
        steps=(step,),
    )


def _lifespan(mentions: list[tuple[float, int, _Sentence]]) -> tuple[int, _Sentence] | None:
    """'Who lived longer': years from birth to death, both read near the name."""
    born, died = _life_year(mentions, "birth"), _life_year(mentions, "death")
    if born is None or died is None or died[0] < born[0]:
        return None
    return died[0] - born[0], died[1]


def _negated_at(sentence: _Sentence, position: int) -> bool:
    """'The capital is Bern, not Zurich': a negation just before a mention speaks against it."""
    if position < 0:
        return False
    return any(w in _NEGATIONS or w.endswith("n't") for w in sentence.lowered[max(0, position - 3): position])


def _temporal_mode(asked: frozenset[str]) -> str:
    if asked & _DEATH_WORDS:
        return "death"
    if asked & (_BIRTH_WORDS | {"older", "oldest", "younger", "youngest"}):
        return "birth"
    return "earliest"


def _choose_by_relevance(context: _Context, options: tuple[str, ...], mentions: list) -> Reading:
    predicate = context.question_stems - frozenset().union(*(_stems(o) for o in options))
    scores = []
    for found in mentions:
        best = max(
            ((strength * (0.5 * _overlap(predicate, s, context.idf) + 0.5 * s.score)
              * (0.2 if _negated_at(s, position) else 1.0), s)
             for strength, position, s in found[:6]),
            key=lambda x: x[0], default=(0.0, None),
        )
        scores.append(best)
    ranked = sorted(range(len(options)), key=lambda i: -scores[i][0])
    top, runner = scores[ranked[0]][0], scores[ranked[1]][0] if len(ranked) > 1 else 0.0
    margin = (top - runner) / top if top > 0 else 0.0
    sentence = scores[ranked[0]][1]
    return Reading(
        answer=options[ranked[0]],
        citations=(sentence.doc_id,) if sentence is not None and sentence.doc_id else (),
        confidence=round(min(1.0, 0.15 + 0.6 * margin * _relevance(top)), 4),
        rationale=f"no comparable values found; chose the option whose evidence best matches the question "
        f"({', '.join(f'{options[i]} {scores[i][0]:.2f}' for i in ranked)})",
    )


# ---- numbers: differences and counts -----------------------------------------------------------------------


_SPAN_UNITS = r"(?:years|months|days|decades|centuries)"
_AUX_RE = r"(?:did|was|were|is|are|does|do|had|has|have|would)"
_PRONOUN = re.compile(r"\b(?:he|she|they|his|her|hers|their|its|it|him|them)\b", flags=re.IGNORECASE)


@dataclass(frozen=True)
class _Event:
    """One side of a time difference: what happened, to whom, and which year of it counts."""

    text: str
    anchor: str = ""
    mode: str = "any"  # any | birth | death | start | pair (two years of one event) | range


def _asks_difference(asked: frozenset[str]) -> bool:
    if "how" in asked and "many" in asked and asked & {"years", "decades", "centuries"}:
        return True
    return "how" in asked and "old" in asked and "when" in asked


def _difference_events(context: _Context) -> list[_Event]:
    """Split 'how many years after A did B' (and its kin) into the events whose years differ."""
    q = " ".join(context.question.strip().rstrip("?.! ").split())
    anchors = _question_anchors(context)
    patterns = (
        (rf"how old {_AUX_RE} (?P<a>.+?)(?:,[^,]*,)? (?:when|at the time) (?P<b>.+)", "birth", "any"),
        (rf"how many {_SPAN_UNITS} (?:older|younger|newer) {_AUX_RE} (?P<a>.+?) than (?P<b>.+)",
         "start", "start"),
        (rf"how many {_SPAN_UNITS} (?:after|before|later than|earlier than) (?P<a>.+?) {_AUX_RE} (?P<b>.+)",
         "any", "any"),
        (rf"how many {_SPAN_UNITS} .*?\bbetween (?P<a>.+?) and (?P<b>.+)", "any", "any"),
        (rf"how many {_SPAN_UNITS} {_AUX_RE} (?P<a>.+?) (?:before|after|until|prior to) (?P<b>.+)",
         "any", "any"),
        (rf"how many {_SPAN_UNITS} .*?\bbetween (?P<a>.+)", "pair", ""),
        (rf"how many {_SPAN_UNITS} {_AUX_RE} (?P<a>.+)", "range", ""),
    )
    for pattern, mode_a, mode_b in patterns:
        match = re.search(pattern, q, flags=re.IGNORECASE)
        if match:
            return _events_from(match.groupdict(), mode_a, mode_b, anchors)
    return []


def _events_from(parts: dict[str, str | None], mode_a: str, mode_b: str, anchors: list[str]) -> list[_Event]:
    a = parts.get("a") or ""
    anchor_a = _anchor_in(a, anchors) or (anchors[0] if anchors else "")
    events = [_Event(a, anchor_a, _life_mode(a, mode_a))]
    b = parts.get("b")
    if b:
        b = _PRONOUN.sub(anchor_a, b) if anchor_a else b
        anchor_b = _anchor_in(b, anchors) or anchor_a
        events.append(_Event(b, anchor_b, _life_mode(b, mode_b)))
        if len(_stems(a) - _stems(anchor_a)) == 0:  # 'after polonium was francium discovered'
            verb = " ".join(sorted(_stems(b) - _stems(anchor_b)))
            events[0] = replace(events[0], text=f"{a} {verb}")
    elif anchor_a and _PRONOUN.search(a):
        events[0] = replace(events[0], text=_PRONOUN.sub(anchor_a, a))
    return events


def _anchor_in(text: str, anchors: list[str]) -> str:
    lowered = text.lower()
    return next((a for a in anchors if a.lower() in lowered), "")


def _life_mode(text: str, mode: str) -> str:
    words = {w.lower() for w in _WORD.findall(text)}
    if mode in ("any", "birth") and words & {"born", "birth"}:
        return "birth"
    if mode == "any" and words & _DEATH_WORDS:
        return "death"
    return mode


def _read_difference(context: _Context) -> Reading | None:
    events = _difference_events(context)
    if not events:
        return None
    if "old" in context.question_words and len(events) == 2:
        stated = _stated_age(context, events[1])
        if stated is not None:
            return stated
    found = _event_years(context, events)
    if len(found) < 2:
        return None
    (a, sa), (b, sb) = found[:2]
    step = calculation_step(f"{max(a, b)} - {min(a, b)}")
    if step.result is None:
        return None
    used = [s for s in (sa, sb) if s is not None]
    support = sum(_relevance(s.score) for s in used) / len(used) if used else 1.0
    return Reading(
        answer=_fmt(step.result),
        citations=tuple(dict.fromkeys(s.doc_id for s in used if s.doc_id)),
        confidence=round(0.3 + 0.5 * support, 4),
        rationale=f"difference of years {step.expression} = {_fmt(step.result)}"
        + "".join(f"; from {_quote(s.text, 100)}" for s in dict.fromkeys(used)),
        steps=(step,),
    )


def _stated_age(context: _Context, event: _Event) -> Reading | None:
    """'died … at the age of thirty-six': an age the evidence states beats one computed from years."""
    stems = _stems(event.text)
    ranked = sorted(context.sentences, key=lambda s: -(_overlap(stems, s, context.idf) + 0.1 * s.score))
    for sentence in ranked[:2]:
        match = _AGE.search(sentence.text)
        if match and _overlap(stems, sentence, context.idf) >= 0.5:
            age = match.group(1) or match.group(2)
            value = _NUMBER_WORDS.get(age.lower()) if "-" not in age else None
            if "-" in age and all(p in _NUMBER_WORDS for p in age.lower().split("-")):
                value = sum(_NUMBER_WORDS[p] for p in age.lower().split("-"))
            age = str(value) if value is not None else age
            if not age.isdigit():
                continue
            return Reading(
                answer=age,
                citations=(sentence.doc_id,) if sentence.doc_id else (),
                confidence=round(0.3 + 0.5 * _relevance(sentence.score), 4),
                rationale=f"age stated in {_quote(sentence.text)}",
            )
    return None


def _event_years(context: _Context, events: list[_Event]) -> list[tuple[int, _Sentence | None]]:
    if len(events) == 1:
        return _years_of_one_event(context, events[0])
    found: list[tuple[int, _Sentence | None]] = []
    for event in events:
        year = _event_year(context, event, {y for y, _ in found})
        if year is None:
            return []
        found.append(year)
    return found


def _event_year(context: _Context, event: _Event, exclude: set[int]) -> tuple[int, _Sentence | None] | None:
    literal = re.fullmatch(r"\s*(?:the year\s+)?(\d{3,4})\s*", event.text)
    if literal:
        return int(literal.group(1)), None
    if event.mode in ("birth", "death", "start") and event.anchor:
        mode = "earliest" if event.mode == "start" else event.mode
        found = _life_year(_mentions(context, event.anchor), mode, exclude)
        if found is not None:
            return found
    ranked = _years_by_fit(context, event, exclude)
    return ranked[0] if ranked else None


def _years_by_fit(context: _Context, event: _Event, exclude: set[int]) -> list[tuple[int, _Sentence]]:
    """Years ranked by how well their sentence and their neighbourhood match the event's words."""
    stems = _stems(event.text)
    scored: dict[int, tuple[float, _Sentence]] = {}
    for sentence in context.sentences:
        overlap = _overlap(stems, sentence, context.idf)
        if overlap <= 0:
            continue
        for occ in _date_occurrences(sentence, "year"):
            year = int(occ.value or 0)
            if year in exclude:
                continue
            near = _proximity(stems, context.idf, sentence, occ.index, occ.end)
            fit = overlap * near + 0.1 * sentence.score
            if fit > scored.get(year, (0.0, sentence))[0]:
                scored[year] = (fit, sentence)
    return [(year, s) for year, (fit, s) in sorted(scored.items(), key=lambda kv: -kv[1][0])]


def _years_of_one_event(context: _Context, event: _Event) -> list[tuple[int, _Sentence | None]]:
    """'between Marie Curie's two Nobel Prizes' or 'for how many years did X direct Y'."""
    ranked = _years_by_fit(context, event, set())
    if event.mode == "range" and ranked:
        best = ranked[0][1]
        years = list(dict.fromkeys(int(o.value or 0) for o in _date_occurrences(best, "year")))
        return [(y, best) for y in years[:2]] if len(years) >= 2 else []
    return [(year, s) for year, s in ranked[:2]]


def _asks_count(question: str) -> bool:
    return re.search(r"\bhow many\b", question, flags=re.IGNORECASE) is not None


def _read_count(context: _Context) -> Reading | None:
    """'How many …' answered by a list ('A, B and C') in the best sentence when it states no number."""
    ranked = context.ranked()
    top = ranked[0]
    # a number written in any of the best sentences is a better answer than a count of names
    if any(_occurrences(context, s) for s in ranked[:3]):
        return None
    items = _list_items(context, top)
    if len(items) < 2:
        return None
    return Reading(
        answer=str(len(items)),
        citations=(top.doc_id,) if top.doc_id else (),
        confidence=round(0.6 * _relevance(top.score), 4),
        rationale=f"counted {len(items)} named items ({', '.join(items)}) in {_quote(top.text)}",
    )


def _list_items(context: _Context, sentence: _Sentence) -> list[str]:
    spans = _named_spans(sentence, context.gazetteer)
    best: list[tuple[int, int, bool]] = []
    run: list[tuple[int, int, bool]] = []
    for span in spans:
        if run:
            gap = sentence.text[sentence.tokens[run[-1][1]][1]: sentence.tokens[span[0]][0]]
            if not re.fullmatch(r"\s*(?:,|;|,?\s*and|,?\s*&)\s*", gap):
                run = []
        run = run + [span]
        best = run if len(run) > len(best) else best
    names = [_surface(sentence, a, b) for a, b, _ in best]
    return [n for n in names if not _in_question(_key(n), context.question_words)]


# ---- yes/no ------------------------------------------------------------------------------------------------


def _read_yes_no(context: _Context) -> Reading:
    anchors = [a for a in _question_anchors(context) if _mentions(context, a)]
    if len(anchors) >= 2 and re.search(r"\bboth\b|\band\b", context.question, flags=re.IGNORECASE):
        return _yes_no_each(context, anchors)
    stems = context.question_stems
    best = max(context.ranked()[:3], key=lambda s: _overlap(stems, s, context.idf))
    replaced, other = _substituted(context, best)
    support = _overlap(stems - _stems(replaced), best, context.idf)
    conflict = bool(replaced) or _contradicts(context, best)
    rel = _relevance(best.score)
    if support >= 0.7 and not conflict:
        answer, confidence = "yes", 0.3 + 0.5 * rel * support
    elif support >= 0.6 and conflict:
        answer, confidence = "no", 0.3 + 0.4 * rel * support
    else:
        answer, confidence = "no", 0.15 * rel
    return Reading(
        answer=answer,
        citations=(best.doc_id,) if best.doc_id else (),
        confidence=round(confidence, 4),
        rationale=f"{support:.0%} of the question's content found in {_quote(best.text)}"
        + (f"; it says {other!r} where the question says {replaced!r}" if replaced else "")
        + ("; it negates or contradicts the question" if conflict and not replaced else ""),
    )


def _substituted(context: _Context, sentence: _Sentence) -> tuple[str, str]:
    """'Was X born in Paris?' read against '… born … in Warsaw': the slot holds another name."""
    question = _tokenised(_Sentence(context.question, "", "", 0))
    for a, b, _ in _named_spans(question, context.gazetteer):
        name = _surface(question, a, b)
        cue = question.lowered[a - 1] if a > 0 else ""
        if cue not in _PLACE_CUES | {"by", "with", "for", "as"} or _mentioned(name, [sentence]):
            continue
        for x, y, _ in _named_spans(sentence, context.gazetteer):
            if x > 0 and sentence.lowered[x - 1] == cue and _key(_surface(sentence, x, y)) != _key(name):
                return name, _surface(sentence, x, y)
    return "", ""


def _contradicts(context: _Context, sentence: _Sentence) -> bool:
    """A negation the question lacks, or a number in the question the sentence replaces with another."""
    asked = context.question_words
    if any(w in _NEGATIONS or w.endswith("n't") for w in sentence.lowered if w not in asked):
        return True
    numbers = {w for w in asked if w.isdigit() or w in _NUMBER_WORDS}
    written = {w for w in sentence.lowered if w.isdigit() or w in _NUMBER_WORDS}
    return bool(numbers) and bool(written) and not numbers & written


def _yes_no_each(context: _Context, anchors: list[str]) -> Reading:
    """'Are A and B both X?': every named thing needs a sentence that supports the shared predicate."""
    predicate = context.question_stems - frozenset().union(*(_stems(a) for a in anchors))
    checks = []
    for anchor in anchors[:4]:
        found = _mentions(context, anchor)[:5]
        support, sentence = max(((_overlap(predicate, s, context.idf), s) for _, _, s in found),
                                key=lambda x: x[0])
        checks.append((anchor, support, sentence, _contradicts(context, sentence)))
    supported = all(support >= 0.6 and not conflict for _, support, _, conflict in checks)
    weakest = min(support for _, support, _, _ in checks)
    confidence = 0.3 + 0.4 * weakest if supported else 0.2 + 0.3 * (1 - weakest)
    return Reading(
        answer="yes" if supported else "no",
        citations=tuple(dict.fromkeys(s.doc_id for _, _, s, _ in checks if s.doc_id)),
        confidence=round(confidence * _relevance(max(s.score for _, _, s, _ in checks)), 4),
        rationale="; ".join(
            f"{a}: {support:.0%} support in {_quote(s.text, 80)}" for a, support, s, _ in checks
        ),
    )


# ---- multi-hop: relational phrases answered first ---------------------------------------------------------

_RELATIONAL_PERSONS = PERSON_NOUNS | frozenset(
    "advisor adviser supervisor student pupil teacher mentor nephew niece uncle aunt cousin "
    "grandfather grandmother grandson granddaughter spouse partner successor predecessor colleague "
    "collaborator owner discoverer creator".split()
)
_RELATIONAL_PLACES = PLACE_NOUNS | frozenset("birthplace hometown headquarters".split())
_RELATIONAL_THINGS = frozenset(
    "company organisation organization band team group element institution university laboratory "
    "film book album song novel school employer label publisher".split()
)
_POSSESSIVE_PLACES = frozenset("birthplace hometown headquarters".split())
_HOP_BREAK = frozenset("born died named called known".split())
_FRAMING_WORDS = frozenset("name names called full title kind type sort".split())


@dataclass(frozen=True)
class _Hop:
    """A relational phrase in the question, answered on its own before the rest of the question."""

    phrase: str  # text to replace in the question, e.g. "Werner Heisenberg's doctoral advisor"
    sub_question: str
    kind: str


def _find_hop(context: _Context) -> _Hop | None:
    question = context.question
    hop = _relative_hop(question) or _named_hop(context)
    if hop is None:
        return None
    rest = question.replace(hop.phrase, " ")
    asked = {w.lower() for w in _WORD.findall(rest)} - STOPWORDS - _FRAMING_WORDS
    return hop if asked else None  # 'Who was X's wife?' is itself the first hop: nothing to rewrite


def _relative_hop(question: str) -> _Hop | None:
    """'the physicist who supervised Louis de Broglie' → 'Who supervised Louis de Broglie?'."""
    match = re.search(r"\bthe\s+([a-z]+)\s+(who|that|which|where|when)\s+([^,?;]+)", question)
    if not match:
        return None
    noun, relative, clause = match.group(1), match.group(2), match.group(3).strip()
    kind = _relation_kind(noun)
    if relative in ("where", "when"):  # 'the city where …', 'the year when …'
        wanted = PLACE_NOUNS if relative == "where" else DATE_NOUNS
        kind = ("place" if relative == "where" else "date") if noun in wanted else ""
    if not kind or len(clause.split()) < 2:
        return None
    wh = {"person": "Who", "place": "Where", "date": "When"}.get(kind, "What")
    return _Hop(match.group(0).strip(), f"{wh} {clause}?", kind)


def _named_hop(context: _Context) -> _Hop | None:
    """'X's doctoral advisor' or 'the father of X', where X is a name the question gives."""
    question = context.question
    sentence = _tokenised(_Sentence(question, "", "", 0))
    spans = [
        (sentence.tokens[a][0], sentence.tokens[b][1]) for a, b, _ in _named_spans(sentence, context.gazetteer)
    ]
    spans += [(m.start(), m.end()) for m in re.finditer(r"[\"“][^\"”]{2,80}[\"”]", question)]
    for start, end in spans:
        after = re.match(r"['’]s\s+((?:[a-z]+\s*){1,3})", question[end:])
        if after:
            words = _relation_words(after.group(1).split())
            if words:
                phrase = f"{question[start:end]}'s {' '.join(words)}"
                if phrase in question or phrase.replace("'", "’") in question:
                    return _named(phrase if phrase in question else phrase.replace("'", "’"), words[-1])
        before = re.search(r"\bthe\s+((?:[a-z]+\s+){1,3})of\s+$", question[:start])
        if before:
            words = before.group(1).split()
            if _relation_kind(words[-1]):
                return _named(question[before.start(): end], words[-1])
    return None


def _relation_words(words: list[str]) -> list[str]:
    taken = []
    for word in words:
        if word in STOPWORDS or word in _HOP_BREAK or word.endswith("ed"):
            break
        taken.append(word)
    # "X's country of citizenship" is an attribute, not a hop; "X's birthplace" is one
    return taken if taken and _relation_kind(taken[-1], _POSSESSIVE_PLACES) else []


def _relation_kind(noun: str, places: frozenset[str] = _RELATIONAL_PLACES) -> str:
    if noun in _RELATIONAL_PERSONS:
        return "person"
    if noun in places:
        return "place"
    return "entity" if noun in _RELATIONAL_THINGS else ""


def _named(phrase: str, noun: str) -> _Hop:
    kind = _relation_kind(noun)
    wh = {"person": "Who", "place": "Where"}.get(kind, "What")
    return _Hop(phrase, f"{wh} is {phrase}?", kind)


# ---- premise check -----------------------------------------------------------------------------------------


def _check_premise(
    question: str, reading: Reading, sentences: list[_Sentence], gazetteer: _Gazetteer
) -> Reading:
    """A name the question relies on that no evidence sentence mentions makes any answer doubtful."""
    if reading.refused:
        return reading
    missing = [a for a in _premise_anchors(question, gazetteer) if not _mentioned(a, sentences)]
    if not missing:
        return reading
    return replace(
        reading,
        confidence=round(reading.confidence * 0.4 ** len(missing), 4),
        rationale=f"the evidence never mentions {', '.join(missing)}; {reading.rationale}",
    )


def _premise_anchors(question: str, gazetteer: _Gazetteer) -> list[str]:
    sentence = _tokenised(_Sentence(question, "", "", 0))
    anchors = []
    for a, b, source in _named_spans(sentence, gazetteer):
        # the first word of a question is capitalised anyway ('Roughly how old …')
        if a == 0 and b == 0 and source == "caps":
            continue
        anchors.append(_surface(sentence, a, b))
    return anchors


def _mentioned(name: str, sentences: list[_Sentence]) -> bool:
    words = {w.lower() for w in _WORD.findall(name)} - STOPWORDS
    return any(words <= (set(s.lowered) | {w.lower() for w in _WORD.findall(s.title)}) for s in sentences)
