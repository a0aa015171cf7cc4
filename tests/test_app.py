"""The Streamlit app in-process (AppTest): loads, answers a question, explains bad input."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.safe import md_text
from ui_knobs import answer_every_guess


@pytest.fixture()
def app(open_app) -> AppTest:
    return open_app()


def _ask(at: AppTest, question: str) -> AppTest:
    answer_every_guess(at)
    at.text_area(key="explore.question").input(question)
    at.button(key="explore.run").click()
    return at.run()


def test_the_explore_page_says_what_it_is_where_the_tour_is_and_which_pack(app):
    """Issue 22: the page's title is the page, not the pack; a newcomer is told what the tool is."""
    assert not app.exception
    assert any("Pick an example" in i.value for i in app.info)
    assert app.header[0].value == "Explore"
    assert any(md_text("Knowledge pack: Mini test pack") in c.value for c in app.caption)
    assert any("shows how retrieval-augmented reasoning methods answer" in m.value for m in app.markdown)
    assert [link.proto.label for link in app.get("page_link")] == ["New here? Take the demo tour"]


def test_asking_shows_the_chunks_and_the_answer_with_its_backend(app):
    at = _ask(app, "When was Grace Hopper born?")
    assert not at.exception
    assert [s.value for s in at.success] == ["1906"]
    assert any("no language model was involved" in c.value for c in at.caption)
    assert any(m.value == "#### Answer" for m in at.markdown)
    assert at.dataframe


def test_an_empty_question_gets_a_clear_message(app):
    at = _ask(app, "   ")
    assert not at.exception
    assert any("empty" in e.value for e in at.error)


def _configure_server() -> None:
    import ui_state
    from engine.app.models import BackendConfig

    ui_state.configure_backend(BackendConfig(
        "openai", "openai: llama3 @ 127.0.0.1", (("api_key", "sk-secret"), ("base_url", "http://127.0.0.1:9/v1"),
                                                  ("model", "llama3"))))


def _forget_server() -> None:
    import ui_state

    ui_state.forget_backend("openai")


def test_a_configured_model_server_survives_a_reload_without_its_key(open_app, ragscope_home):
    import stat

    assert not AppTest.from_function(_configure_server).run().exception
    try:
        saved = ragscope_home / "backends.json"
        assert "sk-secret" not in saved.read_text() and "127.0.0.1:9" in saved.read_text()
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        reloaded = open_app()  # a new browser session
        assert reloaded.selectbox(key="app.backend").options == ["offline (no language model)",
                                                                 "openai: llama3 @ 127.0.0.1"]
    finally:
        AppTest.from_function(_forget_server).run()
    assert open_app().selectbox(key="app.backend").options == ["offline (no language model)"]
