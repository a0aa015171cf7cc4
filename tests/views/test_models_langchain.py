"""The Models page's LangChain form (AppTest): a user's factory is offered in the sidebar, says what it cannot
give, answers a test prompt; a broken one is refused with the reason and nothing is offered."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = "views/models.py"


@pytest.fixture()
def page(open_app, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    (tmp_path / "page_chats.py").write_text(textwrap.dedent("""
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        def reader():
            return FakeListChatModel(responses=["Retrieval plus generation."])

        def broken():
            raise RuntimeError("cluster credentials missing")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.backends_file.unlink(missing_ok=True)  # backends set up are kept on disk: start with none
    yield open_app(PAGE, timeout=180)
    settings.backends_file.unlink(missing_ok=True)


def _use(at: AppTest, model: str) -> AppTest:
    at.text_input(key="models.lc_model").input(model)
    next(b for b in at.button if b.label == "Use this model").click()
    return at.run()


def test_the_page_says_what_the_langchain_backend_cannot_give(page):
    assert not page.exception
    assert any("no attention heatmaps" in c.value and "no R2AG injection" in c.value for c in page.caption)


def test_a_users_factory_is_offered_and_answers_a_test_prompt(page):
    at = _use(page, "page_chats:reader")
    assert not at.exception and not at.error
    config = at.session_state["app.backend_configs"]["langchain"]
    assert config.label == "langchain: page_chats:reader"
    at.selectbox(key="models.try_model").set_value(config.label)
    at.text_area(key="models.prompt").input("What is RAG?")
    next(b for b in at.button if b.label == "Generate").click()
    at = at.run()
    assert not at.exception and not at.error
    assert any("Retrieval plus generation" in m.value for m in at.markdown)  # md_text escapes the dot


def test_a_factory_that_raises_is_refused_with_its_reason(page):
    at = _use(page, "page_chats:broken")
    assert not at.exception
    assert "cluster credentials missing" in at.error[0].value
    assert "langchain" not in at.session_state["app.backend_configs"]
