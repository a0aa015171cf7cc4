"""The reasoning module (spec §2.7-2.8): one prompt over every reference; answer, refuse or flag a premise.

LLM: the system slots S1-S9 and user blocks U1-U7 (prompts/reason_system.txt, reason_rules.txt,
reason_user.txt), `samples` samples, then the §2.8 order: an empty or "I don't know" sample anywhere →
IDK; "invalid question" (or exactly "none"/"never") anywhere → invalid; else sample 0 is parsed
(`## Answer:`, cut at `===END===`, split at `## False Premise:`); a missing marker or an answer of 300+
characters is an `error` step quoting sample 0 and goes to the backup summarizer, whose own reply is
refused ("I don't know", another `error` step) when it is 300+ characters — unparsed text never
becomes the answer. Decision on spec §8.9: the answer keeps its case (the parser finds markers on
a lower-cased copy and slices the original); 2 samples by default ([C]: 4 for a lone question, 1 in a
full batch of 8).
Offline: a direct KG answer when the question has one, else the extractive reader over the chunks,
table rows, calculations and KG facts; below `reader_floor` (the reader's own score, before the run's
calibrated `min_confidence` decides), or when it only echoes the question, it refuses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.knowledge.records import INVALID_QUESTION, Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.prompting import (
    Piece, calculation_pieces, kg_pieces, question_pieces, reference_pieces, table_pieces,
)
from engine.tools.base import IDK, QuestionClassifier, Reader, Reading, echoes_question
from engine.tools.llm_call import call_model, error_step, fill_with_segments, one_line, shorten
from engine.tools.prompts import PromptFolder, fill
from engine.trace import Hit, Step

PROMPTS = PromptFolder.beside(__file__)

MAX_ANSWER_CHARS = 300
RAW_SHOWN = 300  # characters of an unparsed reasoning sample quoted in its error step
REASON_SETTINGS = GenerationSettings(max_new_tokens=512, temperature=0.5)
SUMMARY_SETTINGS = GenerationSettings(max_new_tokens=50, temperature=0.1)
_IDK = re.compile(r"i\s+do(?:n['’]t| not)\s+know")


@dataclass(frozen=True)
class References:
    """Everything the reasoner gets, already cut to the prompt's caps."""

    chunks: tuple[Hit, ...]
    kg_block: str = ""
    tables_block: str = ""
    calculations: tuple[str, ...] = ()
    direct_answer: str = ""  # empty when the knowledge extractor did not run (offline)
    query_time: str = ""
    table_rows: tuple[Hit, ...] = ()  # offline: the kept tables' rows as sentences
    facts: tuple[Triple, ...] = ()  # offline: KG facts for the reader
    kg_answer: str = ""  # a direct KG look-up's answer (kg_answer.py), when the question has one
    kg_reason: str = ""


@dataclass(frozen=True)
class Decision:
    """The final answer and the route of spec §3 that produced it."""

    answer: str
    route: str  # idk_any_sample | invalid_any_sample | parsed | premise_flag | summarizer | offline_reader | kg_answer
    reason: str
    sample: int | None = None
    refused: bool = False
    confidence: float = 0.0
    citations: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()


# ---- prompt -----------------------------------------------------------------------------------------


def build_messages(question: str, refs: References) -> tuple[Message, Message]:
    return reasoning_prompt(question, refs)[0]


def reasoning_prompt(question: str, refs: References,
                     ) -> tuple[tuple[Message, Message], tuple[PromptSegment, ...]]:
    """The system and user turns, and the segments of every chunk, KG fact, table, calculation and the question."""
    chunks = [one_line(h.text) for h in refs.chunks]
    blocks = ["# References\n" + "\n".join(f"- {text}" for text in chunks)]
    pieces: list[Piece] = reference_pieces(chunks)
    if refs.kg_block:
        blocks.append("## Knowledge Graph references\n" + refs.kg_block)
        pieces += kg_pieces(refs.kg_block)
    if refs.tables_block:
        blocks.append("## Table references\n" + refs.tables_block)
        pieces += table_pieces(refs.tables_block)
    if refs.calculations:
        blocks.append("## Possible useful calculation results\n" + "\n".join(
            f"### Calculation {n}: {line}" for n, line in enumerate(refs.calculations, start=1)))
        pieces += calculation_pieces(refs.calculations)
    if refs.direct_answer:
        blocks.append(f"# An answer from another agent:\n{refs.direct_answer}")
        pieces.append(("another agent", "answer", refs.direct_answer))
    rules = PROMPTS.load("reason_rules").strip()
    user, segments = fill_with_segments(PROMPTS.load("reason_user"),
                            {"references": pieces, "question": question_pieces(question)},
                            references="\n------\n".join(blocks), rules=rules,
                            query_time=refs.query_time or "unknown", question=question)
    system = Message("system", fill(PROMPTS.load("reason_system"), rules=rules))
    return (system, Message("user", user)), segments


# ---- §2.8 parse and refusal logic -------------------------------------------------------------------


@dataclass(frozen=True)
class Parsed:
    answer: str
    false_premise: bool
    ok: bool
    why: str = ""


def parse_reasoning(text: str) -> Parsed:
    """Sample 0's `## Answer:` and `## False Premise:`; `ok` is False when the summarizer must step in."""
    raw = text or ""
    low = raw.lower()
    start = low.find("## answer:")
    if start < 0:
        return Parsed("", False, False, "no '## Answer:' marker")
    end = low.find("===end===", start)
    body, body_low = raw[start + len("## answer:"):end if end >= 0 else None], low[start + 10:end if end >= 0 else None]
    flag_at = body_low.find("## false premise:")
    answer = one_line(body[:flag_at] if flag_at >= 0 else body).strip(" -*")
    flag = one_line(body_low[flag_at + len("## false premise:"):]).strip(" -*.") if flag_at >= 0 else ""
    if flag.split()[:1] and flag.split()[0] in ("yes", "true", "1"):
        return Parsed(INVALID_QUESTION, True, True)
    if not answer:
        return Parsed("", False, False, "an empty answer after '## Answer:'")
    if len(answer) >= MAX_ANSWER_CHARS:
        return Parsed("", False, False, f"an answer of {len(answer)} characters (limit {MAX_ANSWER_CHARS})")
    if "invalid question" in answer.lower():
        return Parsed(INVALID_QUESTION, True, True)
    return Parsed(answer, False, True)


def decide(samples: Sequence[str]) -> tuple[Decision | None, Parsed | None]:
    """§2.8 steps 1-3; (None, parsed) means step 4: the summarizer."""
    for n, text in enumerate(samples):
        if not text.strip() or _IDK.search(text.lower()):
            return Decision(IDK, "idk_any_sample", f"sample {n + 1} said I don't know (or nothing)", n, True), None
    for n, text in enumerate(samples):
        low = text.strip().lower()
        if "invalid question" in low or low in ("none", "never"):
            return Decision(INVALID_QUESTION, "invalid_any_sample", f"sample {n + 1} called the question invalid",
                            n), None
    parsed = parse_reasoning(samples[0]) if samples else Parsed("", False, False, "no sample")
    if not parsed.ok:
        return None, parsed
    if parsed.false_premise:
        return Decision(INVALID_QUESTION, "premise_flag", "sample 1 flagged a false premise", 0), parsed
    return Decision(parsed.answer, "parsed", "sample 1 parsed cleanly", 0, confidence=0.5), parsed


def summary_answer(text: str) -> tuple[str, bool]:
    """The summarizer's post-check: (answer, refused); a reply of 300+ characters is no short answer."""
    low = one_line(text).lower()
    if not low or _IDK.search(low):
        return IDK, True
    if "invalid question" in low:
        return INVALID_QUESTION, False
    answer = one_line(text).strip(" .\"'")
    return (IDK, True) if len(answer) >= MAX_ANSWER_CHARS else (answer, False)


@dataclass(frozen=True)
class LlmReasoner:
    chat: ChatModel
    samples: int = 2
    settings: GenerationSettings = REASON_SETTINGS

    def reason(self, question: str, refs: References) -> Decision:
        messages, segments = reasoning_prompt(question, refs)
        steps: tuple[Step, ...] = ()
        texts = []
        for n in range(self.samples):
            reply = call_model(self.chat, messages, self.settings, role=f"reasoning {n + 1}", segments=segments)
            steps += reply.steps
            texts.append(reply.text)
        decision, parsed = decide(texts)
        if decision is not None:
            return _with(decision, steps, refs)
        # §2.8 step 4: the backup summarizer gets the question and the raw reasoning
        why = parsed.why if parsed else "no sample"
        steps += (error_step("reasoning 1", f"sample 1 did not parse ({why}): {shorten(texts[0], RAW_SHOWN)}; "
                             "handed to the summarizer"),)
        reasoning = texts[0][:4000]
        prompt, summary_segments = fill_with_segments(
            PROMPTS.load("summarizer"),
            {"question": question_pieces(question), "reasoning": [("reasoning 1", "reasoning", reasoning)]},
            question=question, reasoning=reasoning)
        reply = call_model(self.chat, (Message("user", prompt),), SUMMARY_SETTINGS, role="summarizer",
                           segments=summary_segments)
        steps += reply.steps
        answer, refused = summary_answer(reply.text)
        if refused and one_line(reply.text) and not _IDK.search(reply.text.lower()):
            steps += (error_step("summarizer", f"the summary is no short answer ({len(one_line(reply.text))} "
                                 f"characters, limit {MAX_ANSWER_CHARS}): {shorten(reply.text)}; refused"),)
        reason = f"sample 1 did not parse ({why}) → summarizer"
        return _with(Decision(answer, "summarizer", reason, 0, refused, 0.2), steps, refs)


def _with(decision: Decision, steps: tuple[Step, ...], refs: References) -> Decision:
    cited = tuple(dict.fromkeys(h.doc_id for h in refs.chunks if decision.answer.lower() in h.text.lower()))
    return replace(decision, steps=steps, citations=cited if not decision.refused else ())


# ---- offline -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfflineReasoner:
    reader: Reader
    reader_floor: float
    classifier: QuestionClassifier | None = None

    def reason(self, question: str, refs: References) -> Decision:
        if refs.kg_answer:  # a fact look-up beats reading: it is what CRAG's mock API returns
            return Decision(refs.kg_answer, "kg_answer", f"read from the KG: {refs.kg_reason}", confidence=0.9)
        calc_hits = tuple(Hit(doc_id="", chunk_id=f"calc-{n}", title="calculation", text=line, score=0.0, rank=n)
                          for n, line in enumerate(refs.calculations, start=1))
        reading: Reading = self.reader.read(question, refs.chunks + refs.table_rows + calc_hits, refs.facts)
        if reading.refused:
            return Decision(IDK, "offline_reader", f"the reader refused: {reading.rationale}", refused=True,
                            steps=reading.steps)
        if echoes_question(question, reading.answer, self.classifier):
            return Decision(IDK, "offline_reader", f"the best guess {reading.answer!r} only repeats a name the question "
                            "already gives: refusing rather than guessing", refused=True, steps=reading.steps)
        if reading.confidence < self.reader_floor:
            return Decision(IDK, "offline_reader",
                            f"best guess {reading.answer!r} at reader score {reading.confidence:.2f} is below "
                            f"the reader floor {self.reader_floor:.2f}: refusing rather than guessing",
                            refused=True, confidence=reading.confidence, steps=reading.steps)
        return Decision(reading.answer, "offline_reader", reading.rationale, confidence=reading.confidence,
                        citations=reading.citations, steps=reading.steps)
