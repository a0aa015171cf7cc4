"""The offline reader's records: an evidence sentence, a candidate found in it, a candidate's tally."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sentence:
    """One evidence sentence (or rendered KG fact) and the hit it came from."""

    text: str
    doc_id: str  # "" for KG facts: they have no document to cite
    title: str
    position: int  # order of the hit in the evidence list: a weak relevance prior
    score: float = 0.0
    tokens: tuple[tuple[int, int], ...] = ()  # (start, end) character offsets of words
    lowered: tuple[str, ...] = ()
    clauses: tuple[int, ...] = ()  # per token: how many ',' or ';' come before it

    def word(self, i: int) -> str:
        start, end = self.tokens[i]
        return self.text[start:end]

    def gap(self, i: int, j: int) -> str:
        """The text between the end of token i and the start of token j."""
        return self.text[self.tokens[i][1]: self.tokens[j][0]]


@dataclass(frozen=True)
class Occurrence:
    """A candidate answer found at token `index` of a sentence, with its type-fit weight."""

    key: str  # normalised form that occurrences aggregate under
    surface: str  # the text as written, the answer's natural form
    index: int
    end: int
    weight: float = 1.0
    value: float | None = None  # numeric value for years and numbers


@dataclass(frozen=True)
class Tally:
    """Aggregated evidence for one candidate answer."""

    key: str
    surface: str
    total: float
    best_sentence: float
    supports: tuple[tuple[float, Sentence], ...] = field(default=(), compare=False)
