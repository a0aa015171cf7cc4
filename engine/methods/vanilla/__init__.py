"""Vanilla RAG, the baseline: retrieve once, read once."""

from engine.methods.vanilla.method import VanillaMethod

__all__ = ["VanillaMethod"]
