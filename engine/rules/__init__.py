"""Logical rules over the KG: statistics, mining and matching (RuleRAG)."""
