"""Shared fixtures: an isolated data folder, the packs, and one warm workbench per pack."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from paths import DEMO_PACK, MINI_PACK, ROOT
from plugin_home import plugin_home  # noqa: F401 — a fixture, shared by the method and page plugin tests

# Before any engine import: tests never touch the network or the user's ~/.ragscope.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
# Until a test asks for `ragscope_home`: a module that lists methods at collection time must not load
# the user's own methods from ~/.ragscope/methods (engine.methods.plugins).
os.environ["RAGSCOPE_HOME"] = tempfile.mkdtemp(prefix="ragscope-tests-")
# One torch/BLAS thread per process: the suite's models are tiny, and on a loaded machine the default
# (a thread per core, spinning) slowed torch tests 20-40× (the R2AG training test: 5 s → 215 s).
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# A real small instruct model for the `llm` tests: SmolLM2-135M-Instruct's GGUF file, which `make test`
# fetches first (`make model`). Converted once and kept beside the file, so later sessions load it in a
# second (engine/llm/gguf.py).
REAL_GGUF = Path(os.environ.get("RAGSCOPE_TEST_GGUF") or ROOT / ".venv" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")
os.environ.setdefault("RAGSCOPE_MODEL_CACHE", str(REAL_GGUF.parent / "converted"))


@pytest.fixture(scope="session")
def ragscope_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("ragscope_home")
    os.environ["RAGSCOPE_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def settings(ragscope_home: Path):
    from engine.settings import Settings

    return Settings(home=ragscope_home)


@pytest.fixture(scope="session")
def mini_pack():
    from engine.knowledge.loader import load_pack

    return load_pack(MINI_PACK)


@pytest.fixture(scope="session")
def demo_pack():
    from engine.knowledge.loader import load_pack

    return load_pack(DEMO_PACK)


@pytest.fixture(scope="session")
def mini_workbench(mini_pack, settings):
    from engine.runner import Workbench

    return Workbench(mini_pack, settings)


@pytest.fixture(scope="session")
def demo_workbench(demo_pack, settings):
    from engine.runner import Workbench

    return Workbench(demo_pack, settings)


@pytest.fixture(scope="session")
def real_gguf() -> Path:
    """The real model's file; skipped without it on a developer's machine, a failure under CI."""
    if not REAL_GGUF.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{REAL_GGUF} is missing: `make model` should have fetched it before the tests")
        pytest.skip(f"no real model at {REAL_GGUF}; run `make model`")
    return REAL_GGUF


@pytest.fixture(scope="module")
def real_workbench(demo_pack, settings, real_gguf):
    """A demo-pack Workbench on the real model through `--backend hf`; the process's one HF model is
    unloaded afterwards so later tests (the Models page's "not loaded" state) start without it."""
    import torch

    from engine.llm.hf import unload_hf_model
    from engine.runner import Workbench

    workbench = Workbench(demo_pack, settings, backend="hf", backend_options={"model": str(real_gguf), "device": "cpu"})
    workbench.retrieval.ensure_index()
    before = torch.get_num_threads()
    torch.set_num_threads(min(2, os.cpu_count() or 1))  # the only work running meanwhile: use both cores
    yield workbench
    torch.set_num_threads(before)
    unload_hf_model()


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama folder with a chat template (built once per test session)."""
    from tiny_model import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture()
def open_app(ragscope_home):
    """`open_app(page=None, timeout=120)`: an AppTest of app.py on the mini pack, on `page` if given.

    The pack is chosen with ?pack=mini because AppTest does not rerun the entry script's sidebar
    after the first run when st.navigation is used.
    """
    import shutil

    from streamlit.testing.v1 import AppTest

    from paths import ROOT

    packs = ragscope_home / "packs"
    if not (packs / "mini").exists():
        shutil.copytree(MINI_PACK, packs / "mini")

    def open_page(page: str | None = None, timeout: int = 120) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.query_params["pack"] = "mini"
        at.run()
        return at.switch_page(page).run() if page else at

    return open_page


@pytest.fixture
def tracing_asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """LangSmith tracing switched on in the environment (towards a closed loopback port, should anything be
    sent); the runs a LangSmith tracer starts, recorded."""
    from langchain_core.tracers.langchain import LangChainTracer
    from langsmith import utils

    from fake_chat_server import closed_port

    environment = {"LANGSMITH_TRACING": "true", "LANGCHAIN_TRACING_V2": "true",
                   "LANGSMITH_API_KEY": "lsv2-sentinel-never-sent", "LANGSMITH_ENDPOINT": closed_port()}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    utils.get_env_var.cache_clear()  # langsmith reads the environment once and caches it
    started: list[tuple[str, str]] = []
    start = LangChainTracer._start_trace
    monkeypatch.setattr(LangChainTracer, "_start_trace",
                        lambda self, run: (started.append((run.run_type, run.name)), start(self, run))[1])
    monkeypatch.setattr(LangChainTracer, "_persist_run_single", lambda self, run: None)  # recorded, never posted
    monkeypatch.setattr(LangChainTracer, "_update_run_single", staticmethod(lambda run: None))
    yield started
    monkeypatch.undo()
    utils.get_env_var.cache_clear()
