"""What a model's reply may hand back as an answer: never its prompt echoed, and a short answer, not a sentence.

Small instruct models often copy part of their prompt (an evidence passage, the question, an
instruction line, a passage's number '1') or answer in a sentence that restates the question ("Marie
Curie was born in Warsaw, Poland."). `vet_answer` rejects the first (the reader then falls back as its
method says) and cuts the second to the span the question asks for ("Warsaw"): the answer type comes
from the question's wording (the offline classifier), the span from the sentence's own words; no model
call, nothing tied to a pack. `rejected_step` is the `error` step that quotes the raw reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.text import STOPWORDS, WORD, contains_run, words
from engine.tools.base import AnswerType, echoes_question
from engine.tools.llm_call import error_step
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.trace import ErrorStep

# [decide] words copied in a row from one evidence text: a passage handed back, not an answer (a
# list of names copied from a passage stays well below this, a copied answering clause like "she was
# born in Warsaw, then part of the Russian Empire" just below)
ECHO_RUN_WORDS = 11
CHUNK_WORDS = 12     # an answer this long holding half of an evidence text's content words is that text
PASSAGE_WORDS = 15   # an answer this long whose word trigrams mostly occur in the evidence is a passage of it
PASSAGE_SHARE = 0.6  # … "mostly"
MIN_ECHO_WORDS = 3  # an instruction fragment at least this long inside the answer is the prompt talking
SENTENCE_WORDS = 4  # an answer at least this long that restates the question is a sentence about it
RESTATED_WORDS = 2  # … restating at least this many of the question's content words
MAX_SPAN_WORDS = 5  # a short answer after 'is'/'was' is at most this long; longer is still a sentence
MAX_RAW_CHARS = 500  # of the raw reply quoted in an error step

_CLASSIFIER = OfflineQuestionClassifier()
_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}|<[^<>\n]*>")
_BARE_PLACEHOLDER = re.compile(r"\s*<[^<>\n]+>\s*")
_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
          r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?")
_DATE = re.compile(rf"\b(?:\d{{1,2}}\s+{_MONTH}\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{3,4}}|{_MONTH}\s+\d{{3,4}}"
                   r"|\d{3,4}s?)\b")
_BARE_NUMBER = re.compile(r"\s*\d+\s*")
_NUMBER = re.compile(r"(?<![\w.,])-?\d+(?:[.,]\d+)*(?:\s*%)?")
# lower-case words that may sit inside a name ('University of Munich', 'Ludwig van Beethoven')
_CONNECTORS = frozenset("of de da di del della des du la le von van der den y".split())
_COPULA = re.compile(r"\b(?:is|was|are|were)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;:.()!?]|\s(?:which|who|whose|that|and|but|while|because|although)\s")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_ELIDED = re.compile(r"[a-z]+['’][A-Z]")  # "Pont d'Alsace", "Palazzo dell'Arte"
_YES_NO = frozenset(("yes", "no"))


@dataclass(frozen=True)
class Vetted:
    """The answer to use ('' when the reply holds none) and, when it is not the reply's answer as written,
    why not (for an `error` step)."""

    answer: str
    problem: str = ""


def vet_answer(answer: str, question: str, evidence: Sequence[str] = (), instructions: str = "") -> Vetted:
    """The answer unless it echoes the prompt or is a passage's number where a name is asked for; a sentence
    restating the question cut to its short answer."""
    echo = echo_of(answer, question, evidence, instructions)
    if echo:
        return Vetted("", f"the answer echoes {echo}")
    if _citation_number(answer, evidence) and (kind := _CLASSIFIER.classify(question).kind) in ("person", "place"):
        return Vetted("", f"the answer {answer.strip()!r} is the number of an evidence passage, but the question "
                          f"asks for a {kind}")
    if not restates_question(answer, question):
        return Vetted(answer)
    span = short_span(answer, question)
    if not span or span == answer:
        return Vetted(answer)
    return Vetted(span, f"the answer is a sentence; took its short answer {span!r}")


# ---- echoes -----------------------------------------------------------------------------------------


def echo_of(answer: str, question: str, evidence: Sequence[str] = (), instructions: str = "") -> str:
    """What part of the prompt `answer` hands back ('the question', 'evidence 2', 'an instruction line',
    'a placeholder of the reply format'); '' when it is none of them."""
    said = words(answer)
    if not said:
        return ""
    if _BARE_PLACEHOLDER.fullmatch(answer):
        return "a placeholder of the reply format"
    if _echoes_question(said, question):
        return "the question"
    if any(_echoes_fragment(said, fragment) for fragment in _instruction_fragments(instructions)):
        return "an instruction line"
    texts = [words(text) for text in evidence]
    content = set(said) - STOPWORDS
    for n, text in enumerate(texts, start=1):
        distinct = set(text) - STOPWORDS
        if _longest_common_run(said, text) >= ECHO_RUN_WORDS or \
                (len(said) >= CHUNK_WORDS and distinct and len(content & distinct) >= 0.5 * len(distinct)):
            return f"evidence {n}"
    return _passage_of(said, texts)


def _passage_of(said: list[str], texts: list[list[str]]) -> str:
    """'a passage of evidence N' when most of a long answer's word trigrams occur in the evidence: pieces
    of a passage stitched together, each run shorter than ECHO_RUN_WORDS."""
    if len(said) < PASSAGE_WORDS or not texts:
        return ""
    per_text = [set(_trigrams(text)) for text in texts]
    mine = _trigrams(said)
    if sum(any(t in seen for seen in per_text) for t in mine) < PASSAGE_SHARE * len(mine):
        return ""
    best = max(range(len(texts)), key=lambda i: len(per_text[i].intersection(mine)))
    return f"a passage of evidence {best + 1}"


def _trigrams(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]


def copied_example(answer: str, template: str, given: str) -> bool:
    """The answer's words stand together in the prompt's fixed text (its demonstrations) and at least half
    of its content words are not in what the model was given to work from: a weak model's copy of a demo's
    answer or sub-query ('Caspian Sea' for a question about another sea), not a phrase it shares by chance."""
    said = words(answer)
    content = {w for w in said if w not in STOPWORDS}
    fixed, known = words(template), set(words(given))
    return bool(content) and contains_run(fixed, said) and 2 * len(content - known) >= len(content)


def hop_not_taken(question: str, answer: str) -> bool:
    """The answer is an entity the question itself names (a bridge hop not taken), unless the question
    offers it as a choice; the offline classifier tells which, no model call."""
    return echoes_question(question, answer, _CLASSIFIER)


def _citation_number(answer: str, evidence: Sequence[str]) -> bool:
    """A bare number no larger than the count of passages: most often a passage's '[n]' given as the answer."""
    return bool(_BARE_NUMBER.fullmatch(answer)) and 1 <= int(answer) <= len(evidence)


def _echoes_question(said: list[str], question: str) -> bool:
    """The whole question inside the reply, or a stretch of the question in its order and nothing else that
    is not one of its options (the question or its list of options handed back). 'X was older than Y'
    uses only the question's names too, but says which: that is an answer."""
    asked = words(question)
    if len(asked) > MIN_ECHO_WORDS and contains_run(said, asked):
        return True  # the whole question, with or without more after it
    if len(said) <= MIN_ECHO_WORDS or said[0] in _YES_NO or not _in_order(said, asked):
        return False
    if any(said == words(option) for option in _CLASSIFIER.classify(question).options):
        return False
    asked_content = {w for w in asked if w not in STOPWORDS}
    said_content = {w for w in said if w not in STOPWORDS}
    return len(said_content) > MIN_ECHO_WORDS or 2 * len(said_content) >= len(asked_content) > 0


def _in_order(said: list[str], asked: list[str]) -> bool:
    """Is `said` a subsequence of `asked` (its words found in that order, gaps allowed)?"""
    remaining = iter(asked)
    return all(word in remaining for word in said)


def _instruction_fragments(instructions: str) -> list[list[str]]:
    """The template's fixed text, line by line and cut at its placeholders, as word lists."""
    fragments = []
    for line in instructions.splitlines():
        fragments += [w for piece in _PLACEHOLDER.split(line) if len(w := words(piece)) >= MIN_ECHO_WORDS]
    return fragments


def _echoes_fragment(said: list[str], fragment: list[str]) -> bool:
    return contains_run(said, fragment) or (len(said) >= MIN_ECHO_WORDS and contains_run(fragment, said))




def _longest_common_run(a: list[str], b: list[str]) -> int:
    """Length of the longest run of words that `a` and `b` share in the same order (dynamic programming)."""
    best, previous = 0, [0] * (len(b) + 1)
    for word in a:
        current = [0] * (len(b) + 1)
        for j, other in enumerate(b, start=1):
            if word == other:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


# ---- sentences --------------------------------------------------------------------------------------


def restates_question(answer: str, question: str) -> bool:
    """A sentence about the question, not a bare answer: long enough and repeating the question's content
    words ('Marie Curie was born in Warsaw', 'X was older than Y')."""
    said = words(answer)
    if len(said) < SENTENCE_WORDS:
        return False
    asked = {w for w in words(question) if w not in STOPWORDS}
    return len({w for w in said if w in asked}) >= RESTATED_WORDS


def short_span(sentence: str, question: str) -> str:
    """The span of `sentence` of the kind the question asks for that the question does not already name:
    'yes'/'no', an option, a date, a number, or a name; '' when there is none."""
    kind = _CLASSIFIER.classify(question)
    asked = set(words(question))
    if kind.kind == "yes_no":
        return next((w for w in words(sentence)[:1] if w in _YES_NO), "")
    if kind.kind == "choice":
        return _first_option(sentence, kind)
    if kind.kind in ("date", "number"):
        pattern = _DATE if kind.kind == "date" else _NUMBER
        found = (m.group(0).strip() for m in pattern.finditer(sentence))
        return next((f for f in found if not set(words(f)) <= asked), "")
    named = {w.lower() for w in WORD.findall(question) if w[0].isupper()}
    name = next((n for n in _names(sentence, named) if not set(words(n)) <= asked | STOPWORDS), "")
    return name or _after_copula(sentence, asked)


def _after_copula(sentence: str, asked: set[str]) -> str:
    """'The element Einstein discovered in 1905 is antimony.' → 'antimony': what follows the first 'is'/'was'
    whose lead-in is mostly the question's words, up to the clause's end; for answers no capital marks."""
    for match in _COPULA.finditer(sentence):
        lead = [w for w in words(sentence[:match.start()]) if w not in STOPWORDS]
        if not lead or 2 * sum(w in asked for w in lead) < len(lead):
            continue
        rest = _ARTICLE.sub("", _CLAUSE_END.split(sentence[match.end():], 1)[0].strip())
        said = words(rest)
        # 'was born in …': an auxiliary before the question's own verb; 'a village in, which …': a cut phrase
        if (0 < len(said) <= MAX_SPAN_WORDS and said[0] not in asked and said[-1] not in STOPWORDS
                and not set(said) <= asked | STOPWORDS):
            return rest
    return ""


def _first_option(sentence: str, kind: AnswerType) -> str:
    lowered = sentence.lower()
    places = [(lowered.find(o.lower()), o) for o in kind.options if o and o.lower() in lowered]
    return min(places)[1] if places else ""


def _names(sentence: str, named: set[str]) -> list[str]:
    """Runs of capitalised words (joined by 'of', 'von'…, never across punctuation) without the leading
    articles and the leading names the question already gives (`named`: 'Erwin Schrödinger of Germany'
    → 'Germany'): the new names a sentence mentions, in order."""
    tokens = list(WORD.finditer(sentence))
    names, i = [], 0
    while i < len(tokens):
        if not tokens[i].group(0)[0].isupper():
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and _joined(sentence, tokens, j):
            j += 1
        while j > i and tokens[j].group(0).lower() in _CONNECTORS:
            j -= 1
        start = i
        while start < j and tokens[start].group(0).lower() in STOPWORDS | named | _CONNECTORS:
            start += 1
        names.append(sentence[tokens[start].start(): tokens[j].end()])
        i = j + 1
    return names


def _joined(sentence: str, tokens: list[re.Match[str]], j: int) -> bool:
    """Does the name at token j go on to token j+1: only a space between, and a capital or a connector?"""
    gap = sentence[tokens[j].end(): tokens[j + 1].start()]
    following = tokens[j + 1].group(0)
    return gap == " " and (following[0].isupper() or following.lower() in _CONNECTORS
                           or bool(_ELIDED.match(following)))


def rejected_step(role: str, problem: str, raw: str) -> ErrorStep:
    """The `error` step for a reply not taken as written: what was wrong, then the raw reply itself."""
    text = str(raw or "").strip()
    text = text if len(text) <= MAX_RAW_CHARS else text[: MAX_RAW_CHARS - 1] + "…"
    return error_step(role, f"{role} output not taken as written: {problem}. Raw output:\n{text}")
