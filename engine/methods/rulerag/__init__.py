"""RuleRAG (Chen et al., 2024): rule-guided retrieval and reading, spec shared/methods/rulerag.md.

`method` (the run), `reader` (the rule-guided reader, LLM and offline twins), `finetune` (RuleRAG-FT's
retriever side: `train-retriever`), `generator_lora` (RuleRAG-FT's generator side: a LoRA adapter),
`prompts/` (the five-block reader prompt). Rule mining, matching and application are shared
machinery in `engine/rules/`.
"""

from engine.methods.rulerag.method import RuleRagMethod

__all__ = ["RuleRagMethod"]
