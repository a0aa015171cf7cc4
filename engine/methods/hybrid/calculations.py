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
at the first sample that repeats an earlier one (llm.draw). Offline:
the question asks for a time span or an age, and the years next to the question's entities in the
evidence (table rows, chunk sentences, KG facts) form `later - earlier`. Decision on spec §8.7: every
result that passes goes to the reasoner, in sample order; numbers are printed with up to 12
significant digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import CalculationError
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.prompting import question_pieces, reference_pieces, table_pieces
from engine.tools.calculator import calculate
from engine.tools.llm_call import fill_with_segments
from engine.tools.prompts import PromptFolder, fill
from engine.trace import CalculationStep, Step

PROMPTS = PromptFolder.beside(__file__)

CALC_SETTINGS = GenerationSettings(max_new_tokens=50, temperature=1.0)
FORBIDDEN = ("input(", "print(")
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
