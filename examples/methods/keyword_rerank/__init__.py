"""Keyword re-rank, a method folder in the built-ins' shape: `method.py` (its Params and run); a method with
tools of its own adds `tools.py` (their Protocols), `llm.py` and `offline.py` (their twins) and `prompts/`."""

from .method import KeywordRerank  # importing the folder registers the method

__all__ = ["KeywordRerank"]
