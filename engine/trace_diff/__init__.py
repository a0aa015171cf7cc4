"""What changed between two saved runs: settings, steps aligned by round and kind, chunks, graph, answer (issue 28).

Researchers rerun a question with another method, parameter, model or pack version and ask what moved. Steps are
aligned without guessing at meaning: the n-th step of a kind in a round of A is paired with the n-th step of that
kind in the same round of B. Timings are shown but never counted as a difference — two runs of one setting differ
in them every time. `format_diff` writes the terminal text of `python -m engine diff`, `to_dict` its `--json`.
"""

from engine.trace_diff.diff import answer_side, diff_traces
from engine.trace_diff.records import (
    MISSING,
    AnswerSide,
    ChunkRow,
    FieldDiff,
    GraphDiff,
    GraphEdge,
    GraphNode,
    RoundGraph,
    StepPair,
    TraceDiff,
)
from engine.trace_diff.steps import align_steps
from engine.trace_diff.text import format_diff

__all__ = ["MISSING", "AnswerSide", "ChunkRow", "FieldDiff", "GraphDiff", "GraphEdge", "GraphNode", "RoundGraph",
           "StepPair", "TraceDiff", "align_steps", "answer_side", "diff_traces", "format_diff"]
