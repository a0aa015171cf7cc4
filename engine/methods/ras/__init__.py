"""RAS (Jiang et al., 2025): retrieval-and-structuring, spec shared/methods/ras.md.

`method` (the run, and which twins of the tools it gets), `tools` (control tokens, records and the three
interfaces), `llm` (the prompted planner, text-to-triples and answerer), `offline` (offline planner and
answerer), `extractor` (offline text-to-triples), `query_graph` (the evolving query-specific KG), `prompts/`.
"""

from engine.methods.ras.method import RasMethod

__all__ = ["RasMethod"]
