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
none (answers.marked), a line-start "The answer is …" where the marker is missing (answers.stated), the
answer's first line after its marker (or its list; a heading there is no answer), "invalid question"
only as a verdict (a made-up "## Invalid question:" heading is none), and an answer that only says the
answer is unknown ("her spouse is unknown") counted as "I don't know". Every answer, the summarizer's
too, is vetted as every method's is (engine/tools/short_answer.py): the prompt echoed (the question, an
instruction line, a reference or the summarized reasoning copied) is no answer — the summarizer steps
in, or refuses — and a sentence restating the question is cut to its short answer ("The Elbe is longer"
→ "Elbe"), with an `error` step quoting the raw reply. A reply that only hands the prompt back (the
question and the instructions' words) is not summarized — a summary of nothing is made up. Lines that
only recite the instructions are dropped before the §2.8 checks (rule 1's 'the answer is "I don't know"'
recited is no refusal), and the summarizer gets the reasoning without repeated lines (a small model
loops: "12. …spouse is unknown." ×10).
Deliberate deviation: neither turn ends with the paper's "Think step by step." (S9, U7): the format's
reasoning bullets already ask for the steps, and the trigger made SmolLM2-135M write numbered lists that
looped to the token cap (60-250 s a sample) instead of the format; without it the same model answered in
one line. Generation stops at `===END===`, at a new line opening with "Question:" (a model writing on
past its reply), at a heading right under `## Answer:` (SmolLM2 then wrote "## Answer:" a hundred times)
and at 256 new tokens (the format needs fewer; [C]'s 512 were for a 70B model on a GPU, and the hf
backend keeps attention per generated token). Deliberate deviation: when no sample parsed and the
summarizer gave no usable answer either, a direct KG answer (kg_answer.py, the analogue of the mock
API's result, one of the references) is the answer rather than "I don't know" — as offline; a model's
own "I don't know" still wins.
Offline: a direct KG answer when the question has one, else the extractive reader over the chunks,
table rows, calculations and KG facts; it refuses when the reader does or when the answer only echoes the
question, and the run's calibrated `min_confidence` decides the rest (issue 27: no floor of its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION, Triple
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.answers import (
    first_answer,
    marked,
    says_unknown,
    stated,
)
from engine.methods.hybrid.prompting import (
    Piece,
    calculation_pieces,
    kg_pieces,
    question_pieces,
    reference_pieces,
    table_pieces,
)
from engine.tools.base import IDK
from engine.tools.llm_call import fill_with_segments, one_line
from engine.tools.prompts import PromptFolder, fill
from engine.tools.short_answer import Vetted
from engine.trace import Hit, Step

PROMPTS = PromptFolder.beside(__file__)

MAX_ANSWER_CHARS = 300
RAW_SHOWN = 300  # characters of an unparsed reasoning sample quoted in its error step
END = "===END==="
NEXT_QUESTION = "\nQuestion:"  # a small model that goes on past its reply writes the next turn's question
# a heading where the answer belongs: nothing after it is parsed (first_answer); the cut reply keeps its
# marker's "## " — a sample cut to nothing would count as "I don't know" (§2.8 step 1)
EMPTY_ANSWER = "Answer:\n#"
REASON_SETTINGS = GenerationSettings(max_new_tokens=256, temperature=0.5, stop=(END, NEXT_QUESTION, EMPTY_ANSWER))
SUMMARY_SETTINGS = GenerationSettings(max_new_tokens=50, temperature=0.1)
SAYS_IDK = re.compile(r"i\s+do(?:n['’]t| not)\s+know")
_INVALID = re.compile(r"invalid question(?![\s*_]*:)")  # "## Invalid question:" is a heading, not a verdict
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
    why: str = ""  # why not ok, or why the answer is not the reply's as written (a sentence cut short)


Vet = Callable[[str], Vetted]  # an answer → the answer to use ('' when it is the prompt handed back)


def parse_reasoning(text: str, vet: Vet = Vetted) -> Parsed:
    """Sample 0's `## Answer:` and `## False Premise:`; `ok` is False when the summarizer must step in.
    `vet` rejects an answer that is the prompt echoed and cuts a sentence to its short answer."""
    raw = _END.split(text or "")[0]
    start = marked(raw, "answer") or stated(raw)
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
    if _INVALID.search(answer.lower()):
        return Parsed(INVALID_QUESTION, True, True)
    vetted = vet(answer)
    if not vetted.answer:
        return Parsed("", False, False, f"the answer {answer!r} is no answer: {vetted.problem}")
    return Parsed(vetted.answer, False, True, vetted.problem)


def decide(samples: Sequence[str], vet: Vet = Vetted) -> tuple[Decision | None, Parsed | None]:
    """§2.8 steps 1-3; (None, parsed) means step 4: the summarizer."""
    for n, text in enumerate(samples):
        if not text.strip() or SAYS_IDK.search(text.lower()):
            return Decision(IDK, "idk_any_sample", f"sample {n + 1} said I don't know (or nothing)", n, True), None
    for n, text in enumerate(samples):
        low = text.strip().lower()
        if _INVALID.search(low) or low in ("none", "never"):
            return Decision(INVALID_QUESTION, "invalid_any_sample", f"sample {n + 1} called the question invalid",
                            n), None
    parsed = parse_reasoning(samples[0], vet) if samples else Parsed("", False, False, "no sample")
    if not parsed.ok:
        return None, parsed
    if parsed.false_premise:
        return Decision(INVALID_QUESTION, "premise_flag", "sample 1 flagged a false premise", 0), parsed
    if says_unknown(parsed.answer):
        return Decision(IDK, "idk_any_sample", f"sample 1's answer {parsed.answer!r} says it is not known", 0,
                        True), parsed
    return Decision(parsed.answer, "parsed", "sample 1 parsed cleanly", 0, confidence=0.5), parsed


def summary_answer(text: str, vet: Vet = Vetted) -> tuple[str, bool, str]:
    """The summarizer's post-check: (answer, refused, why — the refusal's reason, or how the answer was cut);
    its first line is the answer, and one that says the answer is unknown, is the prompt echoed or has 300+
    characters is none."""
    line = first_answer(text)
    low = line.lower()
    if not low or SAYS_IDK.search(low):
        return IDK, True, "it said I don't know (or nothing)"
    if _INVALID.search(low):
        return INVALID_QUESTION, False, ""
    answer = line.strip(" .\"'")
    if says_unknown(answer):
        return IDK, True, f"{answer!r} says the answer is not known"
    if len(answer) >= MAX_ANSWER_CHARS:
        return IDK, True, f"the summary is no short answer ({len(answer)} characters, limit {MAX_ANSWER_CHARS})"
    vetted = vet(answer)
    if not vetted.answer:
        return IDK, True, f"the summary {answer!r} is no answer: {vetted.problem}"
    return vetted.answer, False, vetted.problem


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
