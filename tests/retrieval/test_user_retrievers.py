"""Users' own LangChain retrievers: a file, an entry point's shape or `module:factory` becomes a `retriever=`
choice of every method, runs end to end and in eval, and a broken one is left out with its reason."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.documents import Document as LcDocument

from engine.app import runs
from engine.errors import RagscopeError, RetrieverError
from engine.methods.base import METHODS
from engine.params import build_params, param_specs
from engine.retrieval.suite import Retrieval
from engine.retrieval.user import as_ours, user_retrievers
from engine.runner import Workbench
from engine.settings import Settings
from engine.trace import Hit, RetrievalStep, Trace
from paths import MINI_PACK, ROOT

EXAMPLES = ROOT / "examples" / "retrievers"
QUESTION = "Where was Grace Hopper born?"


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose retrievers/ holds the README's two examples, as shipped."""
    home = tmp_path / "home"
    (home / "retrievers").mkdir(parents=True)
    for name in ("in_memory.py", "ensemble.py"):
        shutil.copy(EXAMPLES / name, home / "retrievers" / name)
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    return home


@pytest.fixture()
def workbench(home: Path, mini_pack) -> Workbench:
    return Workbench(mini_pack, Settings(home=home))


def write(home: Path, name: str, code: str) -> None:
    (home / "retrievers" / name).write_text(textwrap.dedent(code), encoding="utf-8")


def test_a_users_retriever_is_a_retriever_choice_of_every_method_that_has_one(home):
    having = [m for m in METHODS if any(s.name == "retriever" for s in param_specs(METHODS[m].Params))]
    assert {"vanilla", "rulerag", "r2ag", "tog2", "ras"} <= set(having)
    for method in having:
        spec = next(s for s in runs.method_info(method).params if s.name == "retriever")
        assert spec.choices == ("hybrid", "dense", "bm25", "dense-ft", "ensemble", "in_memory")
        assert spec.default == "hybrid"
        assert build_params(METHODS[method].Params, {"retriever": "in_memory"}).retriever == "in_memory"
        assert build_params(METHODS[method].Params, {"retriever": "hybrid"}).retriever == "hybrid"


def test_an_unknown_retriever_names_the_choices_and_module_factory(home):
    with pytest.raises(RagscopeError, match=r"unknown retriever 'nope'; known: hybrid, dense, bm25, dense-ft, "
                                            r"ensemble, in_memory, or module:factory"):
        build_params(METHODS["vanilla"].Params, {"retriever": "nope"})


def test_a_vector_store_retriever_runs_vanilla_end_to_end_with_no_made_up_score(workbench, mini_pack):
    trace = workbench.ask(QUESTION, "vanilla", {"retriever": "in_memory", "k": 3})
    step = next(s for s in trace.steps if isinstance(s, RetrievalStep))
    assert step.retriever == "in_memory" and len(step.hits) == 3
    assert [h.rank for h in step.hits] == [1, 2, 3]
    assert all(h.score is None and h.retriever == "in_memory" for h in step.hits)  # as_retriever() gives none
    chunks = {c.id: c for c in workbench.retrieval.chunks}
    assert all(h.chunk_id in chunks and h.doc_id == chunks[h.chunk_id].doc_id for h in step.hits)
    assert step.hits[0].doc_id == "m07"  # Grace Hopper's document, found by the MiniLM vectors
    assert trace.answer is not None and not trace.answer.refused and "New York" in trace.answer.text
    assert Trace.from_json(trace.to_json(), "t").steps == trace.steps  # a missing score saves and loads as None


def test_an_ensemble_of_a_vector_store_and_our_bm25_drops_the_inner_scores(workbench):
    hits = workbench.retrieval.search(QUESTION, k=4, retriever="ensemble")
    assert len(hits) == 4 and hits[0].doc_id == "m07"
    # BM25's own scores are not the fused list's: the hits say "no score" rather than show BM25's
    assert all(h.score is None and h.retriever == "ensemble" for h in hits)
    assert len({h.chunk_id for h in hits}) == 4


def test_a_factory_is_called_once_per_pack(home, workbench):
    write(home, "counted.py", """
        from langchain_core.vectorstores import InMemoryVectorStore
        CALLS = []

        def make_retriever(inputs):
            CALLS.append(inputs.pack.info.name)
            return InMemoryVectorStore.from_documents(inputs.documents()[:5], inputs.embeddings()).as_retriever()
    """)
    workbench.retrieval.search("a", retriever="counted")
    workbench.retrieval.search("b", k=2, retriever="counted")
    assert sys.modules["ragscope_user_retrievers.counted"].CALLS == [workbench.pack.info.name]


def test_module_factory_on_the_cli_evaluates(home, tmp_path, monkeypatch):
    from engine.cli import main

    (tmp_path / "my_stores.py").write_text((EXAMPLES / "in_memory.py").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    ref = "retriever=my_stores:make_retriever"
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,rulerag", "--limit", "2", "-p", ref,
                 "--out", str(out)]) == 0
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(traces) == 4 and all(t["params"]["retriever"] == "my_stores:make_retriever" for t in traces)
    retrieved = [s for t in traces for s in t["steps"] if s["kind"] == "retrieval"]
    assert retrieved and all(h["score"] is None for s in retrieved for h in s["hits"])


@pytest.mark.parametrize(("ref", "message"), [
    ("no_such_module_xyz:make", "retriever no_such_module_xyz:make: cannot import 'no_such_module_xyz'"),
    ("json:no_such_factory", "retriever json:no_such_factory: module 'json' has no 'no_such_factory'"),
    ("string:ascii_letters", "retriever string:ascii_letters: str is not callable"),
])
def test_a_bad_module_factory_is_refused_before_the_run_naming_it(home, ref, message):
    with pytest.raises(RetrieverError, match=message):
        build_params(METHODS["vanilla"].Params, {"retriever": ref})


def test_a_broken_file_is_left_out_with_its_reason_and_the_others_load(home):
    write(home, "broken.py", "import no_such_package_xyz\n")
    write(home, "empty.py", "X = 1\n")
    write(home, "hybrid.py", "def make_retriever(inputs): ...\n")
    loaded = user_retrievers(Settings(home=home))
    assert loaded.names == ("ensemble", "in_memory")
    problems = runs.plugin_problems()
    assert any("broken.py was not loaded: ModuleNotFoundError: No module named 'no_such_package_xyz'" in p
               for p in problems)
    assert any("empty.py was not loaded" in p and "defines no make_retriever(inputs)" in p for p in problems)
    assert any("hybrid.py was not loaded: the name 'hybrid' is taken" in p for p in problems)


@pytest.mark.parametrize(("code", "message"), [
    ("def make_retriever(inputs):\n    raise RuntimeError('no server at :6333')\n",
     r"retriever .*bad\.py failed to build: RuntimeError: no server at :6333"),
    ("def make_retriever(inputs):\n    return 'a retriever'\n",
     r"retriever .*bad\.py returned str, not a LangChain BaseRetriever"),
])
def test_a_factory_that_fails_is_a_retriever_error_naming_its_file(home, mini_pack, code, message):
    write(home, "bad.py", code)
    retrieval = Retrieval(mini_pack, Settings(home=home))
    with pytest.raises(RetrieverError, match=message):
        retrieval.search(QUESTION, retriever="bad")
    assert retrieval.search(QUESTION, k=2, retriever="bm25")  # the built-ins are untouched


def test_a_retriever_returning_no_documents_is_a_retriever_error(home, mini_pack):
    write(home, "strings.py", """
        from langchain_core.retrievers import BaseRetriever

        class Strings(BaseRetriever):
            def _get_relevant_documents(self, query, *, run_manager):
                return ["just text"]

        def make_retriever(inputs):
            return Strings()
    """)
    with pytest.raises(RetrieverError, match=r"strings\.py returned str, not a list of LangChain Documents"):
        Retrieval(mini_pack, Settings(home=home)).search(QUESTION, retriever="strings")


def test_a_failing_users_retriever_fails_the_run_as_an_error_step(home, workbench):
    write(home, "down.py", """
        from langchain_core.retrievers import BaseRetriever

        class Down(BaseRetriever):
            def _get_relevant_documents(self, query, *, run_manager):
                raise ConnectionError("qdrant at localhost:6333 refused")

        def make_retriever(inputs):
            return Down()
    """)
    trace = workbench.ask(QUESTION, "vanilla", {"retriever": "down"})
    failed = trace.steps[0].message
    assert "RetrieverError: retriever" in failed and "down.py failed" in failed and "localhost:6333" in failed
    assert trace.answer is not None and trace.answer.refused


def test_a_document_the_pack_does_not_know_keeps_its_metadata_and_its_own_score():
    doc = LcDocument(page_content="Quarterly revenue rose.", metadata={"source": "q3.pdf", "page": 4,
                                                                        "relevance_score": 0.91})
    ours = as_ours(doc, 2, "rerank", {})
    assert ours.metadata["title"] == "q3.pdf p. 4" and ours.metadata["doc_id"] == "q3.pdf"
    assert ours.metadata["score"] == 0.91 and ours.metadata["rank"] == 2
    assert ours.metadata["chunk_id"].startswith("lc-") and ours.id == ours.metadata["chunk_id"]
    bare = as_ours(LcDocument(page_content="x", metadata={"score": "high"}), 1, "r", {})
    assert bare.metadata["score"] is None  # not a number: no score, not a guess
    builtin = as_ours(LcDocument(page_content="x", metadata={"score": 3.2, "retriever": "bm25"}), 1, "r", {})
    assert builtin.metadata["score"] is None


def test_a_hit_with_no_score_shows_no_score():
    from streamlit.testing.v1 import AppTest

    from components.retrieval import shown_score

    assert shown_score(None) == "no score" and shown_score(0.25) == "score 0.2500"

    def page() -> None:
        from components.retrieval import render_retrieval
        from engine.trace import Hit, RetrievalStep

        render_retrieval(RetrievalStep(iteration=1, query="q", retriever="mine", hits=(
            Hit("d1", "d1#0", "T", "text", None, 1), Hit("d2", "d2#0", "U", "text", None, 2))), key="r")

    at = AppTest.from_function(page).run()
    assert not at.exception
    assert list(at.dataframe[0].value["score"]) == ["no score", "no score"]
    assert Hit("d", "c", "t", "x", None, 1).score is None


def test_an_entry_point_is_a_choice_named_after_it(home, tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    from engine.retrieval import user

    (tmp_path / "team_stores.py").write_text((EXAMPLES / "in_memory.py").read_text(encoding="utf-8"),
                                             encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [EntryPoint("team_store", "team_stores:make_retriever", user.ENTRY_POINT_GROUP),
              EntryPoint("in_memory", "team_stores:make_retriever", user.ENTRY_POINT_GROUP),
              EntryPoint("missing", "team_stores:nothing_here", user.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(user, "entry_points", lambda group: [p for p in points if p.group == group])
    loaded = user.load_from(home / "retrievers")
    assert loaded.names == ("ensemble", "in_memory", "team_store")
    assert [f.source for f in loaded.found][-1] == "entry point team_store = team_stores:make_retriever"
    assert [str(p) for p in loaded.problems] == [
        "Retriever entry point in_memory = team_stores:make_retriever was not loaded: the name 'in_memory' is "
        "taken; rename it (taken: hybrid, dense, bm25, dense-ft, ensemble, in_memory)",
        "Retriever entry point missing = team_stores:nothing_here was not loaded: AttributeError: module "
        "'team_stores' has no attribute 'nothing_here'"]


def test_a_users_retriever_sends_no_langsmith_trace_when_the_environment_asks(workbench, tracing_asked):
    assert workbench.retrieval.search(QUESTION, k=2, retriever="in_memory")
    assert tracing_asked == []
