"""Knowledge packs: list and load them, summarise them, search and index them, build new ones from files,
and mine, check and save their rules.

The CLI's `index` and `ingest` and the Knowledge page share this one way of doing each job; the page imports
pack work only from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.graph.kg import KnowledgeGraph
from engine.graph.neighbourhood import entity_choices, fact_rows, hub_entity, neighbourhood_step
from engine.knowledge.ingest import DEFAULT_OPTIONS, IngestOptions, ingest_paths
from engine.knowledge.langchain_loader import ingest_loader, parse_loader_args
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack, Rule, Triple
from engine.knowledge.splitters import SPLITTERS, SplitterConfig
from engine.knowledge.summary import PackSummary, summarize_pack, unloadable_pack
from engine.knowledge.uploads import ALLOWED_SUFFIXES, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, Upload, build_pack_from_uploads
from engine.knowledge.writer import check_target, sweep_staging, write_pack
from engine.retrieval.index import IndexProgress, SyncReport, with_eta
from engine.retrieval.suite import Retrieval
from engine.rules.mining import MinedRule, MiningConfig, mine_rules, mined_pack_rules, mined_rows
from engine.rules.overview import rule_rows, statistics_rows
from engine.rules.store import SavedRules, is_bundled, save_rules, save_rules_as_copy
from engine.rules.text import rule_text
from engine.settings import DEMO_PACK, Settings
from engine.text import content_words
from engine.trace import Hit

__all__ = [
    "ALLOWED_SUFFIXES", "BUNDLED_PACKS", "MAX_UPLOAD_MB", "SPLITTERS", "IndexProgress", "IndexStatus", "IngestOptions",
    "KnowledgeGraph", "SplitterConfig",
    "MinedRule", "MiningConfig", "Pack", "PackSummary", "Rule", "SavedRules", "SyncReport", "Triple", "Upload",
    "available_packs", "build_from_uploads", "entity_choices", "entity_facts", "fact_rows", "hub_entity",
    "index_status", "ingest", "is_bundled", "knowledge_graph", "load", "mine", "mined_pack_rules", "mined_rows",
    "neighbourhood_step", "parse_loader_args", "query_terms", "rule_rows", "rule_text", "save_mined", "search",
    "statistics_rows", "summary", "sync_index", "unloadable_pack",
]

BUNDLED_PACKS = DEMO_PACK.parent
Progress = Callable[[float, str], None]


# ---- listing and loading ---------------------------------------------------------------------------------


def available_packs(settings: Settings, roots: Iterable[Path] = (BUNDLED_PACKS,)) -> dict[str, Path]:
    """Pack folders under `roots` and the user's packs folder, by folder name (the first of a name wins).

    Hidden folders are never listed: `.NAME.…` is the temp folder of a pack write, truncated if its
    writer was killed; those whose writer is gone are swept whenever the list is read (issue 15).
    """
    sweep_staging(settings.packs)
    found: dict[str, Path] = {}
    for root in (*roots, settings.packs):
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if not folder.name.startswith(".") and (folder / "documents.jsonl").is_file():
                    found.setdefault(folder.name, folder)
    return found


def load(path: str | Path) -> Pack:
    """The pack in `path`, validated whole (PackError lists every problem as `file:line: what`)."""
    return load_pack(path)


def summary(pack: Pack) -> PackSummary:
    """Counts for the packs table (chunking the pack once)."""
    return summarize_pack(pack)


def knowledge_graph(pack: Pack) -> KnowledgeGraph:
    return KnowledgeGraph.from_pack(pack)


def entity_facts(kg: KnowledgeGraph, entity: str, limit: int) -> tuple[list[Triple], int]:
    """The first `limit` facts about `entity` (outgoing first), and how many it has in all."""
    return kg.facts_about(entity, limit=limit), kg.graph.degree(entity)


# ---- searching and indexing -----------------------------------------------------------------------------


def search(retrieval: Retrieval, query: str, k: int) -> tuple[Hit, ...]:
    """The `k` best chunks by hybrid retrieval (dense + BM25); the first search also builds the index."""
    return retrieval.search(query, k=k, retriever="hybrid")


def query_terms(query: str) -> list[str]:
    """The query's words that lexical matching compares (stopwords left out): what a page highlights."""
    return content_words(query)


@dataclass(frozen=True)
class IndexStatus:
    """The dense index of a pack's chunks as it stands, for the page to compare with the pack."""

    name: str
    indexed: int
    chunks: int
    encoder: str
    where: str  # the Chroma server's URL or the index folder


def index_status(retrieval: Retrieval) -> IndexStatus:
    """Opens the index: a Chroma server that is down or stalled is a BackendError naming it, a full disk DiskFull."""
    settings = retrieval.settings
    return IndexStatus(retrieval.index.name, retrieval.index.count(), len(retrieval.chunks), retrieval.embedder.id,
                       settings.chroma_url or str(settings.index_dir))


def sync_index(pack: Pack, settings: Settings, progress: Callable[[IndexProgress], None] | None = None, *,
               shared: Retrieval | None = None) -> SyncReport:
    """Embed the pack's new or changed chunks and drop removed ones (incremental), then open (or build) its
    BM25 index, reporting progress with an ETA. A fresh Retrieval, reusing `shared`'s encoder when given: a
    shared one syncs only once per process."""
    fresh = Retrieval(pack, settings, embedder=shared.embedder if shared is not None else None)
    report = fresh.ensure_index(progress=with_eta(progress) if progress is not None else None)
    assert report is not None, "a fresh Retrieval has not synced yet"
    return report


# ---- new packs ----------------------------------------------------------------------------------------


def build_from_uploads(uploads: Sequence[Upload], name: str, settings: Settings, existing: Iterable[str],
                       progress: Progress | None = None, options: IngestOptions = DEFAULT_OPTIONS) -> Path:
    """Files uploaded in the browser written as pack `name` in the user's packs folder; returns its folder.
    Raises PackError (IngestError) listing every problem, and then nothing was written."""
    return build_pack_from_uploads(uploads, name, settings.packs, existing, max_bytes=MAX_UPLOAD_BYTES,
                                   progress=progress, options=options)


def ingest(paths: Sequence[Path], out: Path, name: str = "", options: IngestOptions = DEFAULT_OPTIONS, *,
           glob: str = "", loader: str = "", loader_args: Mapping[str, Any] | None = None) -> Pack:
    """Files and folders on disk, or what a LangChain loader (`module:factory` called with `loader_args`)
    yields, written as a pack in `out` (checked before anything is read)."""
    check_target(out)  # before reading the files, which may take long
    if loader:
        pack = ingest_loader(loader, loader_args or {}, name or out.name, options)
    else:
        pack = ingest_paths(paths, name=name or out.name, options=options, glob=glob)
    write_pack(pack, out)
    return pack


# ---- rules --------------------------------------------------------------------------------------------


def mine(pack: Pack, config: MiningConfig, progress: Callable[[int, int], None] | None = None) -> tuple[MinedRule, ...]:
    """Closed-path rules mined from the pack's KG (RagscopeError when the walk runs past its time limit)."""
    return mine_rules(pack.triples, config, progress=progress)


def save_mined(path: str, rules: Sequence[Rule], settings: Settings, *, copy_as: str | None = None,
               existing: Iterable[str] = ()) -> SavedRules:
    """`rules` added to the pack at `path`'s rules.jsonl, or, with `copy_as`, to a new copy of it by that name
    in the user's packs folder (how a bundled pack gets rules: it is never changed; an empty or taken name
    is refused). PackError on any problem, and nothing changed."""
    if copy_as is not None:
        return save_rules_as_copy(path, settings.packs, copy_as, existing, rules)
    return save_rules(path, rules)
