"""The LLM `Reader`: numbered evidence in a prompt, a chat model's short answer, a tolerant parser.

The prompt lives in prompts/reader.txt. The parser accepts the many ways small models bend the
requested `Answer: … / Evidence: …` format ('The answer is: …', a citation number before the answer);
when it has to guess, or the model fails, the reading carries an `error` step and the run goes on
(DESIGN §3, §12). The answer is never the prompt echoed, and a sentence is cut to its short answer
(engine.tools.short_answer). Arithmetic the model writes as `Calculation: <expression>` is evaluated
by the safe calculator, never by the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION, Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.tools.base import IDK, Reading
from engine.tools.calculator import calculation_step
from engine.tools.llm_call import ModelReply, call_model, error_step, one_line, shorten
from engine.tools.prompts import fill_spans, load_prompt
from engine.tools.short_answer import rejected_step, vet_answer
from engine.trace import ErrorStep, Hit, Step

MAX_ANSWER_CHARS = 200
MAX_EVIDENCE_CHARS = 2000  # per block: a long page would crowd the others out of a small context
MAX_FACTS = 50
# The model gives no calibrated score, so confidence only says how well the reply kept to the format.
CLEAN_CONFIDENCE = 0.5
FALLBACK_CONFIDENCE = 0.2

# "Question:" too: a model that runs on into the prompt's next question has ended its answer
_LABELS = r"answer|evidence|sources?|citations?|calculation|question"
_LINE_LABEL = re.compile(rf"^[\s>#*_\-]*({_LABELS})\s*[*_]*\s*:", re.IGNORECASE | re.MULTILINE)
# 'Answer:' inside a line, and the 'The answer (to this question) is: X' / 'The answer is X' small models write
_INLINE_ANSWER = re.compile(r"(?:\bthe\s+)?\banswer(?:(?:\s+\w+){0,4}?\s+is)?\s*[*_]*\s*:|\bthe\s+answer\s+is\b\s*:?",
                            re.IGNORECASE)
# a line holding only citation numbers ('1', '[2]', '(1, 3)'), which small models write before the answer
_CITATION_LINE = re.compile(r"^[\s>*_\-]*[\[(]?\s*\d{1,4}(?:\s*[,;]\s*\d{1,4})*\s*[\])]?[.:]?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+(?=\S)")
_LEADING_CITES = re.compile(r"^\s*(?:\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]\s*)+")
_INLINE_TAIL = re.compile(r"\(?\s*\b(?:evidence|sources?|citations?)\s*[*_]*\s*:.*$", re.IGNORECASE)
_TRAILING_CITES = re.compile(r"(?:\s*\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\])+\s*\.?\s*$")
_CITATION_LABELS = ("evidence", "sources", "source", "citations", "citation")
_QUOTES = "\"'`“”‘’«»*_ "
_REFUSALS = re.compile(
    r"^(?:i\s+)?(?:do\s*n[o'’]?t|cannot|can\s*not|can[’']t|am\s+unable\s+to)\s+(?:know|answer|tell|say|determine)"
    r"|^unknown$|^not\s+(?:known|enough|sufficient|mentioned|stated|given|provided|specified)\b"
    r"|^(?:there\s+is\s+)?(?:insufficient|no)\s+(?:information|evidence|answer)\b"
    r"|^(?:the\s+)?(?:evidence|context|documents?|passages?)\s+(?:does|do)\s*n[o'’]?t\b"
    r"|^(?:it\s+)?cannot\s+be\s+determined\b|^n/a$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedAnswer:
    """What the parser made of a reply; `ok` is False when it had to guess the answer."""

    answer: str
    evidence: tuple[int, ...] = ()
    calculation: str = ""
    ok: bool = False


@dataclass(frozen=True)
class ReaderPrompt:
    """The user message sent to the model and the labelled spans of it that attention is summed over."""

    message: str
    segments: tuple[PromptSegment, ...]


@dataclass(frozen=True)
class LlmReader:
    """Answer from evidence with a chat model; attentive (HF) models also say where they looked."""

    chat: ChatModel
    settings: GenerationSettings = GenerationSettings(max_new_tokens=64)

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        if not str(question or "").strip():
            return _refusal((), "the question is empty")  # nothing to ask, so no model call is spent
        hits = tuple(evidence or ())
        prompt = build_reader_prompt(str(question), hits, tuple(facts or ()))
        reply = call_model(
            self.chat, (Message("user", prompt.message),), self.settings, role="reader",
            segments=prompt.segments,
        )
        if reply.failed:
            return _refusal(reply.steps, "the reader model failed")
        if not reply.text.strip():
            error = _error("reader model returned empty output; expected 'Answer: …' and 'Evidence: …'")
            return _refusal(reply.steps + (error,), "the reader model returned nothing")
        return _reading(parse_reader_output(reply.text), str(question), hits, reply)


# ---- prompt ---------------------------------------------------------------------------------------


def build_reader_prompt(question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> ReaderPrompt:
    """Fill prompts/reader.txt and record where the question, each evidence block and the facts sit."""
    blocks = [_evidence_block(n, hit) for n, hit in enumerate(evidence, start=1)]
    evidence_text = "\n\n".join(blocks) if blocks else "(no evidence was retrieved)"
    facts_block = _facts_block(facts)
    message, spans = fill_spans(
        load_prompt("reader"), evidence=evidence_text, facts=facts_block + "\n\n" if facts_block else "",
        question=question.strip(),
    )
    segments = []
    offset = spans["evidence"][0]
    for label, block, hit in zip(_block_labels(evidence), blocks, evidence, strict=True):
        segments.append(PromptSegment(label, "document", offset, offset + len(block), one_line(hit.title)))
        offset += len(block) + 2
    if facts_block:
        start = spans["facts"][0]
        segments.append(PromptSegment("facts", "triples", start, start + len(facts_block)))
    segments.append(PromptSegment("question", "question", *spans["question"]))  # in prompt order
    return ReaderPrompt(message, tuple(segments))


def _evidence_block(number: int, hit: Hit) -> str:
    # one line per block keeps the numbering unambiguous whatever line breaks the document holds
    text = one_line(hit.text)
    if len(text) > MAX_EVIDENCE_CHARS:
        text = text[:MAX_EVIDENCE_CHARS].rstrip() + " …"
    title = one_line(hit.title)
    return f"[{number}] {title} — {text}" if title else f"[{number}] {text}"


def _block_labels(evidence: Sequence[Hit]) -> list[str]:
    """Doc ids, made unique: two chunks of one document would merge into one heatmap column."""
    seen: set[str] = set()
    labels = []
    for n, hit in enumerate(evidence, start=1):
        label = hit.doc_id if hit.doc_id not in seen else f"{hit.doc_id} [{n}]"
        seen.add(hit.doc_id)
        labels.append(label)
    return labels


def _facts_block(facts: Sequence[Triple]) -> str:
    if not facts:
        return ""
    lines = [_fact_line(t) for t in facts[:MAX_FACTS]]
    return "Facts from the knowledge graph:\n" + "\n".join(lines)


def _fact_line(triple: Triple) -> str:
    parts = [triple.head, triple.relation, triple.tail] + ([triple.time] if triple.time else [])
    return "- " + " | ".join(one_line(p) for p in parts)


def _error(message: str) -> ErrorStep:
    return error_step("reader", message)


# ---- parser -------------------------------------------------------------------------------------------


def parse_reader_output(text: str) -> ParsedAnswer:
    """Answer, cited evidence numbers and calculation from a reply that may only roughly keep the format."""
    body = str(text or "").replace("**", "")
    labelled = _labelled(body)
    answer = labelled.get("answer")
    if answer is None:
        answer = _inline_answer(body)
    found = answer is not None
    answer = answer if found else _first_bare_line(body)
    # 'Answer: Paris (Evidence: 1)', 'Answer: Paris [1]' and '[1] Paris' carry their citations on the answer line
    tail = _INLINE_TAIL.search(answer)
    answer, tail_cites = (answer[: tail.start()], _numbers(tail.group(0))) if tail else (answer, ())
    answer, bracket_cites = _split_trailing_citations(answer)
    lead = _LEADING_CITES.match(answer)
    answer, lead_cites = (answer[lead.end():], _numbers(lead.group(0))) if lead else (answer, ())
    answer = _clean_answer(answer)
    cited = _numbers(next((labelled[k] for k in _CITATION_LABELS if labelled.get(k)), ""))
    calculation = _clean_expression(labelled.get("calculation", ""))
    return ParsedAnswer(answer, cited or tail_cites or bracket_cites or lead_cites, calculation,
                        ok=bool((found and answer) or calculation))


def _labelled(body: str) -> dict[str, str]:
    """The text after the first `Label:` of each kind at the start of a line (next line if empty)."""
    found: dict[str, str] = {}
    matches = list(_LINE_LABEL.finditer(body))
    for i, match in enumerate(matches):
        name = match.group(1).lower()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        lines = [ln for ln in body[match.end():end].split("\n") if ln.strip()]
        found.setdefault(name, _first_answer_line(lines))
    return found


def _inline_answer(body: str) -> str | None:
    """The text after the first 'answer:' / 'The answer is' that is followed by any (on its line or the
    next non-empty one); '' when every such label is left empty, None when there is none."""
    matches = list(_INLINE_ANSWER.finditer(body))
    for match in matches:
        lines = [ln.strip() for ln in body[match.end():].split("\n") if ln.strip()]
        if lines and not _INLINE_ANSWER.match(lines[0]):
            return _first_answer_line(lines)
    return "" if matches else None


def _first_bare_line(body: str) -> str:
    """The first line that is not a label; a line of citation numbers alone ('1') and a lead-in ending in
    a colon ('The companies are:') are skipped when text follows, since small models write them first."""
    lines = [ln for ln in body.split("\n") if ln.strip() and not _LINE_LABEL.match(ln)]
    answers = [ln for ln in lines if not _CITATION_LINE.match(ln) and not ln.rstrip().endswith(":")]
    return _first_answer_line(answers or lines)


def _first_answer_line(lines: list[str]) -> str:
    """The first line; when a list starts there, its items joined ('1. Pauli' / '2. Bethe' → 'Pauli, Bethe'):
    a question asking for several things is answered as a list."""
    if not lines or not _LIST_ITEM.match(lines[0]):
        return lines[0] if lines else ""
    items = []
    for line in lines:
        marker = _LIST_ITEM.match(line)
        if not marker:
            break
        items.append(line[marker.end():].strip())
    return ", ".join(items)


def _split_trailing_citations(answer: str) -> tuple[str, tuple[int, ...]]:
    """'Paris [1][3]' → ('Paris', (1, 3)): some models cite inline instead of on an Evidence line."""
    match = _TRAILING_CITES.search(answer)
    if not match or not answer[: match.start()].strip():
        return answer, ()
    return answer[: match.start()], _numbers(match.group(0))


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(dict.fromkeys(int(n) for n in re.findall(r"\d+", text) if len(n) <= 4))


def _clean_answer(answer: str) -> str:
    text = one_line(answer).strip(_QUOTES).rstrip(".").strip(_QUOTES)
    if len(text) > MAX_ANSWER_CHARS:
        cut = text[:MAX_ANSWER_CHARS]
        text = cut[: cut.rfind(" ")] if " " in cut else cut
    return text


def _clean_expression(expression: str) -> str:
    # models write unicode operators and the result after '='; the calculator wants plain ASCII
    text = one_line(expression).strip("`$ ").rstrip(".")
    text = text.replace("−", "-").replace("×", "*").replace("÷", "/")
    return text.split("=", 1)[0].strip() if "=" in text and not text.startswith("=") else text.strip("= ")


# ---- parsed reply → reading ---------------------------------------------------------------------------


def _reading(parsed: ParsedAnswer, question: str, evidence: tuple[Hit, ...], reply: ModelReply) -> Reading:
    steps: list[Step] = list(reply.steps)
    if not parsed.ok:
        used = f"used its first line {shorten(parsed.answer, 60)}" if parsed.answer else "found no answer"
        steps.append(_error(f"reader output had no 'Answer: …' line; got {shorten(reply.text)}; {used}"))
    answer = _calculated(parsed, steps)
    if answer.lower() == INVALID_QUESTION:
        answer = INVALID_QUESTION  # the exact gold form for false-premise questions (DESIGN §5)
    elif answer and not is_refusal(answer):
        # never the prompt handed back; a sentence cut to its short answer (engine.tools.short_answer)
        vetted = vet_answer(answer, question, [h.text for h in evidence], load_prompt("reader"))
        if vetted.problem:
            steps.append(rejected_step("reader", vetted.problem, reply.text))
        answer = vetted.answer
    if not answer or is_refusal(answer):
        return Reading(IDK, refused=True, confidence=0.0, rationale=one_line(reply.text)[:500], steps=tuple(steps))
    citations = _citations(parsed.evidence, evidence, steps)
    clean = not any(isinstance(s, ErrorStep) for s in steps)
    return Reading(answer, citations, CLEAN_CONFIDENCE if clean else FALLBACK_CONFIDENCE,
                   rationale=one_line(reply.text)[:500], steps=tuple(steps))


def is_refusal(answer: str) -> bool:
    """'I don't know' in any of the ways models say it ('Not enough information', 'Unknown', …)."""
    return bool(_REFUSALS.search(answer))


def _calculated(parsed: ParsedAnswer, steps: list[Step]) -> str:
    """The calculation's result when there is one that evaluates, else the model's own answer."""
    if not parsed.calculation:
        return parsed.answer
    step = calculation_step(parsed.calculation)
    steps.append(step)
    if step.result is not None:
        return _format_number(step.result)
    fallback = f"kept the model's answer {shorten(parsed.answer, 60)}" if parsed.answer else "no answer left"
    steps.append(_error(f"reader calculation {shorten(parsed.calculation, 60)} failed: {step.error}; {fallback}"))
    return parsed.answer


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


def _citations(numbers: tuple[int, ...], evidence: tuple[Hit, ...], steps: list[Step]) -> tuple[str, ...]:
    """Doc ids of the cited blocks (numbers out of range ignored); the first block when none is usable."""
    if not evidence:
        return ()
    cited = tuple(dict.fromkeys(evidence[n - 1].doc_id for n in numbers if 1 <= n <= len(evidence)))
    if cited:
        return cited
    got = f"cited {', '.join(map(str, numbers))} of {len(evidence)}" if numbers else "cited none"
    steps.append(_error(f"reader output {got}; expected 'Evidence: <numbers from 1 to {len(evidence)}>'; "
                        f"cited evidence 1 instead"))
    return (evidence[0].doc_id,)


def _refusal(steps: tuple[Step, ...], reason: str) -> Reading:
    return Reading(IDK, refused=True, confidence=0.0, rationale=reason, steps=steps)
