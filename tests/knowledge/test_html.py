"""A web page becomes its title, main text and tables; chrome and scripts are dropped, messy HTML is read."""

from __future__ import annotations

from engine.knowledge.html import HtmlContent, Table, html_to_content

PAGE = """<!DOCTYPE html>
<html><head><title>Marie Curie &amp; Science</title>
<style>p { color: red }</style><script>var s = "</div><p>not text</p>";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<header><div class="logo">Encyclopedia</div></header>
<!-- a comment that must not show -->
<main>
  <h1>Marie   Curie</h1>
  <p>Marie Curie was a physicist
     and chemist.&nbsp;She won two Nobel&nbsp;Prizes.</p>
  <p>First line<br>second line</p>
  <table>
    <caption>Nobel Prizes</caption>
    <thead><tr><th>Year</th><th>Field</th></tr></thead>
    <tbody><tr><td>1903</td><td>Physics</td></tr><tr><td>1911</td><td>Chemistry</td></tr></tbody>
  </table>
  <ul><li>Polonium</li><li>Radium</li></ul>
  <form><input name="q"><button>Search</button></form>
  <noscript>Enable JavaScript</noscript>
  <template><p>template text</p></template>
  <svg><text>svg text</text></svg>
</main>
<aside>Related: Pierre Curie</aside>
<footer>© 2024 Encyclopedia</footer>
</body></html>"""


def test_the_title_comes_from_the_title_element_with_entities_decoded():
    assert html_to_content(PAGE).title == "Marie Curie & Science"


def test_the_title_falls_back_to_the_first_h1():
    assert html_to_content("<body><h1>Only <i>a</i> heading</h1><p>x</p></body>").title == "Only a heading"


def test_scripts_styles_chrome_forms_and_comments_are_dropped():
    text = html_to_content(PAGE).text
    for absent in ("not text", "color", "Home", "Encyclopedia", "Pierre", "Search", "JavaScript",
                   "template text", "svg text", "comment", "©"):
        assert absent not in text


def test_blocks_become_lines_and_whitespace_and_entities_are_normalised():
    text = html_to_content(PAGE).text
    assert text.startswith("# Marie Curie\n\nMarie Curie was a physicist and chemist. She won two Nobel Prizes.")
    assert "First line\nsecond line" in text
    assert "Polonium\nRadium" in text


def test_a_table_is_extracted_and_replaced_in_the_text_by_its_markdown():
    content = html_to_content(PAGE)
    assert content.tables == (Table(caption="Nobel Prizes", header=("Year", "Field"),
                                    rows=(("1903", "Physics"), ("1911", "Chemistry"))),)
    assert content.tables[0].markdown == (
        "Table: Nobel Prizes\n| Year | Field |\n| --- | --- |\n| 1903 | Physics |\n| 1911 | Chemistry |")
    assert content.tables[0].markdown in content.text
    assert content.text.index("second line") < content.text.index("| Year |") < content.text.index("Polonium")


def test_a_table_without_header_cells_gets_generic_column_names():
    table = html_to_content("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>").tables[0]
    assert table.header == ("col1", "col2")
    assert table.rows == (("a", "b"), ("c", ""))


def test_a_first_row_of_th_cells_is_the_header_even_without_thead():
    table = html_to_content("<table><tr><th>k</th><th>v</th></tr><tr><th>x</th><td>1</td></tr></table>").tables[0]
    assert table.header == ("k", "v")
    assert table.rows == (("x", "1"),)


def test_pipes_in_cells_are_escaped_in_markdown():
    table = html_to_content("<table><tr><th>a|b</th><th>c</th></tr><tr><td>1 | 2</td><td>3</td></tr></table>"
                            ).tables[0]
    assert table.rows == (("1 | 2", "3"),)
    assert "| a\\|b | c |" in table.markdown
    assert "| 1 \\| 2 | 3 |" in table.markdown


def test_colspan_repeats_a_cell_and_rowspan_carries_it_down():
    html = ("<table><tr><th rowspan=2>Year</th><th colspan=2>Medals</th></tr>"
            "<tr><th>Gold</th><th>Silver</th></tr>"
            "<tr><td>2014</td><td colspan='2'>none</td></tr>"
            "<tr><td rowspan=2>2018</td><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>")
    table = html_to_content(html).tables[0]
    assert table.header == ("Year", "Medals / Gold", "Medals / Silver")
    assert table.rows == (("2014", "none", "none"), ("2018", "1", "2"), ("2018", "3", "4"))


def test_a_span_that_would_blow_the_table_up_is_ignored():
    table = html_to_content('<table><tr><td colspan="999999">x</td><td>y</td></tr></table>').tables[0]
    assert table == Table(caption="", header=("col1", "col2"), rows=(("x", "y"),))


def test_unclosed_cells_and_rows_are_read_as_a_proper_grid():
    html = "<table><tr><th>A<th>B<tr><td>1<td>2<tr><td>3<td>4</table><p>after"
    content = html_to_content(html)
    assert content.tables == (Table(caption="", header=("A", "B"), rows=(("1", "2"), ("3", "4"))),)
    assert content.text.endswith("after")


def test_a_layout_table_is_read_as_text_and_its_nested_data_table_as_a_table():
    html = ("<table><tr><td>Left column text</td><td>"
            "<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>"
            "</td></tr></table>")
    content = html_to_content(html)
    assert [t.header for t in content.tables] == [("k", "v")]
    assert content.text.startswith("Left column text")
    assert "| k | v |" in content.text


def test_main_or_article_is_preferred_over_the_rest_of_the_page():
    html = "<body><div>Sidebar junk</div><article><p>The story.</p></article><div>More junk</div></body>"
    assert html_to_content(html).text == "The story."
    html = '<body><div>junk</div><div role="main"><p>Main part.</p></div></body>'
    assert html_to_content(html).text == "Main part."


def test_an_articles_own_header_is_kept():
    html = "<article><header><h1>Headline</h1></header><p>Body.</p></article>"
    assert html_to_content(html).text == "# Headline\n\nBody."


def test_an_unclosed_header_that_swallows_the_page_does_not_empty_it():
    content = html_to_content("<header><p>Intro<p>Everything else is inside the header")
    assert "Everything else is inside the header" in content.text


def test_a_page_wrapped_in_one_form_keeps_its_content():
    html = '<form id="aspnetForm"><h2>Report</h2><p>Quarterly numbers.</p><input type="submit"></form>'
    assert html_to_content(html).text == "## Report\n\nQuarterly numbers."


def test_hidden_elements_are_dropped():
    html = '<p>seen</p><div hidden>secret</div><span aria-hidden="true">icon</span>'
    assert html_to_content(html).text == "seen"


def test_preformatted_text_keeps_its_lines_and_indentation():
    text = html_to_content("<pre>def f():\n    return 1</pre>").text
    assert text == "def f():\n    return 1"


def test_very_deep_unclosed_nesting_does_not_hit_the_recursion_limit():
    html = "<div><b>" * 3000 + "deep text"
    assert html_to_content(html).text == "deep text"


def test_empty_or_textless_input_gives_empty_content():
    assert html_to_content("") == HtmlContent(title="", text="", tables=())
    assert html_to_content("<script>x</script><style>y</style>").text == ""


def test_malformed_entities_and_invisible_characters_are_tolerated():
    text = html_to_content("<p>Fish &amp chips &copy 2024 &bogus; zero\u200bwidth &#x41;</p>").text
    assert text.startswith("Fish & chips © 2024 &bogus")  # bs4 drops an unknown entity's ';'
    assert text.endswith(" zerowidth A")
