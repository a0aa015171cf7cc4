"""Web page processing: sentence units, 3-sentence chunks, tables as Markdown, ranking and the table cap."""

from __future__ import annotations

from engine.knowledge.records import Document, Page
from engine.methods.hybrid.pages import (
    PageTable,
    TextVectors,
    dedupe,
    document_chunks,
    group_units,
    is_question,
    page_parts,
    rank_chunks,
    rank_tables,
    sentence_units,
    tables_block,
)

HTML = """<html><head><title>Rivers | Site</title><script>var x = 1;</script></head><body>
<nav><a href="/">Home</a> <a href="/rivers">Rivers</a></nav>
<main><h1>Rivers of Europe</h1>
<p>The Danube is the second-longest river in Europe. It flows through ten countries. Its source is in the
Black Forest. It ends in the Black Sea.</p>
<p>How long is the Rhine? The Rhine is about 1,230 kilometres long. It flows into the North Sea.</p>
<table><caption>Lengths</caption><tr><th>River</th><th>Length (km)</th></tr>
<tr><td>Danube</td><td>2850</td></tr><tr><td>Rhine</td><td>1230</td></tr></table>
</main><footer>Copyright 2024 Site. All rights reserved.</footer></body></html>"""


def test_a_question_sentence_keeps_the_answer_that_follows_it() -> None:
    units = sentence_units("Intro here. How long is the Rhine? About 1,230 km. It ends in the sea. More text.", cap=25)
    assert [u.kind for u in units] == ["sentence", "question+cont", "sentence", "sentence"]
    assert units[1].text == "How long is the Rhine? About 1,230 km."


def test_a_long_sentence_is_split_into_pieces_at_the_cap() -> None:
    units = sentence_units("word " * 100, cap=200)
    assert [u.kind for u in units] == ["split_piece"] * 3 and all(len(u.text) <= 200 for u in units)


def test_a_long_sentence_is_cut_between_words_never_inside_one() -> None:
    # issue 27: a cut at character 200 split 'Buzz Aldrin' and the reader answered 'Buzz Al'
    sentence = ("The hive inspection on the third Saturday of May was led by the apiarist Henrietta Wolkenstein-"
                "Ravensburg together with her apprentices from the valley cooperative, who counted the frames of "
                "capped brood, marked the queen with a dot of paint and recorded the weight of every super")
    units = sentence_units(sentence, cap=200)
    words = sentence.split()
    assert [u.kind for u in units] == ["split_piece", "split_piece"] and all(len(u.text) <= 200 for u in units)
    assert " ".join(u.text for u in units).split() == words


def test_a_word_longer_than_the_cap_is_still_cut_at_the_cap() -> None:
    units = sentence_units("x" * 450, cap=200)
    assert [len(u.text) for u in units] == [200, 200, 50]


def test_question_detection_is_plain_prefix_matching_as_the_paper() -> None:
    assert is_question("Isabel wrote it.") and is_question("It ended?") and not is_question("The end.")


def test_units_group_into_chunks_of_three_and_duplicates_go() -> None:
    units = sentence_units("One is here. Two is here. Three is here. Four is here.")
    chunks = group_units("p", "T", units, "page")
    assert [c.text for c in chunks] == ["One is here. Two is here. Three is here.", "Four is here."]
    assert [c.text for c in dedupe(chunks + chunks)] == [c.text for c in chunks]


def test_a_page_loses_scripts_navigation_and_footer_and_keeps_its_table_as_markdown() -> None:
    parts = page_parts(Page("p1", "https://x", "", HTML))
    text = " ".join(c.text for c in parts.chunks)
    assert "Danube" in text and "var x" not in text and "Home" not in text and "Copyright" not in text
    assert "| River | Length (km) |" not in text  # tables travel separately
    (table,) = parts.tables
    assert table.markdown.startswith("Page name: Rivers | Site") and "| Danube | 2850 |" in table.markdown
    assert table.row_sentences()[0] == "Rivers | Site — River: Danube; Length (km): 2850."


def test_chunks_rank_by_cosine_and_tables_are_cut_at_the_cap(demo_workbench) -> None:
    vectors = TextVectors(demo_workbench.retrieval.embedder)
    docs = [Document("a", "Danube", "The Danube flows into the Black Sea."),
            Document("b", "Cake", "A sponge cake needs eggs, flour and sugar.")]
    chunks = [c for d in docs for c in document_chunks(d)]
    ranked = rank_chunks("Where does the Danube end?", chunks, vectors, k=1)
    assert [c.source for c, _ in ranked] == ["a"]
    tables = [PageTable(f"t{n}", "p", title, f"Page name: {title}\n" + "| a |\n" * 80, ("a",), (("x",),))
              for n, title in enumerate(["Cake recipes", "River lengths"])]
    kept = rank_tables("How long is the Danube river?", tables, vectors, max_chars=300)
    assert kept[0].table.title == "River lengths" and kept[0].in_prompt and kept[0].cut_at == 300
    assert not kept[1].in_prompt
    assert len(tables_block(kept)) <= 300 + len("### Table 1:\n")


# issue 15: pages.jsonl is parsed per question; pages like this once took minutes or tens of GB (bench/hostile.py
# times it)
_SPANS = "<table>" + ("<tr>" + '<td colspan="100" rowspan="100">abc</td>' * 20 + "</tr>") * 100 + "</table>"
HOSTILE_PAGE = "<nav>" * 2_000 + "<main><p>Kept. It is here.</p>" + _SPANS + "</main><![<![" + "<!--" * 50_000


def test_a_hostile_stored_page_is_read_at_query_time_with_bounded_parts() -> None:
    parts = page_parts(Page("hostile", "", "Hostile", HOSTILE_PAGE))
    assert parts.chunks[0].text.startswith("Kept. It is here.")
    total = sum(len(c.text) for c in parts.chunks) + sum(len(t.markdown) for t in parts.tables)
    assert total <= 5 * len(HOSTILE_PAGE)
