"""The numerical calculator (spec §2.4): expressions proposed, each run by the AST-whitelist calculator.

LLM: the rules in the system turn and again in the user turn after the top-k chunks and the tables
(prompts/calculator_system.txt, calculator.txt, calculator_rules.txt; no demonstrations, as in the
paper); several sampled expressions, each filtered as [C] does (duplicate, `input(`/`print(`, evaluation
error, trivial literal) — but evaluated by engine/tools/calculator.py, never `eval` (spec §7); a
sample that does not evaluate is also an `error` step quoting the raw output. Deliberate deviation:
rule 2 names what the safe calculator accepts (the paper allows any Python), so samples are not wasted
on code it would refuse. Deliberate deviations for small models (issue 23): the calculator is asked only
when the question wants a number or a comparison (`calculation_wanted`: its words, or a predicted
comparison, aggregation or post-processing type) — the paper leaves that to the model's empty reply,
which a small model never gives, so it answered "Where was Marie Curie born?" with five sentences;
an expression written inside a sentence ("so 1911 - 1903 = 8") is taken out of it; and sampling stops
at the first sample that repeats an earlier one (sampling.py). Offline:
the question asks for a time span or an age, and the years next to the question's entities in the
evidence (table rows, chunk sentences, KG facts) form `later - earlier`. Decision on spec §8.7: every
result that passes goes to the reasoner, in sample order; numbers are printed with up to 12
significant digits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import CalculationError
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.prompting import question_pieces, reference_pieces, table_pieces
from engine.methods.hybrid.sampling import draw
from engine.tools.llm_call import fill_with_segments
from engine.tools.calculator import calculate
from engine.tools.llm_call import error_step, shorten
from engine.tools.offline_reader.sentences import content_stems
from engine.tools.prompts import PromptFolder, fill
from engine.trace import CalculationStep, Step

PROMPTS = PromptFolder.beside(__file__)

CALC_SETTINGS = GenerationSettings(max_new_tokens=50, temperature=1.0)
FORBIDDEN = ("input(", "print(")
_YEAR = re.compile(r"(?<![\d.])(1[0-9]{3}|20[0-9]{2})(?![\d.])")
_ASKS_SPAN = re.compile(r"\bhow\s+(?:many\s+(?:years|decades|centuries|months|days)|old|long)\b"
                        r"|\b(?:difference|older|younger)\b", re.IGNORECASE)
_FENCE = re.compile(r"^```\w*|```$")
_NUMBER = r"\(*\s*\d[\d.]*\s*\)*"
_ARITHMETIC = re.compile(rf"{_NUMBER}(?:\s*(?:\*\*|//|[-+*/%])\s*{_NUMBER})+")  # digits joined by operators
_PROSE = re.compile(r"\b(?!(?:abs|round|min|max|sum|len|int|float)\b)[A-Za-z]{2,}")
_WANTS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|old|long|far|tall|high|big|large|deep|wide|heavy|often)\b"
    r"|\b(?:difference|differ|total|sum|combined|together|average|mean|percent(?:age)?|ratio|twice|times|exceed\w*)\b"
    r"|\b(?:older|oldest|younger|youngest|longer|longest|shorter|shortest|larger|largest|smaller|smallest|bigger"
    r"|biggest|higher|highest|lower|lowest|earlier|earliest|later|more|most(?!\s+likely)|fewer|fewest|less|least)\b"
    r"|\b\w+er\s+than\b|\bfirst\s*(?:[,?]|$)", re.IGNORECASE)
NUMERIC_TYPES = ("comparison", "aggregation", "post-processing")


@dataclass(frozen=True)
class Calculation:
    expression: str
    result: float | None
    status: str  # ok | dup | forbidden_token | eval_error | trivial | empty
    source: str
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        """The {"Expression", "Result"} reference of spec §2.4, as the reasoner sees it."""
        return f'{{"Expression": "{self.expression}", "Result": "{format_number(self.result)}"}}'

    def step(self, iteration: int) -> CalculationStep:
        return CalculationStep(iteration=iteration, title=self.source, expression=self.expression,
                               result=self.result, error=self.error, status=self.status, source=self.source)


@dataclass(frozen=True)
class Calculations:
    items: tuple[Calculation, ...]
    steps: tuple[Step, ...] = ()  # LLM calls

    @property
    def ok(self) -> tuple[Calculation, ...]:
        return tuple(c for c in self.items if c.ok)


def format_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:.12g}"


def evaluate(raw: str, source: str, seen: set[str]) -> Calculation:
    """One proposed expression through the [C] filters and the safe calculator."""
    expression = clean_expression(raw)
    if not expression:
        return Calculation("", None, "empty", source)
    if expression in seen:
        return Calculation(expression, None, "dup", source)
    seen.add(expression)
    if any(token in expression for token in FORBIDDEN):
        return Calculation(expression, None, "forbidden_token", source, "asks for input or prints")
    try:
        result = calculate(expression)
    except CalculationError as exc:  # the calculator's only error: overflow, a hang or nesting included
        return Calculation(expression, None, "eval_error", source, str(exc))
    if format_number(result) == expression.strip() or expression.strip() == str(result):
        return Calculation(expression, result, "trivial", source, "a bare number is no calculation")
    return Calculation(expression, result, "ok", source)


def clean_expression(raw: str) -> str:
    """The first non-empty line without code fences, quotes or an 'Expression:' label; when that line is
    prose, the longest arithmetic in the reply ("The difference is 1911 - 1903 = 8." → "1911 - 1903")."""
    for line in str(raw or "").strip().splitlines():
        line = _FENCE.sub("", line.strip()).strip().strip("`").strip()
        line = re.sub(r"^(?:python\s*)?(?:expression\s*[:=]\s*)?", "", line, flags=re.IGNORECASE).strip()
        if line:
            found = _ARITHMETIC.findall(raw) if _PROSE.search(line) else []
            return max(found, key=len).strip() if found else line
    return ""


def calculation_wanted(question: str, question_type: str = "") -> str:
    """Why the calculator is worth asking ('' when it is not): the question wants a number or a comparison."""
    if question_type in NUMERIC_TYPES:
        return f"the question was classified as {question_type}"
    words = _WANTS_NUMBER.search(question)
    return f"the question asks {words.group(0).strip(' ,?')!r}" if words else ""


# ---- LLM ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlmCalculator:
    chat: ChatModel
    samples: int = 5
    settings: GenerationSettings = CALC_SETTINGS

    def propose(self, question: str, references: str, tables: str, facts: Sequence[str] = ()) -> Calculations:
        messages, segments = calculator_messages(question, references, tables)
        steps: tuple[Step, ...] = ()
        items, seen = [], set()
        for n, reply in enumerate(draw(self.chat, messages, self.settings, "calculator", self.samples, segments),
                                  start=1):
            steps += reply.steps
            item = evaluate(reply.text, f"LLM sample {n}", seen)
            items.append(item)
            if item.status == "eval_error" and not reply.failed:
                steps += (error_step(f"calculator {n}", f"sample {n} is no expression the calculator runs "
                                     f"({item.error}); got {shorten(reply.text)}; it is left out"),)
        return Calculations(tuple(items), steps)


def calculator_messages(question: str, references: str, tables: str,
                        ) -> tuple[tuple[Message, Message], tuple[PromptSegment, ...]]:
    """System rules, then the user turn: top-k chunks, tables, the rules again, the question (spec §2.4)."""
    rules = PROMPTS.load("calculator_rules").strip()
    user, segments = fill_with_segments(
        PROMPTS.load("calculator"),
        {"references": reference_pieces(references.splitlines()), "tables": table_pieces(tables),
         "question": question_pieces(question)},
        references=references or "(none)", tables=tables or "(none)", rules=rules, question=question)
    return (Message("system", fill(PROMPTS.load("calculator_system"), rules=rules)), Message("user", user)), segments


# ---- offline -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfflineCalculator:
    """Years beside the question's entities in the evidence form `later - earlier` (spec §2.4 offline)."""

    anchors: tuple[str, ...]

    def propose(self, question: str, references: str, tables: str, facts: Sequence[str] = ()) -> Calculations:
        if not _ASKS_SPAN.search(question):
            return Calculations(())
        units = [u for u in (*facts, *references.splitlines(), *tables.splitlines()) if _YEAR.search(u)]
        wanted = content_stems(question) - content_stems(" ".join(self.anchors))
        years = self._years(units, wanted)
        if len(years) < 2:
            return Calculations(())
        (a, _), (b, _) = years[:2]
        # a calculation that fails is kept: it becomes a step with its error, not a silent gap (issue 15)
        return Calculations((evaluate(f"{max(a, b)} - {min(a, b)}", "years from the evidence", set()),))

    def _years(self, units: Sequence[str], wanted: frozenset[str]) -> list[tuple[int, str]]:
        """The best-fitting year per anchor (two anchors), or the two best years of one anchor."""
        per_anchor: list[list[tuple[float, int, str]]] = []
        for anchor in self.anchors[:2]:
            scored = []
            for unit in units:
                if anchor.lower() not in unit.lower():
                    continue
                fit = len(wanted & content_stems(unit))
                scored += [(fit, int(y), unit) for y in dict.fromkeys(_YEAR.findall(unit))]
            per_anchor.append(sorted(scored, key=lambda s: -s[0]))
        if len(per_anchor) == 2 and per_anchor[0] and per_anchor[1]:
            first = per_anchor[0][0]
            second = next((s for s in per_anchor[1] if s[1] != first[1]), None)
            return [(first[1], first[2]), (second[1], second[2])] if second else []
        by_year: dict[int, tuple[int, str]] = {}
        for _, year, unit in per_anchor[0] if per_anchor else []:  # best fit first
            by_year.setdefault(year, (year, unit))
        return list(by_year.values())[:2]
