"""RAS's offline text-to-triples against a pack's gold triples (issue 7).

Usage: python bench/extractor.py [PACK_DIR]   (default: the demo pack)

Gold = the pack's triples whose head and tail both occur in the text of one of the head's or tail's
documents (a triple no page states cannot be extracted). Precision counts an extracted triple as right
when it is a gold triple of the pack (exact), or when its entity pair is related in the pack at all
(pair); recall is over the stated gold triples.
"""

from __future__ import annotations

import re
import time

from common import pack_path
from engine.graph.kg import KnowledgeGraph
from engine.knowledge.chunking import chunk_documents
from engine.knowledge.loader import load_pack
from engine.methods.ras.extractor import OfflineExtractor
from engine.retrieval.embedder import load_embedder
from engine.trace import Hit


def stated(pack, text_of: dict[str, str]) -> set[tuple[str, str, str]]:  # noqa: ANN001
    """Gold triples a page of the pack states: both ends named in the text of a page about one end."""
    gold = set()
    for t in pack.triples:
        pages = [text_of.get(t.head, ""), text_of.get(t.tail, "")]
        if any(re.search(re.escape(t.head), p, re.I) and re.search(re.escape(t.tail), p, re.I) for p in pages):
            gold.add((t.head, t.relation, t.tail))
    return gold


def main() -> None:
    pack = load_pack(pack_path())
    kg = KnowledgeGraph(pack.triples, [d.title for d in pack.documents])
    extractor = OfflineExtractor(kg, load_embedder(), tuple(sorted(pack.relations)))
    chunks = chunk_documents(pack.documents)
    start = time.perf_counter()
    found: set[tuple[str, str, str]] = set()
    for c in chunks:
        hit = Hit(doc_id=c.doc_id, chunk_id=c.id, title=c.title, text=c.text, score=1.0, rank=1)
        found |= {(t.head, t.relation, t.tail) for t in extractor.extract(hit).triples}
    took = time.perf_counter() - start
    gold = stated(pack, {d.title: d.text for d in pack.documents})
    every = {(t.head, t.relation, t.tail) for t in pack.triples}
    pairs = {frozenset((h, t)) for h, _, t in every}
    gold_pairs = {frozenset((h, t)) for h, _, t in gold}
    exact = found & every
    paired = {x for x in found if frozenset((x[0], x[2])) in pairs}
    print(f"{len(chunks)} chunks, {len(found)} triples extracted in {took:.1f} s "
          f"({1000 * took / max(len(chunks), 1):.0f} ms a chunk); {len(gold)} gold triples stated in the pages")
    print(f"exact (h, r, t): precision {len(exact) / max(len(found), 1):.3f}  "
          f"recall {len(found & gold) / max(len(gold), 1):.3f}")
    print(f"entity pair:     precision {len(paired) / max(len(found), 1):.3f}  "
          f"recall {len({frozenset((h, t)) for h, _, t in found} & gold_pairs) / max(len(gold_pairs), 1):.3f}")


if __name__ == "__main__":
    main()
