"""A shared Chroma server (RAGSCOPE_CHROMA_URL, issue 16) against a real `chroma run` started here, on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import BackendError
from engine.retrieval.index import chroma_client
from engine.retrieval.suite import Retrieval
from engine.runner import Workbench
from engine.settings import Settings

STARTUP_S = 20.0
STOP_S = 10.0
QUESTIONS = ("Where was Grace Hopper born?", "Who wrote the first published program for the Analytical Engine?")


def _chroma_cli() -> Path | None:
    """The venv's own `chroma` (chromadb ships it) before one on PATH, which may be another version."""
    beside = Path(sys.executable).parent / "chroma"
    found = beside if beside.is_file() else shutil.which("chroma")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_heartbeat(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"chroma run exited with {server.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    pytest.fail(f"chroma run gave no heartbeat at {url} within {STARTUP_S:.0f} s")


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a fresh `chroma run` on 127.0.0.1, stopped (and checked stopped) after the module."""
    cli = _chroma_cli()
    if cli is None:
        pytest.skip("the `chroma` command is missing (it ships with chromadb: pip install -r requirements.txt)")
    folder = tmp_path_factory.mktemp("chroma_server")
    port = _free_port()
    log = folder / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([str(cli), "run", "--path", str(folder / "data"), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_heartbeat(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail(f"chroma run ignored SIGTERM for {STOP_S:.0f} s")


@pytest.fixture(scope="module")
def server_settings(chroma_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("server_home"), chroma_url=chroma_url)


@pytest.fixture(scope="module")
def synced(mini_pack, server_settings: Settings) -> Workbench:
    """A workbench whose index lives on the server; its first sync embeds every chunk there."""
    workbench = Workbench(mini_pack, server_settings)
    report = workbench.retrieval.ensure_index()
    assert (report.added, report.kept) == (len(workbench.retrieval.chunks), 0)
    return workbench


def test_the_index_lives_on_the_server_not_in_the_data_folder(synced, server_settings):
    names = [c.name for c in chroma_client(server_settings.index_dir, server_settings.chroma_url).list_collections()]
    assert synced.retrieval.index.name in names
    assert synced.retrieval.index.count() == len(synced.retrieval.chunks)
    assert not server_settings.index_dir.exists()


@pytest.mark.parametrize("question", QUESTIONS)
def test_dense_hits_from_the_server_equal_those_of_the_local_index(synced, mini_pack, tmp_path, question):
    local = Retrieval(mini_pack, Settings(home=tmp_path))
    served = synced.retrieval.search(question, k=5, retriever="dense")
    expected = local.search(question, k=5, retriever="dense")
    assert [h.chunk_id for h in served] == [h.chunk_id for h in expected]
    assert [h.score for h in served] == pytest.approx([h.score for h in expected], abs=1e-5)


def test_a_second_workbench_with_its_own_data_folder_reuses_the_served_index(synced, mini_pack, chroma_url,
                                                                             tmp_path):
    second = Workbench(mini_pack, Settings(home=tmp_path, chroma_url=chroma_url))
    assert second.retrieval is not synced.retrieval
    report = second.retrieval.ensure_index()
    assert (report.added, report.removed, report.kept) == (0, 0, len(synced.retrieval.chunks))
    assert second.retrieval.search(QUESTIONS[0], retriever="dense")[0].doc_id == "m07"



@pytest.mark.parametrize("url", ["localhost:8000", "ftp://h:1", "http://", "http://h:99999", "http://h:port",
                                 "http://u:p@h:8000", "http://h:8000/api?x=1"])
def test_a_malformed_server_url_is_a_backend_error_naming_it(url, tmp_path):
    with pytest.raises(BackendError, match="RAGSCOPE_CHROMA_URL"):
        chroma_client(tmp_path, url)


def test_a_server_that_does_not_answer_is_a_backend_error_and_the_cli_exits_2(tmp_path, monkeypatch, capsys):
    from engine.cli import main
    from paths import MINI_PACK

    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(BackendError, match="did not answer"):
        chroma_client(tmp_path, url)
    monkeypatch.setenv("RAGSCOPE_CHROMA_URL", url)
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "Where was Grace Hopper born?"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "did not answer" in err and "Traceback" not in err
