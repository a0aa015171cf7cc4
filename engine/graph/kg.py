"""The pack's KG as a networkx multigraph, with entity linking and fact look-ups."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any, TypeVar

import networkx as nx

from engine.cache import Registry
from engine.graph.names import is_mention
from engine.knowledge.records import Pack, Triple
from engine.text import name_pattern

T = TypeVar("T")


_LITERAL = re.compile(r"[\d\s.,:/%+-]+")  # a number, year, date or amount, not a name


class KnowledgeGraph:
    """Directed multigraph: node = canonical entity name, edge key = relation, data = the triple."""

    def __init__(self, triples: Sequence[Triple], extra_entities: Iterable[str] = ()):
        self.graph = nx.MultiDiGraph()
        for t in triples:
            self.graph.add_edge(t.head, t.tail, key=f"{t.relation}|{t.time}", triple=t)
        self._extra = tuple(e for e in extra_entities if e.strip())
        self._derived: Registry[str, Any] = Registry()

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """A structure built once from this KG (a name index, a gazetteer) and shared by every run."""
        return self._derived.get(key, build)

    @classmethod
    def from_pack(cls, pack: Pack) -> KnowledgeGraph:
        names = [d.title for d in pack.documents] + [e for d in pack.documents for e in d.entities]
        return cls(pack.triples, names)

    @cached_property
    def entities(self) -> tuple[str, ...]:
        """Every known name: KG nodes plus document titles and tagged entities."""
        return tuple(dict.fromkeys([*self.graph.nodes, *self._extra]))

    @cached_property
    def relations(self) -> tuple[str, ...]:
        """Every relation name of the KG, in the order first seen."""
        return tuple(dict.fromkeys(d["triple"].relation for _, _, d in self.graph.edges(data=True)))

    @cached_property
    def entity_relations(self) -> tuple[str, ...]:
        """The relations that lead to things rather than values: most of their tails are not numbers or
        years ('doctoral_advisor', not 'year_of_birth' — 'X's birth' is no one to follow)."""
        literal: dict[str, list[bool]] = {}
        for _, tail, data in self.graph.edges(data=True):
            literal.setdefault(data["triple"].relation, []).append(bool(_LITERAL.fullmatch(str(tail))))
        return tuple(r for r in self.relations if sum(literal[r]) * 2 < len(literal[r]))

    @cached_property
    def _matcher(self) -> re.Pattern[str] | None:
        return name_pattern(self.entities)

    @cached_property
    def _canonical(self) -> dict[str, str]:
        return {e.lower(): e for e in self.entities}

    def find_entities(self, text: str) -> list[str]:
        """Known entity names in `text`, longest match first, in order of appearance; a function word or a
        one-word name inside a longer capitalised name is no mention (engine.graph.names, issue 27)."""
        if self._matcher is None:
            return []
        found = (self._canonical[m.group(0).lower()] for m in self._matcher.finditer(text)
                 if is_mention(text, m.start(), m.end()))
        return list(dict.fromkeys(found))

    def facts_about(self, entity: str, limit: int = 50) -> list[Triple]:
        """Triples with `entity` as head or tail, outgoing first."""
        if entity not in self.graph:
            return []
        out = [d["triple"] for _, _, d in self.graph.out_edges(entity, data=True)]
        inc = [d["triple"] for _, _, d in self.graph.in_edges(entity, data=True)]
        return (out + inc)[:limit]

    def relations_of(self, entity: str) -> list[str]:
        """Relations touching `entity`; incoming ones are written `~relation`."""
        if entity not in self.graph:
            return []
        out = {d["triple"].relation for _, _, d in self.graph.out_edges(entity, data=True)}
        inc = {"~" + d["triple"].relation for _, _, d in self.graph.in_edges(entity, data=True)}
        return sorted(out) + sorted(inc)

    def follow(self, entity: str, relation: str) -> list[str]:
        """Entities one `relation` step from `entity`; `~relation` walks backwards."""
        if entity not in self.graph:
            return []
        if relation.startswith("~"):
            name = relation[1:]
            edges = self.graph.in_edges(entity, data=True)
            return list(dict.fromkeys(u for u, _, d in edges if d["triple"].relation == name))
        edges = self.graph.out_edges(entity, data=True)
        return list(dict.fromkeys(v for _, v, d in edges if d["triple"].relation == relation))
