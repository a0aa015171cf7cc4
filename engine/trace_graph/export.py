"""The query-specific graph of one round, exported as JSON or GraphML (issue 28) for Gephi, networkx and scripts.

The graph is `graph_at(trace.steps, round)`, the fold Explore draws, so a file and the panel never disagree.
Each node and edge also gets `chunk_ids`: the retrieved chunks (of hits up to that round) its provenance names.
What each method that builds a graph leaves to map:

- **ras**: every edge's provenance is `round i, sub-query '…', chunk <chunk id>` — the chunk it was extracted
  from, so the edge gets that chunk id. Nodes carry no provenance.
- **tog2**: an edge's provenance is the verbalised triple ("A doctoral advisor B"), or for a pruned relation
  stub `relation prune 2.7/10 at depth 1`; neither names a chunk, so edges get none (their facts come from the
  pack KG or its mention links, not from a chunk). Each ToG-2 hit's provenance is the entity whose documents it
  read, so a *node* gets the chunks the run read for it.
- **hybrid**: `pack KG look-up` or `derived by rule <rule id>`; no chunk named, so none.
- rulerag, vanilla and r2ag build no graph.

Generally: an edge gets every retrieved chunk id its provenance names, and for every retrieved doc id it names,
that doc's retrieved chunk ids; a node gets the chunks of hits whose provenance is exactly its id.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import RagscopeError
from engine.files import write_text_atomic
from engine.trace import RetrievalStep, Step, Trace
from engine.trace_graph.fold import GraphView, graph_at, graph_deltas

if TYPE_CHECKING:
    import networkx as nx

FORMATS = (".graphml", ".json")
CHUNK_SEPARATOR = ";"  # GraphML has no list type: chunk_ids is one string there
# XML 1.0 cannot hold these characters at all, not even as character references; GraphML shows U+FFFD instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_ID_CHARS = r"\w#\-"  # an id named in a provenance must not run on into more of these


@dataclass(frozen=True)
class ChunkIndex:
    """The chunk ids of a trace's hits up to one round, to resolve what a provenance names."""

    chunks: tuple[str, ...] = ()
    by_doc: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_provenance: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        return _id_pattern((*self.chunks, *self.by_doc)) if self.chunks else None

    def named_in(self, provenance: str) -> tuple[str, ...]:
        """Chunk ids `provenance` names: chunk ids as they are, doc ids as their retrieved chunks; in text order."""
        if not provenance or self._pattern is None:
            return ()
        found: dict[str, None] = {}
        for match in self._pattern.finditer(provenance):
            found.update(dict.fromkeys(self.by_doc.get(match.group(), (match.group(),))))
        return tuple(found)

    def read_for(self, node_id: str) -> tuple[str, ...]:
        """The chunks of hits whose provenance is exactly `node_id` (ToG-2: the entity it read them for)."""
        return self.by_provenance.get(node_id, ())


def chunk_index(steps: Iterable[Step], iteration: int) -> ChunkIndex:
    chunks: dict[str, None] = {}
    by_doc: dict[str, dict[str, None]] = {}
    by_provenance: dict[str, dict[str, None]] = {}
    for step in steps:
        if isinstance(step, RetrievalStep) and step.iteration <= iteration:
            for hit in step.hits:
                chunks.setdefault(hit.chunk_id)
                by_doc.setdefault(hit.doc_id, {}).setdefault(hit.chunk_id)
                if hit.provenance:
                    by_provenance.setdefault(hit.provenance, {}).setdefault(hit.chunk_id)
    return ChunkIndex(tuple(chunks), {d: tuple(c) for d, c in by_doc.items()},
                      {p: tuple(c) for p, c in by_provenance.items()})


def _id_pattern(ids: Sequence[str]) -> re.Pattern[str]:
    # Longest first, so a chunk id 'doc-1#0' wins over its doc id 'doc-1' at the same place.
    alternatives = "|".join(re.escape(i) for i in sorted(set(ids), key=lambda i: (-len(i), i)) if i)
    return re.compile(f"(?<![{_ID_CHARS}])(?:{alternatives})(?![{_ID_CHARS}])")


# ---- JSON ----------------------------------------------------------------------------------------


def rounds_of(trace: Trace) -> tuple[int, ...]:
    """The rounds a graph can be exported for: every iteration the trace has a step in."""
    return tuple(sorted({s.iteration for s in trace.steps})) or (0,)


def checked_round(trace: Trace, iteration: int | None) -> int:
    """`iteration`, or the trace's last round when None; a round the trace does not have is an error."""
    rounds = rounds_of(trace)
    if iteration is None:
        return rounds[-1]
    if iteration not in rounds:
        raise RagscopeError(f"round {iteration} is not in trace {trace.id}; its rounds: "
                            f"{', '.join(map(str, rounds))}")
    return iteration


def builds_graph(trace: Trace) -> bool:
    """Whether the run's method built a graph at all (a graph_delta step), even an empty one."""
    return bool(graph_deltas(trace.steps))


def graph_json(trace: Trace, iteration: int) -> dict[str, Any]:
    """The graph of round `iteration` as plain JSON data; `score` is null where the method gave none."""
    view = graph_at(trace.steps, iteration)
    index = chunk_index(trace.steps, iteration)
    nodes = [{"id": n.id, "label": n.label, "kind": n.kind, "first_round": n.first_round, "pruned": n.pruned,
              "focus": n.is_focus, "score": _score(n.score), "chunk_ids": list(index.read_for(n.id))}
             for n in view.nodes]
    edges = [{"source": e.source, "relation": e.relation, "target": e.target, "first_round": e.first_round,
              "pruned": e.pruned, "score": _score(e.score), "provenance": e.provenance,
              "chunk_ids": list(index.named_in(e.provenance))} for e in view.edges]
    return {"trace_id": trace.id, "question": trace.question, "method": trace.method, "pack": trace.pack,
            "round": iteration, "nodes": nodes, "edges": edges}


def _score(score: float | None) -> float | None:
    """A float, or None where there is no usable score: strict JSON readers reject NaN and Infinity."""
    return None if score is None or not math.isfinite(score) else float(score)


# ---- GraphML -------------------------------------------------------------------------------------


def to_networkx(data: dict[str, Any]) -> nx.MultiDiGraph:
    """`graph_json` data as a MultiDiGraph (two relations between one pair stay two edges, keyed e0, e1, …:
    GraphML edge ids must be unique, and Gephi drops an edge whose id it has seen). None attributes are left
    out and chunk_ids joined with ';', since GraphML holds neither None nor lists; edges get a `label` (the
    relation), which Gephi shows."""
    import networkx as nx  # heavy: only when a graph is exported

    graph = nx.MultiDiGraph(**{k: v for k, v in data.items() if k not in ("nodes", "edges")})
    for node in data["nodes"]:
        graph.add_node(node["id"], **_attributes(node, skip=("id",)))
    for n, edge in enumerate(data["edges"]):
        graph.add_edge(edge["source"], edge["target"], key=f"e{n}", label=edge["relation"],
                       **_attributes(edge, skip=("source", "target")))
    return graph


def _attributes(record: dict[str, Any], *, skip: Sequence[str]) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k not in skip and v is not None}
    out["chunk_ids"] = CHUNK_SEPARATOR.join(out.get("chunk_ids", ()))
    return out


def graphml_bytes(trace: Trace, iteration: int) -> bytes:
    """The graph of round `iteration` as a UTF-8 GraphML document (key types declared, as Gephi wants)."""
    import networkx as nx

    graph = _xml_safe_graph(to_networkx(graph_json(trace, iteration)))
    out = io.BytesIO()
    nx.write_graphml(graph, out, encoding="utf-8")
    # ElementTree writes a carriage return in text as is, and every XML reader turns it into a newline;
    # as a character reference it survives. The writer's own line ends are plain newlines.
    return _xsd_booleans(out.getvalue().replace(b"\r", b"&#13;"))


_BOOLEAN_KEY = re.compile(rb'<key id="([^"]+)" for="[a-z]+" attr\.name="[^"]*" attr\.type="boolean"')


def _xsd_booleans(document: bytes) -> bytes:
    """networkx writes Python's True/False; GraphML's boolean is XML Schema's, spelled true/false."""
    keys = _BOOLEAN_KEY.findall(document)
    if not keys:
        return document
    data = re.compile(rb'(<data key="(?:%s)">)(True|False)(</data>)' % b"|".join(map(re.escape, keys)))
    return data.sub(lambda m: m[1] + m[2].lower() + m[3], document)


def _xml_safe_graph(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy whose text holds no character XML 1.0 forbids (control characters, lone surrogates): U+FFFD there."""
    import networkx as nx

    def safe(value: Any) -> Any:
        return _NOT_XML.sub("\ufffd", value) if isinstance(value, str) else value

    def clean(attrs: dict[str, Any]) -> dict[str, Any]:
        return {safe(k): safe(v) for k, v in attrs.items()}

    copy = nx.MultiDiGraph(**clean(graph.graph))
    copy.add_nodes_from((safe(n), clean(a)) for n, a in graph.nodes(data=True))
    copy.add_edges_from((safe(u), safe(v), k, clean(a)) for u, v, k, a in graph.edges(keys=True, data=True))
    return copy


# ---- files ---------------------------------------------------------------------------------------


def graph_format(path: Path) -> str:
    """'.graphml' or '.json' from the file name; anything else is an error naming both."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise RagscopeError(f"graph file {str(path)!r} must end in .graphml or .json (got {suffix or 'no suffix'!r})")
    return suffix


def graph_bytes(trace: Trace, iteration: int, fmt: str) -> bytes:
    """The file's content in format `fmt` ('.graphml' or '.json')."""
    if fmt == ".graphml":
        return graphml_bytes(trace, iteration)
    if fmt == ".json":
        return json_text(graph_json(trace, iteration)).encode("utf-8")
    raise RagscopeError(f"unknown graph format {fmt!r}; known: {', '.join(FORMATS)}")


def json_text(data: dict[str, Any]) -> str:
    """Indented JSON, non-ASCII as is; a lone surrogate (which UTF-8 cannot hold) makes it escape everything."""
    import json

    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2) + "\n"
    return text


def write_graph(trace: Trace, iteration: int, path: Path) -> GraphView:
    """Write round `iteration`'s graph to `path` in the format its suffix names (one rename: never half a file);
    returns the view written, for the caller's summary."""
    content = graph_bytes(trace, iteration, graph_format(path))
    write_text_atomic(path, content.decode("utf-8"))
    return graph_at(trace.steps, iteration)


def file_name(trace: Trace, iteration: int, fmt: str) -> str:
    """`graph-<trace id>-round<N>.graphml` or `.json`: what Explore's download buttons offer."""
    return f"graph-{trace.id}-round{iteration}{fmt}"
