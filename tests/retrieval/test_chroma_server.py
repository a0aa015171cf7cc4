"""A shared Chroma server (RAGSCOPE_CHROMA_URL, issue 16) against a real `chroma run` started here, on loopback."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from engine.errors import BackendError
from engine.retrieval.index import chroma_client
from engine.retrieval.suite import Retrieval
from engine.runner import Workbench
from engine.settings import Settings
from engine.trace import ErrorStep

STARTUP_S = 20.0
STOP_S = 10.0
DEADLINE_S = 0.5  # RAGSCOPE_CHROMA_TIMEOUT_S in the stall tests
SAFETY_S = 15.0  # a call still waiting after this hangs: the failure these tests guard against
TIMEOUT_VARIABLE = "RAGSCOPE_CHROMA_TIMEOUT_S"
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


@contextmanager
def _chroma_run(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """(URL, process) of a fresh `chroma run` on 127.0.0.1, stopped (and checked stopped) after the block."""
    cli = _chroma_cli()
    if cli is None:
        pytest.skip("the `chroma` command is missing (it ships with chromadb: pip install -r requirements.txt)")
    port = _free_port()
    log = folder / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([str(cli), "run", "--path", str(folder / "data"), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_heartbeat(url, server, log)
        yield url, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail(f"chroma run ignored SIGTERM for {STOP_S:.0f} s")


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen]]:
    with _chroma_run(tmp_path_factory.mktemp("chroma_server")) as running:
        yield running


@pytest.fixture(scope="module")
def chroma_url(chroma_server: tuple[str, subprocess.Popen]) -> str:
    return chroma_server[0]


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


def test_a_server_that_does_not_answer_is_a_backend_error_and_ask_exits_as_a_failed_backend(tmp_path, monkeypatch,
                                                                                            capsys):
    from engine.cli import main
    from engine.cli.evaluate import BACKEND_FAILED
    from paths import MINI_PACK

    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(BackendError, match="did not answer"):
        chroma_client(tmp_path, url)
    monkeypatch.setenv("RAGSCOPE_CHROMA_URL", url)
    # the run's answer rests on the failed server (issue 26 item 4: exit 3, no longer 2)
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "Where was Grace Hopper born?"]) \
        == BACKEND_FAILED
    err = capsys.readouterr().err
    assert "error:" in err and "did not answer" in err and "Traceback" not in err


# ---- a server that stalls or dies (issue 26 item 1) --------------------------------------------------------


@contextmanager
def _paused(server: subprocess.Popen) -> Iterator[None]:
    """The server stopped with SIGSTOP: the kernel still accepts connections, nothing answers them."""
    os.kill(server.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.pid, signal.SIGCONT)


def _outcome(call: Callable[[], Any]) -> Any:
    """What `call()` returned or raised, run in a thread; a call still waiting after SAFETY_S fails the test
    (resuming the server afterwards lets the thread end)."""
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # noqa: BLE001  what the test inspects
            outcome.append(exc)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(SAFETY_S):
        pytest.fail(f"still waiting for the stalled Chroma server after {SAFETY_S:.0f} s")
    return outcome[0]


@pytest.fixture
def deadline(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setenv(TIMEOUT_VARIABLE, str(DEADLINE_S))
    return DEADLINE_S


def test_a_stalled_server_ends_a_search_with_a_backend_error_naming_it(synced, mini_pack, chroma_server, deadline,
                                                                    tmp_path):
    url, server = chroma_server
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path, chroma_url=url))
    retrieval.ensure_index()  # connected and synced while the server answers
    with _paused(server):
        failed = _outcome(lambda: retrieval.search(QUESTIONS[0], retriever="dense"))
    assert isinstance(failed, BackendError)
    assert f"the Chroma server at RAGSCOPE_CHROMA_URL='{url}' gave no answer in time while querying" in str(failed)
    assert TIMEOUT_VARIABLE in str(failed)
    assert retrieval.search(QUESTIONS[0], retriever="dense")[0].doc_id == "m07"  # the same client, resumed


def test_a_server_stalled_before_the_first_question_ends_the_run_as_a_backend_failure(synced, mini_pack,
                                                                                       chroma_server, deadline,
                                                                                       tmp_path):
    url, server = chroma_server
    workbench = Workbench(mini_pack, Settings(home=tmp_path, chroma_url=url))
    with _paused(server):  # the index is opened and synced inside the run
        trace = _outcome(lambda: workbench.ask(QUESTIONS[0], "vanilla"))
    errors = [s for s in trace.steps if isinstance(s, ErrorStep)]
    assert [e.backend_failure for e in errors] == [True]
    assert f"the Chroma server at RAGSCOPE_CHROMA_URL='{url}' gave no answer in time" in errors[0].message
    assert trace.answer.refused


def test_a_bad_timeout_setting_is_a_backend_error_naming_it(chroma_url, monkeypatch, tmp_path):
    for bad in ("soon", "0", "-3", "nan", "inf"):
        monkeypatch.setenv(TIMEOUT_VARIABLE, bad)
        with pytest.raises(BackendError, match=f"{TIMEOUT_VARIABLE}='{bad}' is not a number of seconds above 0"):
            chroma_client(tmp_path, chroma_url)


def test_a_server_killed_during_index_makes_the_cli_exit_2_with_one_line_and_no_traceback(tmp_path):
    from paths import MINI_PACK, ROOT

    with _chroma_run(tmp_path) as (url, server):
        env = {**os.environ, "RAGSCOPE_HOME": str(tmp_path / "home"), "RAGSCOPE_CHROMA_URL": url,
               "HF_HUB_OFFLINE": "1", TIMEOUT_VARIABLE: "5"}
        index = subprocess.Popen([sys.executable, "-m", "engine", "index", "--pack", str(MINI_PACK)], cwd=ROOT,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            seen = b""
            while b"indexing:" not in seen:  # the sync has begun: (0, n) is reported before the first batch
                chunk = os.read(index.stderr.fileno(), 4096)
                assert chunk, f"index ended before it synced: {seen.decode(errors='replace')}"
                seen += chunk
            index.send_signal(signal.SIGSTOP)  # so the kill surely lands during the sync
            server.kill()
            server.wait()
            index.send_signal(signal.SIGCONT)
            out, err = index.communicate(timeout=SAFETY_S)
        finally:
            index.kill()
            index.wait()
    err = (seen + err).decode(errors="replace")
    assert index.returncode == 2, err
    assert f"error: the Chroma server at RAGSCOPE_CHROMA_URL='{url}' did not answer while syncing" in err
    assert "Traceback" not in err and not out
