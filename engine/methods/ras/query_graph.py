"""RAS's evolving query-specific KG (spec §2.5): triples from each round merged into one graph.

[decide] spec §2.5/§8: unlike the released code (one subgraph per round, exact strings only), nodes are
merged across rounds after normalisation, in three passes: case/space/punctuation folding, the pack's
aliases (a KG name or alias matched as the whole string), then MiniLM cosine >= `threshold` to a node
already in the graph. A triple seen again is kept once; every triple carries its provenance (round,
sub-query, chunk); RAS never extracts a chunk twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

EMBED_MERGE = 0.9
_FOLD = re.compile(r"[^\w]+")


def fold(name: str) -> str:
    """Case, space and punctuation folded key; a leading 'the' and a trailing possessive dropped."""
    text = re.sub(r"['’]s$", "", name.strip())
    text = re.sub(r"^the\s+", "", text, flags=re.IGNORECASE)
    return _FOLD.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class GraphTriple:
    head: str
    relation: str
    tail: str
    round: int
    subquery: str = ""
    chunk_id: str = ""
    doc_id: str = ""

    def render(self) -> str:
        return f"(S> {self.head}| P> {self.relation}| O> {self.tail})"


@dataclass(frozen=True)
class Delta:
    new_nodes: tuple[str, ...]
    new_triples: tuple[GraphTriple, ...]
    merged: tuple[tuple[str, str, str], ...]  # (written, canonical, how)


@dataclass
class QueryGraph:
    """Nodes keyed by canonical name; `alias_of` maps a written name to a pack canonical name or None."""

    alias_of: Callable[[str], str | None] = lambda _name: None
    encode: Callable[[list[str]], np.ndarray] | None = None
    threshold: float = EMBED_MERGE
    nodes: dict[str, str] = field(default_factory=dict)  # fold key → canonical name
    triples: list[GraphTriple] = field(default_factory=list)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)  # node name → vector (merge targets)
    _encoded: dict[str, np.ndarray] = field(default_factory=dict)  # every name seen → vector

    def _vector(self, name: str) -> np.ndarray:
        if name not in self._encoded:
            self._encode_all([name])
        return self._encoded[name]

    def _encode_all(self, names: Sequence[str]) -> None:
        """One encoder call for a round's names: one call per name cost ~0.1 s each on a busy CPU."""
        missing = [n for n in dict.fromkeys(names) if n not in self._encoded]
        if missing and self.encode is not None:
            self._encoded.update(zip(missing, self.encode(missing)))

    def canonical(self, name: str) -> tuple[str, str]:
        """(canonical name, how it was found: new | case | alias | embedding)."""
        key = fold(name)
        if key in self.nodes:
            return self.nodes[key], "case" if self.nodes[key] != name else "same"
        pack = self.alias_of(name)
        if pack:
            existing = self.nodes.get(fold(pack))
            return (existing or pack), "alias"
        if self.encode is not None and self._vectors:
            vec = self._vector(name)
            names = list(self._vectors)
            sims = np.stack([self._vectors[n] for n in names]) @ vec
            best = int(np.argmax(sims))
            if float(sims[best]) >= self.threshold:
                return names[best], "embedding"
        return name.strip(), "new"

    def add(self, triples: Sequence[GraphTriple]) -> Delta:
        new_nodes: list[str] = []
        added: list[GraphTriple] = []
        merged: list[tuple[str, str, str]] = []
        present = {(t.head, t.relation.lower(), t.tail) for t in self.triples}
        if self.encode is not None:
            self._encode_all([n for t in triples for name in (t.head, t.tail) for n in (name, name.strip())])
        for t in triples:
            ends = []
            for name in (t.head, t.tail):
                canon, how = self.canonical(name)
                if how not in ("new", "same"):
                    merged.append((name, canon, how))
                if fold(canon) not in self.nodes:
                    self.nodes[fold(canon)] = canon
                    new_nodes.append(canon)
                    if self.encode is not None:
                        self._vectors[canon] = self._vector(canon)
                self.nodes.setdefault(fold(name), canon)
                ends.append(canon)
            key = (ends[0], t.relation.lower(), ends[1])
            if ends[0] == ends[1] or key in present:
                continue
            present.add(key)
            g = GraphTriple(ends[0], t.relation, ends[1], t.round, t.subquery, t.chunk_id, t.doc_id)
            self.triples.append(g)
            added.append(g)
        return Delta(tuple(new_nodes), tuple(added), tuple(dict.fromkeys(merged)))
