"""The reasoning module (spec §2.7-2.8): one prompt over every reference; answer, refuse or flag a premise.

LLM: the system slots S1-S9 and user blocks U1-U7 (prompts/reason_system.txt, reason_rules.txt,
reason_user.txt), `samples` samples, then the §2.8 order: an empty or "I don't know" sample anywhere →
IDK; "invalid question" (or exactly "none"/"never") anywhere → invalid; else sample 0 is parsed
(`## Answer:`, cut at `===END===`, split at `## False Premise:`); a missing marker or an answer of 300+
characters is an `error` step quoting sample 0 and goes to the backup summarizer, whose own reply is
refused ("I don't know", another `error` step) when it is 300+ characters — unparsed text never
becomes the answer. Decision on spec §8.9: the answer keeps its case (the parser finds markers on
a lower-cased copy and slices the original); 1 sample by default ([C]: 4 for a lone question, 1 in a
full batch of 8): a local model's sampling is seeded per call, so a second sample repeats the first
word for word and can neither add an "I don't know" nor change the parse — raise it on a server that
samples.
For small models (issue 23), answers as they bend the format: markers with any number of '#', bold or
none (answers.marked), the answer's first line after its marker (or its list), an answer that only
says the answer is unknown ("her spouse is unknown") counted as "I don't know", and an answer that is
the prompt echoed (the question, an instruction line, a whole reference) counted as no answer: the
summarizer steps in, and its reply is checked the same way. Lines that only recite the instructions
are dropped before the §2.8 checks (rule 1's 'the answer is "I don't know"' recited is no refusal),
and the summarizer gets the reasoning without repeated lines (a small model loops: "12. …spouse is
unknown." ×10). Generation stops at `===END===` and at 256 new tokens (the three-question format needs
fewer; [C]'s 512 were for a 70B model on a GPU, and the hf backend keeps attention per generated
token). Deliberate deviation: when no sample parsed and the summarizer gave no usable answer either,
a direct KG answer (kg_answer.py, the analogue of the mock API's result, one of the references) is the
answer rather than "I don't know" — as offline; a model's own "I don't know" still wins.
Offline: a direct KG answer when the question has one, else the extractive reader over the chunks,
table rows, calculations and KG facts; below `reader_floor` (the reader's own score, before the run's
calibrated `min_confidence` decides), or when it only echoes the question, it refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.knowledge.records import INVALID_QUESTION, Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.answers import echo_of_prompt, first_answer, marked, says_unknown, without_copies
from engine.methods.hybrid.prompting import (
    Piece, calculation_pieces, kg_pieces, question_pieces, reference_pieces, table_pieces,
)
from engine.methods.hybrid.sampling import draw
from engine.tools.base import IDK, QuestionClassifier, Reader, Reading, echoes_question
from engine.tools.llm_call import call_model, error_step, fill_with_segments, one_line, shorten
from engine.tools.prompts import PromptFolder, fill
from engine.trace import Hit, Step

PROMPTS = PromptFolder.beside(__file__)

MAX_ANSWER_CHARS = 300
RAW_SHOWN = 300  # characters of an unparsed reasoning sample quoted in its error step
END = "===END==="
REASON_SETTINGS = GenerationSettings(max_new_tokens=256, temperature=0.5, stop=(END,))
SUMMARY_SETTINGS = GenerationSettings(max_new_tokens=50, temperature=0.1)
_IDK = re.compile(r"i\s+do(?:n['’]t| not)\s+know")
_END = re.compile(r"===\s*end\s*===", re.IGNORECASE)


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


def parse_reasoning(text: str, echo: Callable[[str], str] = lambda _: "") -> Parsed:
    """Sample 0's `## Answer:` and `## False Premise:`; `ok` is False when the summarizer must step in.
    `echo` says why an answer is the prompt echoed ('' when it is not)."""
    raw = _END.split(text or "")[0]
    start = marked(raw, "answer")
    if start is None:
        return Parsed("", False, False, "no '## Answer:' marker")
    body = raw[start[1]:]
    flag_at = marked(body, "false premise")
    answer = first_answer(body[:flag_at[0]] if flag_at else body).strip(" -:")
    flag = one_line(body[flag_at[1]:]).lower().strip(" -*:.") if flag_at else ""
    if flag.split()[:1] and flag.split()[0].strip(".,") in ("yes", "true", "1"):
        return Parsed(INVALID_QUESTION, True, True)
    if not answer:
        return Parsed("", False, False, "an empty answer after '## Answer:'")
    if len(answer) >= MAX_ANSWER_CHARS:
        return Parsed("", False, False, f"an answer of {len(answer)} characters (limit {MAX_ANSWER_CHARS})")
    if "invalid question" in answer.lower():
        return Parsed(INVALID_QUESTION, True, True)
    why = echo(answer)
    if why:
        return Parsed("", False, False, f"the answer {answer!r} is no answer: {why}")
    return Parsed(answer, False, True)


def decide(samples: Sequence[str], echo: Callable[[str], str] = lambda _: "") -> tuple[Decision | None, Parsed | None]:
    """§2.8 steps 1-3; (None, parsed) means step 4: the summarizer."""
    for n, text in enumerate(samples):
        if not text.strip() or _IDK.search(text.lower()):
            return Decision(IDK, "idk_any_sample", f"sample {n + 1} said I don't know (or nothing)", n, True), None
    for n, text in enumerate(samples):
        low = text.strip().lower()
        if "invalid question" in low or low in ("none", "never"):
            return Decision(INVALID_QUESTION, "invalid_any_sample", f"sample {n + 1} called the question invalid",
                            n), None
    parsed = parse_reasoning(samples[0], echo) if samples else Parsed("", False, False, "no sample")
    if not parsed.ok:
        return None, parsed
    if parsed.false_premise:
        return Decision(INVALID_QUESTION, "premise_flag", "sample 1 flagged a false premise", 0), parsed
    if says_unknown(parsed.answer):
        return Decision(IDK, "idk_any_sample", f"sample 1's answer {parsed.answer!r} says it is not known", 0,
                        True), parsed
    return Decision(parsed.answer, "parsed", "sample 1 parsed cleanly", 0, confidence=0.5), parsed


def summary_answer(text: str, echo: Callable[[str], str] = lambda _: "") -> tuple[str, str]:
    """The summarizer's post-check: (answer, why it is refused — '' when it is not); its first line is the
    answer, and one that says the answer is unknown, is the prompt echoed or has 300+ characters is none."""
    line = first_answer(text)
    low = line.lower()
    if not low or _IDK.search(low):
        return IDK, "it said I don't know (or nothing)"
    if "invalid question" in low:
        return INVALID_QUESTION, ""
    answer = line.strip(" .\"'")
    if says_unknown(answer):
        return IDK, f"{answer!r} says the answer is not known"
    if len(answer) >= MAX_ANSWER_CHARS:
        return IDK, f"the summary is no short answer ({len(answer)} characters, limit {MAX_ANSWER_CHARS})"
    why = echo(answer)
    return (IDK, f"the summary {answer!r} is no answer: {why}") if why else (answer, "")


def without_repeats(text: str) -> str:
    """The text with every line after its first occurrence dropped (list numbers ignored): a looping model's
    reasoning, shortened to what it said."""
    seen: set[str] = set()
    kept = []
    for line in text.splitlines():
        key = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).strip().lower()
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(line)
    return "\n".join(kept)


@dataclass(frozen=True)
class LlmReasoner:
    chat: ChatModel
    samples: int = 1
    settings: GenerationSettings = REASON_SETTINGS

    def reason(self, question: str, refs: References) -> Decision:
        messages, segments = reasoning_prompt(question, refs)
        instructions = [m.content for m in messages if m.role == "system"]
        replies = draw(self.chat, messages, self.settings, "reasoning", self.samples, segments)
        steps = tuple(step for reply in replies for step in reply.steps)
        texts = [without_copies(reply.text, instructions) for reply in replies]
        decision, parsed = decide(texts, _echo_check(question, refs, instructions))
        if decision is not None:
            return _with(decision, steps, refs)
        # §2.8 step 4: the backup summarizer gets the question and the raw reasoning
        why = parsed.why if parsed else "no sample"
        steps += (error_step("reasoning 1", f"sample 1 did not parse ({why}): {shorten(texts[0], RAW_SHOWN)}; "
                             "handed to the summarizer"),)
        return self._summarize(question, refs, texts[0], f"sample 1 did not parse ({why}) → summarizer", steps)

    def _summarize(self, question: str, refs: References, raw: str, reason: str, steps: tuple[Step, ...]) -> Decision:
        """The backup summarizer's short answer; when it gives none (and no "I don't know" of its own), a
        direct KG answer stands (module docstring)."""
        reasoning = without_repeats(raw)[:4000]
        template = PROMPTS.load("summarizer")
        prompt, segments = fill_with_segments(
            template, {"question": question_pieces(question), "reasoning": [("reasoning 1", "reasoning", reasoning)]},
            question=question, reasoning=reasoning)
        reply = call_model(self.chat, (Message("user", prompt),), SUMMARY_SETTINGS, role="summarizer",
                           segments=segments)
        steps += reply.steps
        answer, rejected = summary_answer(reply.text, _echo_check(question, refs, [template], [reasoning]))
        if rejected and one_line(reply.text) and not _IDK.search(reply.text.lower()):
            steps += (error_step("summarizer", f"{rejected}: {shorten(reply.text)}; refused"),)
            if refs.kg_answer:
                return _with(Decision(refs.kg_answer, "kg_answer", f"{reason} gave no answer; the KG look-up's "
                                      f"answer stands: {refs.kg_reason}", 0, confidence=0.2), steps, refs)
        return _with(Decision(answer, "summarizer", reason, 0, bool(rejected), 0.2), steps, refs)


def _echo_check(question: str, refs: References, instructions: Sequence[str], passages: Sequence[str] = (),
                ) -> Callable[[str], str]:
    """Why an answer is this prompt echoed: the question, the instructions, a chunk or another passage copied."""
    texts = [*(h.text for h in refs.chunks), *passages]
    return lambda answer: echo_of_prompt(answer, question, instructions, texts)


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
