"""Seeded fuzzing of ingestion (issue 15): a hostile file ends in a pack or a clear error, quickly.

Each case writes one file — random bytes and text under every reader's suffix, truncated and nested
HTML, huge attributes, binary named .html, damaged PDFs, hostile JSONL, CSV and Markdown — and
ingests it. The result must be a pack whose text can be written as UTF-8 and loads back, or an
IngestError whose every line names the file; any other exception, or a slow case, is a failure.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from engine.errors import IngestError
from engine.knowledge.ingest import READERS, ingest_paths
from engine.knowledge.loader import load_pack
from engine.knowledge.writer import write_pack
from knowledge.test_ingest import _pdf_bytes  # the hand-written PDF with a text layer

SEED = 15
CASES_PER_KIND = 20
PAGE = ("<!DOCTYPE html><html><head><title>Curie</title><script>var s = '<p>';</script></head><body>"
        "<nav><a href='/'>Home</a></nav><main><h1>Marie Curie</h1><p>Physicist &amp; chemist.</p>"
        "<table><tr><th>Year</th><th colspan=2>Prize</th></tr><tr><td rowspan=2>1903</td><td>Physics</td>"
        "<td>x</td></tr><tr><td>Chemistry</td><td>y</td></tr></table><!-- note --><pre>a\n  b</pre></main>"
        "<footer>(c)</footer></body></html>")
TAGS = ("div", "td", "tr", "table", "nav", "header", "article", "li", "b", "a href='x'", "p", "pre", "form", "title")
SNIPPETS = ("<", ">", "<!--", "-->", "<![", "]]>", "<![CDATA[", "<?", "</", "&#", "&#x", "&amp", "'", '"', "=",
            "<td colspan=100 rowspan=100>", "<th colspan=0>", "\x00", "\ud800", "\r", "\n", "|", "#", "```")

Case = Callable[[random.Random], tuple[str, bytes]]


def _random_bytes(rng: random.Random) -> tuple[str, bytes]:
    return rng.choice(sorted(READERS)), rng.randbytes(rng.randint(0, 20_000))


def _random_text(rng: random.Random) -> tuple[str, bytes]:
    """Text past the binary check: markup, separators, controls, accents and astral characters."""
    alphabet = "ab .,?!#|-`\t\n\r\"'<>&;=[]{}:/\x01\x0b\x1c\u2028\u00e9\u4e2d\U0001d11e" + "".join(SNIPPETS[:12])
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50_000)))
    return rng.choice(sorted(READERS)), text.encode()


def _truncated_html(rng: random.Random) -> tuple[str, bytes]:
    page = (PAGE * rng.randint(1, 50)).encode()
    return ".html", page[: rng.randint(0, len(page))]


def _spliced_html(rng: random.Random) -> tuple[str, bytes]:
    """The page with hostile snippets spliced in, each repeated up to 20,000 times."""
    page = PAGE
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(page))
        page = page[:at] + rng.choice(SNIPPETS) * rng.choice((1, 7, 500, 20_000)) + page[at:]
    return ".html", page.encode("utf-8", "surrogatepass")


def _nested_html(rng: random.Random) -> tuple[str, bytes]:
    tag = rng.choice(TAGS)
    depth = rng.choice((1_000, 10_000))
    closing = f"</{tag.split()[0]}>" * depth if rng.random() < 0.5 else ""
    return ".html", (f"<{tag}>" * depth + "deep text" + closing).encode()


def _huge_attribute(rng: random.Random) -> tuple[str, bytes]:
    quote = rng.choice(("'", '"', ""))
    value = rng.choice(("x", "&amp;", ">", "<", " ")) * rng.choice((100_000, 1_000_000))
    return ".html", f"<p>before</p><a title={quote}{value}{quote}>link</a><p>after</p>".encode()


def _binary_html(rng: random.Random) -> tuple[str, bytes]:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(5_000)
    return rng.choice((".html", ".htm")), rng.choice((png, rng.randbytes(5_000), b"\x00" * 5_000))


def _damaged_pdf(rng: random.Random) -> tuple[str, bytes]:
    pdf = bytearray(_pdf_bytes(["Radium glows.", "Polonium too."]))
    damage = rng.choice(("truncate", "flip", "nest", "length"))
    if damage == "truncate":
        return ".pdf", bytes(pdf[: rng.randint(0, len(pdf))])
    if damage == "flip":
        for _ in range(rng.randint(1, 20)):
            pdf[rng.randrange(len(pdf))] = rng.randrange(256)
        return ".pdf", bytes(pdf)
    if damage == "nest":
        return ".pdf", bytes(pdf).replace(b"/Count 1", b"/Count " + b"[" * 50_000)
    return ".pdf", bytes(pdf).replace(b"/Length ", b"/Length 9" + b"9" * rng.randint(1, 5_000) + b" ", 1)


def _hostile_jsonl(rng: random.Random) -> tuple[str, bytes]:
    good = json.dumps({"id": "a", "title": "A", "text": "alpha"})
    bad = rng.choice((
        "[" * 100_000, '{"id": "b", "title": "B", "text": ' + "[" * 5_000 + "]" * 5_000 + "}",
        '{"id": "b", "title": "B", "text": "x", "n": ' + "9" * 5_000 + "}",
        '{"id": "b", "title": "B", "text": "\\ud800"}', '{"id": "b", "title": "B", "text": "\\udfff\\ud800"}',
        '{"id": 1e999, "title": "B", "text": "x"}', '{"id": "b", "title": "B", "text": "x", "entities": [[[]]]}',
        good[: rng.randint(0, len(good))], "\ufeff" + good,
        '{"id": "b", "title": "B", "text": "' + "x" * 100_000 + '"}',
    ))
    raw = (good + "\n" + bad + "\n").encode("utf-8", "surrogatepass")
    return ".jsonl", raw if rng.random() < 0.7 else raw.replace(b"alpha", b"alp\xffha")


def _hostile_triples(rng: random.Random) -> tuple[str, bytes]:
    suffix = rng.choice((".csv", ".tsv"))
    sep = "," if suffix == ".csv" else "\t"
    rows = [sep.join(rng.choice(('A', '"', '""', 'x' * 10_000, '\x00', '"a\nb"', '', '#', '\r')) for _ in
                     range(rng.randint(1, 6))) for _ in range(rng.randint(1, 200))]
    return suffix, ("\n".join(rows) + "\n").encode()


def _hostile_markdown(rng: random.Random) -> tuple[str, bytes]:
    lines = [rng.choice(("#", "# ", "###### x ######", "# " + "#" * 5_000, "| a | b |", "|---|---|",
                         "| " + " | ".join(["h"] * 400) + " |", "```", "~~~", "", "text " * 300, "    code"))
             for _ in range(rng.randint(1, 3_000))]
    return rng.choice((".md", ".markdown", ".txt")), "\n".join(lines).encode()


KINDS: dict[str, Case] = {
    "random-bytes": _random_bytes, "random-text": _random_text, "truncated-html": _truncated_html,
    "spliced-html": _spliced_html, "nested-html": _nested_html, "huge-attribute": _huge_attribute,
    "binary-html": _binary_html,
    "damaged-pdf": _damaged_pdf, "hostile-jsonl": _hostile_jsonl, "hostile-triples": _hostile_triples,
    "hostile-markdown": _hostile_markdown,
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_file_ends_in_a_pack_or_a_clear_error_quickly(kind, tmp_path):
    rng = random.Random(f"{SEED}-{kind}")
    for case in range(CASES_PER_KIND):
        suffix, data = KINDS[kind](rng)
        path = tmp_path / f"case{case}{suffix}"
        path.write_bytes(data)
        try:
            pack = ingest_paths([path], "fuzz")
        except IngestError as exc:
            assert exc.problems and all(p.startswith(str(path)) for p in exc.problems), (kind, case, exc.problems)
        else:
            # Everything in the pack must be writable as UTF-8 and read back the same.
            assert load_pack(write_pack(pack, tmp_path / f"pack{case}")).documents == pack.documents, (kind, case)
