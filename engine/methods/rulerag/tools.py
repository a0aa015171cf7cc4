"""The rule-guided reader RuleRAG needs ("RG-generator", spec §2 Step N+1): its interface and its reading.

Both twins name the rule that produced the answer and its path of entities: `LlmRuleReader` (`llm.py`)
attributes it symbolically (the first matched rule whose KG path from the question's entity ends at the
answer, spec §6 "symbolic attribution"), `OfflineRuleReader` (`offline.py`) applies the rules itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.rules.matching import ScoredRule
from engine.tools.base import Reading
from engine.trace import Hit


@dataclass(frozen=True)
class RuleReading:
    """A reading plus the rule the answer came from ('' when none did) and its path of entities."""

    reading: Reading
    rule_id: str = ""
    path: tuple[str, ...] = ()


class RuleReader(Protocol):
    """Answer from the evidence and the matched rules, naming the rule the answer came from."""

    def read(self, question: str, evidence: Sequence[Hit], rules: Sequence[ScoredRule]) -> RuleReading: ...
