"""LLM-shaped skills used inside methods, each with an LLM and an offline implementation (DESIGN §3)."""
