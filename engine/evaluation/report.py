"""Plain-text metric tables for the terminal: one table per method, a row per question type. A metrics.json
written before a column existed shows it as '–'."""

from __future__ import annotations

from typing import Any

# the retrieval block reads recall, then the rank-aware MAP, MRR and nDCG (engine.evaluation.metrics)
COLUMNS = ("n", "failed_runs", "em", "f1", "acc", "recall@5", "recall@10", "recall@all", "map", "mrr", "ndcg@5",
           "ndcg@10", "evidence_len", "crag_score", "ece", "auroc", "rounds", "graph_triples", "latency_ms_median",
           "latency_ms_p90")
HEADERS = {"failed_runs": "failed"}  # runs whose answer rests on a failed backend (engine.evaluation.runner)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def format_tables(report: dict[str, dict[str, Any]]) -> str:
    blocks = []
    for method, parts in report.items():
        rows = [("overall", parts["overall"])] + list(parts["by_type"].items())
        header = ("type", *(HEADERS.get(c, c) for c in COLUMNS))
        table = [header] + [(name, *(_cell(m.get(c)) for c in COLUMNS)) for name, m in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
                 for row in table]
        blocks.append(f"== {method} ==\n" + "\n".join(lines))
    return "\n\n".join(blocks)
