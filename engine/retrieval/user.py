"""Users' own LangChain retrievers as `retriever=` choices of every method (issue 25).

Three sources, each giving a factory `make(inputs: RetrieverInputs) -> BaseRetriever`:
- a file `$RAGSCOPE_HOME/retrievers/<name>.py` defining `make_retriever`; the choice is `<name>`;
- an entry point in the group `ragscope.retrievers` (`name = "pkg.module:factory"`); the choice is its name;
- `module:factory` itself as the value (`-p retriever=my_stores:qdrant`): importable from where ragscope runs, it
  needs no file and no package, and a saved trace names exactly what it used.

Files and entry points load when the choices are first listed, once per folder per process, as the methods'
plugins do: each is first imported in a child process (engine.plugin_probe, issue 26), so one that hangs, exits or
fails there is never imported here; one that fails is left out and reported as a `RetrieverProblem`, and the
built-ins and the other retrievers stay. A `module:factory` is checked the same way before it is imported. The
factory is called once per pack and process (`Retrieval.retriever`); its Documents become hits through
`UserRetriever`, which cuts them to the method's k and never makes up a score.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LcDocument
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from engine.cache import Registry
from engine.errors import RagscopeError, RetrieverError, UnknownNameError
from engine.knowledge.chunking import Chunk
from engine.plugin_probe import Candidate, LoadProblem, exception_text, probe
from engine.settings import Settings

if TYPE_CHECKING:
    from engine.knowledge.records import Pack
    from engine.retrieval.suite import Retrieval

ENTRY_POINT_GROUP = "ragscope.retrievers"
FACTORY = "make_retriever"  # what a file in $RAGSCOPE_HOME/retrievers/ defines
MODULE_PREFIX = "ragscope_user_retrievers"
PROBE, REF_PROBE = f"{__name__}:probe_candidate", f"{__name__}:probe_ref"
SCORE_KEYS = ("score", "relevance_score")  # ours and LangChain's rerankers' (Cohere, FlashRank, Jina)
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")  # module.path:factory

log = logging.getLogger(__name__)

Factory = Callable[["RetrieverInputs"], Any]


@dataclass(frozen=True)
class RetrieverInputs:
    """What a factory is called with: the pack, and ragscope's own pieces for it. Index `documents()` (the pack's
    chunks, ids in their metadata) and the hits map back to the pack's chunks; wrap `builtin("bm25")` to fuse
    yours with ours (an EnsembleRetriever)."""

    pack: Pack
    retrieval: Retrieval

    def documents(self) -> list[LcDocument]:
        """The pack's chunks as ragscope cuts them: id = chunk id; metadata doc_id, chunk_id, title."""
        return [LcDocument(id=c.id, page_content=c.text,
                           metadata={"doc_id": c.doc_id, "chunk_id": c.id, "title": c.title})
                for c in self.retrieval.chunks]

    def embeddings(self) -> Embeddings:
        """ragscope's sentence encoder (MiniLM unless RAGSCOPE_EMBEDDER says otherwise), loaded on this call."""
        return self.retrieval.embedder

    def builtin(self, name: str, k: int = 20) -> BaseRetriever:
        """One of ragscope's retrievers (hybrid, dense, bm25, dense-ft) returning `k` Documents."""
        from engine.retrieval.suite import BUILTIN_RETRIEVERS

        if name not in BUILTIN_RETRIEVERS:
            raise UnknownNameError(f"unknown built-in retriever {name!r}; known: {', '.join(BUILTIN_RETRIEVERS)}")
        return self.retrieval.retriever(name, k)


class RetrieverProblem(LoadProblem):
    """A retriever left out of the choices: where it is, and why."""

    what = "Retriever"


@dataclass(frozen=True)
class Found:
    """A loaded retriever source: the choice's name, where it came from, its factory."""

    name: str
    source: str
    factory: Factory


@dataclass(frozen=True)
class UserRetrievers:
    found: tuple[Found, ...] = ()
    problems: tuple[RetrieverProblem, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.found)


_FOLDERS: Registry[str, UserRetrievers] = Registry()
_REFS: Registry[str, Found] = Registry()


def user_retrievers(settings: Settings | None = None) -> UserRetrievers:
    """The retrievers in the home's retrievers/ folder and the installed entry points, loaded once per folder."""
    folder = (settings or Settings()).retrievers
    return _FOLDERS.get(str(folder), lambda: load_from(folder))


def load_from(folder: Path) -> UserRetrievers:
    """Import the folder's `*.py` files (by name), then the entry points (by name); a name already taken
    (by a built-in or an earlier source) is a problem, not an override."""
    from engine.retrieval.suite import BUILTIN_RETRIEVERS

    found: list[Found] = []
    problems: list[RetrieverProblem] = []
    listed = [*_files(folder), *_entry_points()]
    verdicts = probe(PROBE, [c for c in listed if c.name not in BUILTIN_RETRIEVERS])
    for candidate in listed:
        name, source = candidate.name, candidate.source
        names = (*BUILTIN_RETRIEVERS, *(f.name for f in found))
        if name in names:
            problems.append(RetrieverProblem(source, f"the name {name!r} is taken; rename it (taken: "
                                                     f"{', '.join(names)})"))
        elif verdicts[candidate] is not None:
            problems.append(RetrieverProblem(source, verdicts[candidate]))
        else:
            try:
                found.append(Found(name, source, _factory(candidate)))
            except (Exception, SystemExit) as exc:  # SystemExit: a file's sys.exit() must not end the app
                log.debug("retriever %s was not loaded", source, exc_info=True)
                problems.append(RetrieverProblem(source, exception_text(exc)))
    return UserRetrievers(tuple(found), tuple(problems))


def probe_candidate(candidate: Candidate) -> str | None:
    """In the probe's child: import the candidate's factory as `load_from` does; why it is left out, or None."""
    try:
        _factory(candidate)
    except BaseException as exc:  # noqa: BLE001 - the child's: a file's KeyboardInterrupt is its verdict
        return exception_text(exc)
    return None


def _factory(candidate: Candidate) -> Factory:
    if candidate.kind == "entry":
        return _callable(EntryPoint(candidate.name, candidate.target, ENTRY_POINT_GROUP).load(), candidate.source)
    return _callable(_factory_in_file(Path(candidate.target)), candidate.source)


def resolve(name: str, settings: Settings | None = None) -> Found:
    """The factory behind a user's choice: a loaded name, or a `module:factory` imported now (once)."""
    loaded = user_retrievers(settings)
    for found in loaded.found:
        if found.name == name:
            return found
    if _REF.match(name):
        return _REFS.get(name, partial(_import_ref, name))
    raise UnknownNameError(f"unknown retriever {name!r}; known: {', '.join(retriever_names(settings))}, "
                           "or module:factory (a function returning a LangChain BaseRetriever)")


def retriever_names(settings: Settings | None = None) -> tuple[str, ...]:
    from engine.retrieval.suite import BUILTIN_RETRIEVERS

    return (*BUILTIN_RETRIEVERS, *user_retrievers(settings).names)


class RetrieverNames:
    """The `retriever=` choices (engine.params.OpenChoices): iterating lists the built-ins then the user's
    retrievers; `in` and `check` also accept a `module:factory` that imports to a callable."""

    def __iter__(self) -> Iterator[str]:
        return iter(retriever_names())

    def __len__(self) -> int:
        return len(retriever_names())

    def __contains__(self, name: object) -> bool:
        try:
            self.check(name)
        except RagscopeError:
            return False
        return True

    def check(self, value: object) -> None:
        from engine.retrieval.suite import BUILTIN_RETRIEVERS

        if value not in BUILTIN_RETRIEVERS:
            resolve(str(value))


def build(found: Found, inputs: RetrieverInputs) -> BaseRetriever:
    """Call the factory; RetrieverError naming the source when it raises or returns something else."""
    try:
        made = found.factory(inputs)
    except RagscopeError:
        raise
    except Exception as exc:
        raise RetrieverError(f"retriever {found.source} failed to build: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, BaseRetriever):
        raise RetrieverError(f"retriever {found.source} returned {type(made).__name__}, not a LangChain "
                             "BaseRetriever; return e.g. vector_store.as_retriever()")
    return made


class UserRetriever(BaseRetriever):
    """A user's retriever seen as ours: the first k Documents, with rank, ids and score in our metadata keys."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str
    source: str
    inner: BaseRetriever
    chunks: dict[str, Chunk]
    k: int = 5

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LcDocument]:
        try:
            docs = self.inner.invoke(query, config={"callbacks": run_manager.get_child()})
        except RagscopeError:
            raise
        except Exception as exc:
            raise RetrieverError(f"retriever {self.source} failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(docs, list) or not all(isinstance(d, LcDocument) for d in docs):
            got = type(docs).__name__ if not isinstance(docs, list) else \
                next(type(d).__name__ for d in docs if not isinstance(d, LcDocument))
            raise RetrieverError(f"retriever {self.source} returned {got}, not a list of LangChain Documents")
        return [as_ours(doc, rank, self.name, self.chunks) for rank, doc in enumerate(docs[: self.k], start=1)]


def as_ours(doc: LcDocument, rank: int, name: str, chunks: dict[str, Chunk]) -> LcDocument:
    """A foreign Document in our metadata keys. A chunk the pack knows (by metadata chunk_id or the Document's
    id) takes its doc id and title from the pack; another keeps what its metadata says (doc_id or source, title
    or source and page), and an id from its text's hash when it has none. The score is the Document's own
    `score`/`relevance_score`; one a ragscope built-in gave (an ensemble or a compressor over ours) is that
    retriever's, not this one's, and is dropped."""
    meta = doc.metadata
    chunk_id = str(meta.get("chunk_id") or doc.id or f"lc-{hashlib.sha256(doc.page_content.encode()).hexdigest()[:10]}")
    known = chunks.get(chunk_id)
    source = str(meta.get("source") or "")
    page = f" p. {meta['page']}" if meta.get("page") is not None and source else ""
    doc_id = known.doc_id if known else str(meta.get("doc_id") or source or chunk_id)
    title = known.title if known else str(meta.get("title") or f"{source}{page}")
    return LcDocument(id=chunk_id, page_content=doc.page_content, metadata={
        "score": _own_score(meta), "rank": rank, "doc_id": doc_id, "chunk_id": chunk_id, "title": title,
        "retriever": name})


def _own_score(meta: dict[str, Any]) -> float | None:
    from engine.retrieval.suite import BUILTIN_RETRIEVERS

    return None if meta.get("retriever") in BUILTIN_RETRIEVERS else document_score(meta)


def document_score(meta: dict[str, Any]) -> float | None:
    """A Document's score as its retriever put it in the metadata (`score`, `relevance_score`); None, never an
    invented number, when it gave none."""
    for key in SCORE_KEYS:
        value = meta.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def _callable(value: object, source: str) -> Factory:
    if not callable(value):
        raise RetrieverError(f"{type(value).__name__} is not callable; give a function taking RetrieverInputs "
                             "and returning a LangChain BaseRetriever")
    return value


def _files(folder: Path) -> Iterator[Candidate]:
    """The folder's `*.py` files, sorted; names starting with _ or . are skipped (helpers, editor files). A
    candidate's name is the retriever's: the file's stem, or the entry point's name."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.py")):
        if not path.name.startswith(("_", ".")):
            yield Candidate(str(path), "file", str(path), path.stem)


def _factory_in_file(path: Path) -> object:
    if not path.is_file():
        raise RetrieverError("it is not a regular file")
    name = f"{MODULE_PREFIX}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic and dataclasses look a class's module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    if not hasattr(module, FACTORY):
        raise RetrieverError(f"it defines no {FACTORY}(inputs) function returning a LangChain BaseRetriever")
    return getattr(module, FACTORY)


def _entry_points() -> Iterator[Candidate]:
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        dist = f" ({point.dist.name} {point.dist.version})" if point.dist else ""
        yield Candidate(f"entry point {point.name} = {point.value}{dist}", "entry", point.value, point.name)


def _import_ref(ref: str) -> Found:
    """A `module:factory`, imported here only once a child process imported it cleanly (engine.plugin_probe)."""
    candidate = Candidate(ref, "ref", ref)
    problem = probe(REF_PROBE, [candidate])[candidate]
    if problem is None:
        try:
            return Found(ref, ref, _ref_factory(ref))
        except RetrieverError as exc:
            problem = str(exc)
    raise RetrieverError(f"retriever {ref}: {problem}")


def probe_ref(candidate: Candidate) -> str | None:
    """In the probe's child: import a `module:factory` as `_import_ref` does; why it is refused, or None."""
    try:
        _ref_factory(candidate.target)
    except BaseException as exc:  # noqa: BLE001 - the child's: a module's KeyboardInterrupt is its verdict
        return str(exc) if isinstance(exc, RetrieverError) else exception_text(exc)
    return None


def _ref_factory(ref: str) -> Factory:
    module_name, attr = ref.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RetrieverError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}; run ragscope where that "
                             "module is importable (or on PYTHONPATH)") from exc
    if not hasattr(module, attr):
        raise RetrieverError(f"module {module_name!r} has no {attr!r}")
    return _callable(getattr(module, attr), ref)
