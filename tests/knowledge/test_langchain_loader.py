"""`ingest --loader module:factory`: any LangChain BaseLoader, its documents under our caps and splitting,
titles and stable ids from their metadata, and an actionable error for each way a loader can go wrong."""

from __future__ import annotations

import textwrap

import pytest

from engine.errors import IngestError
from engine.knowledge.ingest import IngestOptions
from engine.knowledge.langchain_loader import DEFAULT_CAPS, LoaderCaps, ingest_loader, parse_loader_args
from engine.knowledge.splitters import SplitterConfig

USER_LOADERS = '''
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document


class Many(BaseLoader):
    """`count` small documents, lazily: a runaway loader."""

    def __init__(self, count=3, source="feed"):
        self.count, self.source = count, source

    def lazy_load(self):
        for n in range(self.count):
            yield Document(page_content=f"Fact number {n} is true.", metadata={"source": self.source})


class Pages(BaseLoader):
    def __init__(self, pages):
        self.pages = pages

    def lazy_load(self):
        yield from self.pages


def titled():
    return Pages([Document(page_content="Ada Lovelace wrote the first program.",
                           metadata={"source": "https://example.org/ada", "title": "Ada Lovelace"}),
                  Document(page_content="Babbage built engines.", metadata={"source": "a/notes.txt", "page": 0}),
                  Document(page_content="Babbage was born in London.", metadata={"source": "b/notes.txt"}),
                  Document(page_content="   ", metadata={"source": "blank.txt"})])


def huge(chars):
    return Pages([Document(page_content="x" * chars, metadata={"source": "big.html"})])


def garbage():
    return Pages(["just a string", Document(page_content="fine")])


def not_text():
    return Pages([Document.model_construct(page_content=b"bytes", metadata={})])


def broken():
    def pages():
        yield Document(page_content="one")
        raise OSError("the server hung up")
    return Pages(pages())


def raises(path):
    raise FileNotFoundError(f"no such file: {path}")


def not_a_loader():
    return ["a", "list"]


NOT_CALLABLE = 3
'''


@pytest.fixture
def user_loaders(tmp_path, monkeypatch) -> str:
    """A user's module of loaders importable as `user_loaders`."""
    (tmp_path / "user_loaders.py").write_text(textwrap.dedent(USER_LOADERS), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_loaders"


def _problems(spec: str, args: dict | None = None, caps: LoaderCaps = DEFAULT_CAPS) -> str:
    with pytest.raises(IngestError) as caught:
        ingest_loader(spec, args or {}, "p", caps=caps)
    return str(caught.value)


def test_a_community_loader_class_reads_a_file_into_titled_documents(tmp_path):
    notes = tmp_path / "lovelace_notes.txt"
    notes.write_text("Ada Lovelace was born in London.", encoding="utf-8")
    pack = ingest_loader("langchain_community.document_loaders:TextLoader", {"file_path": str(notes)}, "notes")
    assert [(d.id, d.title, d.text) for d in pack.documents] == [
        ("lovelace-notes-txt-1", "lovelace_notes", "Ada Lovelace was born in London.")]


def test_metadata_names_titles_urls_and_distinct_stable_ids(user_loaders):
    pack = ingest_loader(f"{user_loaders}:titled", {}, "p")
    rows = [(d.id, d.title, d.url) for d in pack.documents]
    assert rows == [("ada-1", "Ada Lovelace", "https://example.org/ada"), ("notes-txt-1", "notes (1)", ""),
                    ("notes-txt-2-1", "notes", "")]  # two notes.txt in two folders never share an id
    assert [d.id for d in ingest_loader(f"{user_loaders}:titled", {}, "p").documents] == [r[0] for r in rows]


def test_a_loader_without_sources_names_its_documents_after_itself(user_loaders):
    pack = ingest_loader(f"{user_loaders}:Many", {"count": 2, "source": ""}, "p")
    assert [(d.id, d.title) for d in pack.documents] == [
        ("user-loaders-many-1", "user_loaders:Many document 1"),
        ("user-loaders-many-2", "user_loaders:Many document 2")]


def test_loader_documents_go_through_the_chosen_splitter(user_loaders):
    pack = ingest_loader(f"{user_loaders}:titled", {}, "p",
                         IngestOptions(splitter=SplitterConfig("recursive", 20, 0)))
    assert {d.splitter for d in pack.documents} == {"recursive"} and all(len(d.text) <= 20 for d in pack.documents)


def test_a_loader_yielding_a_million_documents_is_stopped_at_the_cap(user_loaders):
    assert "yielded more than 100,000 documents; load a part at a time" in _problems(
        f"{user_loaders}:Many", {"count": 1_000_000})


def test_a_page_over_the_size_limit_is_refused(user_loaders):
    # The same check refuses a 1 GB page at the default limit of 50,000,000 characters.
    message = _problems(f"{user_loaders}:huge", {"chars": 2_000}, LoaderCaps(chars=1_000))
    assert "document 1 holds 2,000 characters, over the limit of 1,000; split the source" in message


def test_documents_over_the_total_limit_are_refused(user_loaders):
    message = _problems(f"{user_loaders}:Many", {"count": 50}, LoaderCaps(total_chars=100))
    assert "documents hold over 100 characters in all" in message


@pytest.mark.parametrize(("spec", "args", "message"), [
    ("TextLoader", {}, "loader 'TextLoader' is not module:factory"),
    ("no_such_module_h6:Loader", {}, "cannot import 'no_such_module_h6' (ModuleNotFoundError"),
    ("{m}:Missing", {}, "'user_loaders' has no attribute 'Missing'"),
    ("{m}:NOT_CALLABLE", {}, "'NOT_CALLABLE' is a int, not a class or function"),
    ("{m}:raises", {"path": "gone.csv"}, "failed with path: FileNotFoundError: no such file: gone.csv"),
    ("{m}:Many", {"colour": "red"}, "failed with colour: TypeError"),
    ("{m}:not_a_loader", {}, "returned a list, not a LangChain BaseLoader"),
    ("{m}:garbage", {}, "document 1 is a str, not a LangChain Document"),
    ("{m}:not_text", {}, "document 1: page_content is a bytes, not text"),
    ("{m}:broken", {}, "the loader failed: OSError: the server hung up"),
])
def test_each_broken_loader_is_an_ingest_error_saying_why(user_loaders, spec, args, message):
    assert message in _problems(spec.format(m=user_loaders), args)


def test_loader_arguments_read_json_values_and_keep_other_text():
    assert parse_loader_args(["count=3", "flag=true", "cols=[\"a\"]", "file_path=notes.csv", "x="]) == {
        "count": 3, "flag": True, "cols": ["a"], "file_path": "notes.csv", "x": ""}
    with pytest.raises(IngestError, match="loader argument 'file_path' is not NAME=VALUE"):
        parse_loader_args(["file_path"])
