"""RuleRAG (Chen et al., 2024): rule-guided retrieval and reading, spec shared/methods/rulerag.md.

`method` (the run, and which twin of the rule reader it gets), `tools` (the rule-guided reader's
interface), `llm` and `offline` (its twins), `training` (RuleRAG-FT: the query encoder for
`train-retriever` and the generator's LoRA adapter), `prompts/` (the five-block reader prompt). Rule
mining, matching and application are shared machinery in `engine/rules/`.
"""

from engine.methods.rulerag.method import RuleRagMethod

__all__ = ["RuleRagMethod"]
