"""The hybrid RAG method's modules (CRAG KDD Cup 2024, spec shared/methods/hybrid_rag.md), one job each.

`method` holds the run (and which twins of the tools it gets); `tools` the tool interfaces; `llm` and
`offline` their twins; `prompts/` the paper's prompts.

The stages, each with its spec section's prompt and parser: `pages` (web pages → chunks and tables, top-k
ranking), `attributes` (question type and dynamism), `policy` (the dynamic / false-premise gate),
`calculations` (expressions through the safe calculator), `knowledge` (the closed-book knowledge
extractor), `kg_module` (entity look-ups in the pack KG), `premise` (presupposition check against the KG),
`reasoner` (reason or refuse, and its parser), `prompting` (filled prompts with the attention segments every
LLM call passes).
"""

from engine.methods.hybrid.method import HybridMethod

__all__ = ["HybridMethod"]
