"""A hit without a score (a user's LangChain retriever, issue 25) goes through the text view, RuleRAG's merge, the
OpenInference export and `ask` without a made-up number."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.export.openinference import _documents
from engine.methods.rulerag.method import merge_hits
from engine.textview import format_step
from engine.trace import Hit, RetrievalStep
from paths import MINI_PACK, ROOT


def _hit(chunk: str, rank: int, score: float | None = None) -> Hit:
    return Hit(chunk.split("#")[0], chunk, "T", "text", score, rank)


def test_the_text_view_says_no_score():
    step = RetrievalStep(iteration=1, query="q", retriever="mine", hits=(_hit("d1#0", 1), _hit("d2#0", 2, 0.5)))
    lines = format_step(step).splitlines()
    assert " 1. no score  d1#0  T" in lines[2] and " 2.   0.500  d2#0  T" in lines[3]


def test_rulerag_merges_unscored_hits_by_rank_after_scored_ones():
    class Rule:
        def __init__(self, rule_id: str):
            self.rule = type("R", (), {"id": rule_id})()

    merged = merge_hits([(Rule("r1"), (_hit("a#0", 1), _hit("b#0", 2))),
                         (Rule("r2"), (_hit("b#0", 1), _hit("c#0", 2), _hit("d#0", 3, 0.1)))], k=4)
    assert [h.chunk_id for h in merged] == ["d#0", "a#0", "b#0", "c#0"]
    assert [h.score for h in merged] == [0.1, None, None, None]
    assert merged[2].provenance == "rule r1, rank 2; rule r2, rank 1"


def test_the_openinference_export_leaves_a_missing_score_out():
    attributes = _documents([("c1", "text", None, {}), ("c2", "text", 0.5, {})])
    assert "retrieval.documents.0.document.score" not in attributes
    assert attributes["retrieval.documents.1.document.score"] == 0.5


def test_ask_prints_a_users_retriever_with_no_score(tmp_path: Path, monkeypatch, capsys):
    from engine.cli import main

    home = tmp_path / "home"
    (home / "retrievers").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "retrievers" / "in_memory.py", home / "retrievers")
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "-p", "retriever=in_memory",
                 "Where was Grace Hopper born?"]) == 0
    out = capsys.readouterr().out
    assert "[1] retrieval" in out and " 1. no score  " in out
