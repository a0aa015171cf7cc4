"""Explore on the OpenAI-compatible backend: a run streams its model calls, and the saved trace shows how
sure the model was (issue 18). What a browser sees mid-stream is tests/test_browser_streaming.py's job."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_chat_server import MODEL, Answerer, ChatServer, serving

TOKENS = ("Answer", ":", " 1906", "\n", "Evidence", ":", " [1]")


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with serving() as script:
        script.answerer = Answerer(TOKENS, logprobs=(-0.01, -0.02, -0.3, -0.05, -0.1, -0.01, -0.2))
        yield script


@pytest.fixture
def served_app(open_app, chat_server: ChatServer):
    """Explore on the mini pack with the fake server chosen in the sidebar (chosen before the first run:
    AppTest does not rerun the sidebar afterwards)."""
    from streamlit.testing.v1 import AppTest

    from engine.app.models import BackendConfig
    from paths import ROOT

    open_app()  # puts the mini pack in place
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["pack"] = "mini"
    at.session_state["app.backend_configs"] = {"openai": BackendConfig(
        "openai", "openai (fake)", (("base_url", chat_server.url), ("model", MODEL)))}
    at.session_state["app.backend"] = "openai"
    return at.run()


def test_a_run_on_a_streaming_server_streams_and_its_call_shows_the_mean_logprob(served_app, chat_server) -> None:
    at = served_app
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert not at.exception
    trace = at.session_state["explore.trace"]
    assert trace.backend == "openai" and trace.answer.text == "1906"
    assert [r["body"].get("stream") for r in chat_server.requests] == [True]  # the page watched the run
    from components.safe import md_text

    assert any(md_text("mean token logprob −0.10 (perplexity 1.10)") in m.value for m in at.markdown)
