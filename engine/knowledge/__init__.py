"""Knowledge packs: the folder format, loading with validation, chunking, ingestion, writing."""

from engine.knowledge.records import (
    QUESTION_TYPES,
    Document,
    Pack,
    PackInfo,
    Page,
    Question,
    Rule,
    Triple,
)

__all__ = ["QUESTION_TYPES", "Document", "Pack", "PackInfo", "Page", "Question", "Rule", "Triple"]
