"""Synthetic `collect` rows for the calibration tests: questions about a made-up town no pack names."""

from __future__ import annotations


def row(pack: str, i: int, question: str, answer: str, *, right: bool, raw: float = 0.5,
        evidence: tuple[str, ...] = (), method: str = "vanilla") -> dict:
    """One row as scripts/fit_calibration.py's `collect` writes it."""
    return {"pack": pack, "method": method, "question_id": f"{pack}-{i}", "question": question, "answer": answer,
            "raw": raw, "refused": False, "right": right, "em": float(right),
            "evidence": list(evidence or (f"The record of Plouzané says {answer}.",)), "facts": []}
