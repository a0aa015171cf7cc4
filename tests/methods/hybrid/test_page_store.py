"""Page chunk vectors are embedded once and kept in Chroma (issue 16): a new process encodes none of them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.cache import Registry
from engine.knowledge.records import Document, Pack, PackInfo, Page, Question
from engine.methods.hybrid import page_store
from engine.methods.hybrid.pages import page_parts
from engine.runner import Workbench
from engine.settings import Settings
from engine.trace import ErrorStep, RetrievalStep, Trace

QUESTION = Question("q1", "How long is the Danube?", ("2850 km",), "numeric")
TABLE = ("<table><tr><th>River</th><th>Length (km)</th></tr><tr><td>Danube</td><td>2850</td></tr>"
         "<tr><td>Rhine</td><td>1230</td></tr></table>")


def html(title: str, text: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1><p>{text}</p>{TABLE}</main>"
            "</body></html>")


DANUBE = Page("danube", "https://x/danube", "Danube", html("Danube", (
    "The Danube is the second-longest river in Europe. It flows through ten countries. Its source is in the "
    "Black Forest. It ends in the Black Sea. It is about 2,850 kilometres long.")), ("q1",))
RHINE = Page("rhine", "https://x/rhine", "Rhine", html("Rhine", (
    "The Rhine rises in the Swiss Alps. It flows north through Germany. It reaches the North Sea in the "
    "Netherlands. It is about 1,230 kilometres long.")))
RIVERS = Pack(PackInfo("rivers"), (Document("d1", "Rivers", "Rivers of Europe flow into several seas."),),
              questions=(QUESTION,), pages=(DANUBE, RHINE))


def page_texts(*pages: Page) -> set[str]:
    parts = [page_parts(p) for p in pages]
    return {c.text for p in parts for c in p.chunks} | {t.preview for p in parts for t in p.tables}


@pytest.fixture()
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the shared encoder is asked to embed, with the page store registry of a fresh process."""
    from engine.retrieval.embedder import load_embedder

    embedder, seen = load_embedder(), []
    real = embedder.encode
    monkeypatch.setattr(embedder, "encode", lambda texts: seen.extend(texts) or real(texts))
    monkeypatch.setattr(page_store, "_OPEN", Registry())
    return seen


def new_process(monkeypatch: pytest.MonkeyPatch, seen: list[str]) -> None:
    """What a new process starts with: no page vectors in memory, nothing encoded yet."""
    monkeypatch.setattr(page_store, "_OPEN", Registry())
    seen.clear()


def ask(pack: Pack, settings: Settings) -> Trace:
    return Workbench(pack, settings).ask(QUESTION.question, "hybrid", {"docs": 0}, question_id="q1")


def ranking(trace: Trace) -> list[tuple[str, float]]:
    step = next(s for s in trace.steps if isinstance(s, RetrievalStep))
    return [(h.chunk_id, h.score) for h in step.hits]


def test_a_new_process_reads_the_page_vectors_back_and_encodes_none(tmp_path, monkeypatch, encoded) -> None:
    settings = Settings(home=tmp_path)
    first = ask(RIVERS, settings)
    assert page_texts(RHINE, DANUBE) <= set(encoded)  # the shared page belongs to the question too
    new_process(monkeypatch, encoded)
    second = ask(RIVERS, settings)
    assert not set(encoded) & page_texts(RHINE, DANUBE)
    assert ranking(second) == ranking(first) and not any(isinstance(s, ErrorStep) for s in second.steps)


def test_a_changed_page_re_embeds_only_its_own_changed_chunks(tmp_path, monkeypatch, encoded) -> None:
    settings = Settings(home=tmp_path)
    ask(RIVERS, settings)
    rewritten = replace(RHINE, html=html("Rhine",
                                         "The Rhine is about 1,230 kilometres long. It ends in the North Sea."))
    new_process(monkeypatch, encoded)
    ask(replace(RIVERS, pages=(DANUBE, rewritten)), settings)
    assert set(encoded) & page_texts(DANUBE, rewritten) == page_texts(rewritten) - page_texts(RHINE)
    assert {c.text for c in page_parts(rewritten).chunks} <= set(encoded)  # its table is unchanged: not again


def test_an_unreadable_store_degrades_to_encoding_and_says_so(tmp_path, monkeypatch, encoded) -> None:
    healthy = ask(RIVERS, Settings(home=tmp_path / "healthy"))
    damaged = tmp_path / "damaged"
    (damaged / "chroma").mkdir(parents=True)
    (damaged / "chroma" / "chroma.sqlite3").write_bytes(b"not a database" * 1000)
    new_process(monkeypatch, encoded)
    trace = ask(RIVERS, Settings(home=damaged))
    (error,) = [s for s in trace.steps if isinstance(s, ErrorStep)]
    assert error.recoverable and "could not be opened" in error.message and "encoding instead" in error.message
    assert page_texts(RHINE, DANUBE) <= set(encoded) and ranking(trace) == ranking(healthy)
    assert trace.answer is not None
