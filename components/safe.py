"""Text from documents and models is data: escape it before it reaches st.markdown.

Streamlit's markdown would otherwise interpret emphasis, links, images and HTML-looking tags in
a document; everything that did not come from our own code goes through `md_text`.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~$:])")
# GFM autolinks bare `http://`, `https://`, `www.` and e-mail addresses twice: while parsing the source
# (escapes already stop that) and again in a pass over the parsed text (remark-gfm's
# mdast-util-gfm-autolink-literal), which sees the text with escapes and entities decoded. An invisible
# WORD JOINER inside each such literal stops both, and the text reads and wraps as before (issue 26).
WORD_JOINER = "\u2060"
_AUTOLINK_LITERAL = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)


def md_text(text: str) -> str:
    """Literal text for st.markdown: HTML entities escaped, markdown syntax backslash-escaped, and no
    bare URL or e-mail address turned into a link."""
    unlinked = _AUTOLINK_LITERAL.sub(WORD_JOINER, text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(unlinked, quote=False))


def highlight_terms(text: str, terms: list[str]) -> str:
    """Markdown with the search terms in bold; the text itself stays escaped."""
    words = sorted({t for t in terms if len(t) > 2}, key=len, reverse=True)
    if not words:
        return md_text(text)
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(md_text(text[last:match.start()]))
        out.append(f"**{md_text(match.group(0))}**")
        last = match.end()
    out.append(md_text(text[last:]))
    return "".join(out)
