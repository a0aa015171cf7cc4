"""The pieces of the method's prompts for attention segments: each reference, table, KG fact and the question.

Every LLM call of the method passes segments (spec §6.8: attention per slot, chunk, table and
calculation line), so an attentive backend can say where the model looked; a piece is looked for only
inside the span its own template value was placed at, because demonstrations and rules above it may
quote similar text (engine.tools.llm_call.fill_with_segments).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Piece = tuple[str, str, str]  # (label, kind, text) as locate_segments takes them
_TABLE = re.compile(r"(?m)^### Table \d+:\n")


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
