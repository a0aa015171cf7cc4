"""The hybrid method's offline twins: the calculator over years in the evidence, the entity finder over the
pack's names, and the reasoner over the extractive reader; the attribute twin is the trained
`attributes.AttributeModel` itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.linking import EntityLinker
from engine.methods.hybrid.calculations import Calculations, evaluate
from engine.methods.hybrid.reasoner import Decision, References
from engine.text import YEAR_DIGITS
from engine.tools.base import IDK, QuestionClassifier, Reader, Reading, echoes_question
from engine.tools.offline_reader.sentences import content_stems
from engine.trace import Hit, Step

_YEAR = re.compile(rf"(?<![\d.])({YEAR_DIGITS})(?![\d.])")  # no digit or point beside it: not a decimal
_ASKS_SPAN = re.compile(r"\bhow\s+(?:many\s+(?:years|decades|centuries|months|days)|old|long)\b"
                        r"|\b(?:difference|older|younger)\b", re.IGNORECASE)


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


@dataclass(frozen=True)
class OfflineEntityFinder:
    linker: EntityLinker

    def find(self, question: str, query_time: str = "") -> tuple[tuple[str, ...], tuple[str, ...], tuple[Step, ...]]:
        links = self.linker.link(question)
        return tuple(link.entity for link in links), tuple(link.mention for link in links), ()


@dataclass(frozen=True)
class OfflineReasoner:
    """The KG answer, else the extractive reader's answer as it stands (issue 27): the reader refuses below
    its own cut-off and the run's calibrated `min_confidence` decides the rest. A second, higher raw floor
    here (0.45 until issue 27) refused answers vanilla gives from the same reader at the same score: on
    HotpotQA it lost 5 questions and gained none at min_confidence 0, 14 on four packs."""

    reader: Reader
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
            return Decision(IDK, "offline_reader", f"the best guess {reading.answer!r} only repeats a name the "
                            "question already gives: refusing rather than guessing", refused=True, steps=reading.steps)
        return Decision(reading.answer, "offline_reader", reading.rationale, confidence=reading.confidence,
                        citations=reading.citations, steps=reading.steps)
