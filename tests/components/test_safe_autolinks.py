"""Bare URLs and e-mail addresses in data text are shown as text, not links (issue 26, item 9).

Streamlit's markdown (remark-gfm) autolinks them twice: while parsing the source, and again in a pass
over the parsed text nodes (mdast-util-gfm-autolink-literal, bundled in Streamlit's StreamlitMarkdown
chunk), which sees the text with backslash escapes and HTML entities already decoded. Both are checked:
the first on `md_text`'s output, the second on that output decoded as the parser decodes it.
"""

from __future__ import annotations

import html
import re

import pytest

from components.safe import WORD_JOINER, highlight_terms, md_text

FAMILIES = (
    "http://example.com", "https://example.com/a_b?q=1#x", "HTTPS://EXAMPLE.COM", "see https://x.org.",
    "www.example.com", "Www.Example.com/path", "(see www.example.com)", "go to:www.example.com",
    "me@example.com", "first.last+tag@sub.example.co.uk", "mailto:me@example.com", "xmpp:me@example.com/home",
    "<https://example.com>", "[a](https://x.com)", "*https://x.com*", "https://www.example.com",
    "a sentence, then https://example.com/(paren)_x and more", "line one\nhttps://example.com", "ftp://x.org",
)
# The text pass's patterns (JavaScript's \w is ASCII); matching the prefix or the address at all is
# enough to fail, which is stricter than the pass itself (it also checks the character before).
TEXT_PASS_URL = re.compile(r"(https?://|www(?=\.))[-.\w]+", re.IGNORECASE | re.ASCII)
TEXT_PASS_EMAIL = re.compile(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+", re.ASCII)
# The parse pass reads the source: a literal starts with http://, https://, www. or an address's @.
SOURCE_LITERAL = re.compile(r"https?://|www\.|[-.\w+]@[-\w]", re.IGNORECASE | re.ASCII)
BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation


def parsed_text(source: str) -> str:
    """What a text node holds after parsing `source`: escapes and character references decoded."""
    return html.unescape(BACKSLASH_ESCAPE.sub(r"\1", source))


@pytest.mark.parametrize("text", FAMILIES)
def test_md_text_leaves_no_autolink_literal_and_reads_the_same(text):
    source = md_text(text)
    shown = parsed_text(source)
    assert not SOURCE_LITERAL.search(source), source
    assert not TEXT_PASS_URL.search(shown) and not TEXT_PASS_EMAIL.search(shown), shown
    assert shown.replace(WORD_JOINER, "") == text  # only an invisible character was added


@pytest.mark.parametrize("terms", [["example"], ["https"], ["www"], ["com"], ["example.com", "mail"]])
def test_highlighted_search_terms_do_not_bring_links_back(terms):
    text = "Mail me@example.com or see https://www.example.com and www.example.com."
    source = highlight_terms(text, terms)
    nodes = [parsed_text(part) for part in source.split("**")]  # bold text and the text between: one node each
    assert not SOURCE_LITERAL.search(source)
    assert not any(TEXT_PASS_URL.search(node) or TEXT_PASS_EMAIL.search(node) for node in nodes), nodes
    assert "".join(nodes).replace(WORD_JOINER, "") == text
