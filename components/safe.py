"""Text from documents and models is data: escape it before it reaches st.markdown.

Streamlit's markdown would otherwise interpret emphasis, links, images and HTML-looking tags in
a document; everything that did not come from our own code goes through `md_text`.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~$:])")


def md_text(text: str) -> str:
    """Literal text for st.markdown: HTML entities escaped, markdown syntax backslash-escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


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
