"""An entity's one-hop neighbourhood in the pack KG, as table rows and as a graph_delta step to draw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Triple
from engine.trace import Edge, GraphDeltaStep, Node


def entity_choices(kg: KnowledgeGraph) -> list[str]:
    """Entities that have at least one fact, alphabetically (the selectbox filters as you type)."""
    return sorted(kg.graph.nodes, key=str.casefold)


def hub_entity(kg: KnowledgeGraph) -> str | None:
    """A starting point that shows something on first open: the entity with the most kinds of relation.

    Kinds first, then degree: a class node such as `physics` has the most facts, but they are all one
    relation and draw as a star; a person with birthplace, advisor, employer and prize reads better.
    """
    if kg.graph.number_of_nodes() == 0:
        return None
    # Ties broken by name so the default does not depend on triple order.
    return min(kg.graph.nodes, key=lambda n: (-len(kg.relations_of(n)), -kg.graph.degree(n), n.casefold()))


def fact_rows(facts: Sequence[Triple]) -> list[dict[str, Any]]:
    return [{"head": t.head, "relation": t.relation, "tail": t.tail, "time": t.time} for t in facts]


def neighbourhood_step(entity: str, facts: Sequence[Triple]) -> GraphDeltaStep:
    """Nodes = the entity and every neighbour, edges = the facts, focus = the entity."""
    names = list(dict.fromkeys([entity, *(n for t in facts for n in (t.head, t.tail))]))
    edges = tuple(dict.fromkeys(
        # A timed fact keeps its time on the edge label: "born_in (1815)".
        Edge(source=t.head, relation=f"{t.relation} ({t.time})" if t.time else t.relation, target=t.tail)
        for t in facts
    ))
    return GraphDeltaStep(
        iteration=0, title=f"Around {entity}",
        added_nodes=tuple(Node(id=n, label=n) for n in names), added_edges=edges, focus=(entity,),
    )
