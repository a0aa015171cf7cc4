"""Filled prompts with their attention segments: where each reference, table, KG fact and the question sit.

Every LLM call of the method passes segments (spec §6.8: attention per slot, chunk, table and
calculation line), so an attentive backend can say where the model looked; a piece is looked for only
inside the span its own template value was placed at, because demonstrations and rules above it may
quote similar text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from engine.llm.chat import PromptSegment
from engine.tools.llm_call import locate_segments
from engine.tools.prompts import fill_spans

Piece = tuple[str, str, str]  # (label, kind, text) as locate_segments takes them
_TABLE = re.compile(r"(?m)^### Table \d+:\n")


def filled(template: str, pieces: Mapping[str, Sequence[Piece]], **values: object,
           ) -> tuple[str, tuple[PromptSegment, ...]]:
    """The filled template and the segments of `pieces[name]`, each found inside the value of `name`."""
    prompt, spans = fill_spans(template, **values)
    segments: list[PromptSegment] = []
    for name, value_pieces in pieces.items():
        if name not in spans:
            continue
        start, end = spans[name]
        segments += [replace(s, start=s.start + start, end=s.end + start)
                     for s in locate_segments(prompt[start:end], value_pieces)]
    return prompt, tuple(sorted(segments, key=lambda s: s.start))


def question_pieces(question: str) -> list[Piece]:
    return [("question", "question", question)]


def reference_pieces(lines: Sequence[str]) -> list[Piece]:
    """One 'reference i' per retrieved chunk, in prompt order."""
    return [(f"reference {n}", "document", line) for n, line in enumerate((x for x in lines if x.strip()), start=1)]


def table_pieces(block: str) -> list[Piece]:
    """One 'table i' per '### Table i:' entry of the table block (its Markdown, page name included)."""
    bodies = [b for b in _TABLE.split(block or "") if b.strip()]
    return [(f"table {n}", "table", body.strip()) for n, body in enumerate(bodies, start=1)]


def kg_pieces(block: str) -> list[Piece]:
    """One 'kg fact i' per line of the KG block (the premise check and KG answer lines included)."""
    lines = [line for line in (block or "").splitlines() if line.strip()]
    return [(f"kg fact {n}", "triple", line) for n, line in enumerate(lines, start=1)]


def calculation_pieces(lines: Sequence[str]) -> list[Piece]:
    return [(f"calculation {n}", "calculation", line) for n, line in enumerate(lines, start=1)]
