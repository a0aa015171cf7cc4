"""A trace's query-specific graph, read from the trace alone: the fold of its graph deltas as of a round (`fold`),
and that graph exported as GraphML or JSON (`export`).

Pure functions of a saved trace, like the trace's own properties: the UI's components may import this package
(tests/test_ui_imports.py), as they import engine.trace, where everything behind engine/app stays out of reach.
"""

from engine.trace_graph.export import file_name, graph_bytes, rounds_of
from engine.trace_graph.fold import (
    EdgeKey,
    GraphView,
    Skeleton,
    ViewEdge,
    ViewNode,
    edge_key,
    graph_at,
    graph_deltas,
    skeleton_of,
)

__all__ = ["EdgeKey", "GraphView", "Skeleton", "ViewEdge", "ViewNode", "edge_key", "file_name", "graph_at",
           "graph_bytes", "graph_deltas", "rounds_of", "skeleton_of"]
