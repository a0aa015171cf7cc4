"""The Knowledge page's "Build a pack" form with a splitter and CSV/JSON options (AppTest, in-process)."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from engine.knowledge.loader import load_pack


@pytest.fixture()
def build_tab(open_app) -> AppTest:
    at = open_app("views/knowledge.py")
    at.session_state["knowledge.tab"] = "Build a pack"
    return at.run()


def _build(at: AppTest, name: str, files: list[tuple[str, bytes, str]], **choices: object) -> AppTest:
    at.text_input(key="knowledge.build_name").input(name)
    at.file_uploader(key="knowledge.uploads").set_value(files)
    for key, value in choices.items():
        widget = {"splitter": at.selectbox, "chunk_size": at.number_input, "chunk_overlap": at.number_input}.get(
            key, at.text_input)
        widget(key=f"knowledge.{key}").set_value(value)
    at.button[0].click()  # the form's Build button
    return at.run()


def test_csv_rows_and_json_items_cut_by_the_chosen_splitter_make_the_pack(build_tab, ragscope_home):
    csv = b"title,body\nAda,Ada Lovelace wrote the first program. She was born in London.\n"
    items = json.dumps({"items": [{"title": "Curie", "text": "Marie Curie won two Nobel prizes."}]}).encode()
    at = _build(build_tab, "split-upload", [("people.csv", csv, "text/csv"), ("items.json", items, "application/json")],
                splitter="sentence", chunk_size=40, chunk_overlap=0, csv_columns="body", csv_metadata="title",
                json_path=".items[]")
    assert not at.exception and not at.error
    pack = load_pack(ragscope_home / "packs" / "split-upload")
    assert [(d.title, d.splitter) for d in pack.documents] == [
        ("Ada (part 1)", "sentence"), ("Ada (part 2)", "sentence"), ("Curie", "sentence")]


def test_a_chunk_size_the_splitter_cannot_take_is_shown_and_nothing_is_written(build_tab, ragscope_home):
    at = _build(build_tab, "too-big", [("a.md", b"# A\n\nSome text.\n", "text/markdown")],
                splitter="tokens", chunk_size=1000)
    assert "outside 1–256 word pieces" in re.sub(r"\\(.)", r"\1", at.error[0].value)
    assert not (ragscope_home / "packs" / "too-big").exists()
