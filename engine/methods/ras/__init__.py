"""RAS (Jiang et al., 2025): retrieval-and-structuring, spec shared/methods/ras.md.

`method` (the run), `tools` (the bundle of the three tools in LLM or offline form), `base` (records,
interfaces), `llm` (the prompted planner, text-to-triples and answerer), `extractor` (offline
text-to-triples), `offline` (offline planner and answerer), `query_graph` (the evolving query-specific
KG), `prompts/`.
"""

from engine.methods.ras.method import RasMethod

__all__ = ["RasMethod"]
