"""Turn a (possibly messy) web page into its title, main text and tables, with tables as Markdown."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction
from bs4.element import NavigableString, PageElement, Tag

# Elements whose content is never text for a reader.
NON_TEXT_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "select", "button",
                 "textarea", "object", "embed", "canvas", "map")
# Site chrome; its text (menus, cookie banners, footers) would only mislead retrieval.
CHROME_TAGS = ("nav", "header", "footer", "aside", "form")
# Metadata that must not leak into the text of a fragment without <body>; the title is read first.
HEAD_TAGS = ("title", "meta", "link", "base")
# Paragraph-level blocks end with a blank line, so text splitting can cut there.
PARAGRAPH_TAGS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "ul", "ol",
                            "dl", "figure", "hr", "table", "section", "article", "main", "address",
                            "details", "fieldset"})
LINE_TAGS = frozenset({"div", "li", "dt", "dd", "tr", "td", "th", "caption", "figcaption", "summary",
                       "center", "legend", "body", "thead", "tbody", "tfoot", "option", "label"})
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
MAX_SPAN = 100  # colspan/rowspan beyond this is a broken page, not a table layout
_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
_CELL_TAGS = ("td", "th")


@dataclass(frozen=True)
class Table:
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @property
    def markdown(self) -> str:
        """GitHub-style Markdown; the caption, when there is one, is a line above the table."""
        lines = [f"Table: {self.caption}"] if self.caption else []
        lines.append(_markdown_row(self.header))
        lines.append("| " + " | ".join("---" for _ in self.header) + " |")
        lines.extend(_markdown_row(row) for row in self.rows)
        return "\n".join(lines)


@dataclass(frozen=True)
class HtmlContent:
    title: str
    text: str  # main text; headings as `#` lines, each table replaced by its Markdown
    tables: tuple[Table, ...]  # the tables of the main text, in reading order


def html_to_content(html: str) -> HtmlContent:
    """Parse `html` with the stdlib parser (tolerant of unclosed tags) and extract its content."""
    content = _extract(html, drop_chrome=True)
    if not content.text:
        # An unclosed <header> or <nav> can swallow the whole page; then keep the chrome.
        content = _extract(html, drop_chrome=False)
    return content


def _extract(html: str, drop_chrome: bool) -> HtmlContent:
    soup = BeautifulSoup(html, "html.parser")
    title = _page_title(soup)
    _drop_noise(soup, NON_TEXT_TAGS + CHROME_TAGS if drop_chrome else NON_TEXT_TAGS)
    root = _main_region(soup)
    tables: list[Table] = []
    text = _render(root, tables)
    return HtmlContent(title=title, text=text, tables=tuple(tables))


def _markdown_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cell.replace("|", r"\|") for cell in cells) + " |"


def _clean(text: str) -> str:
    return _SPACE.sub(" ", _INVISIBLE.sub("", text)).strip()


def _page_title(soup: BeautifulSoup) -> str:
    title = soup.find("title")
    if isinstance(title, Tag):
        # Only the title's own strings: an unclosed <title> may have swallowed the page.
        text = _clean(" ".join(str(s) for s in title.find_all(string=True, recursive=False)))
        if text:
            return text
    heading = soup.find("h1")
    return _clean(heading.get_text(" ")) if isinstance(heading, Tag) else ""


def _drop_noise(soup: BeautifulSoup, dropped: tuple[str, ...]) -> None:
    """Remove comments, declarations and non-content elements in place (our own parse tree)."""
    for node in soup.find_all(string=lambda s: isinstance(s, (Comment, Declaration, Doctype,
                                                              ProcessingInstruction))):
        node.extract()
    for tag in soup.find_all(HEAD_TAGS):
        # Unwrap rather than drop when an unclosed <title> swallowed the content after it.
        for string in tag.find_all(string=True, recursive=False):
            string.extract()
        tag.unwrap()
    for tag in soup.find_all(dropped):
        if tag.decomposed or not _is_noise(tag):
            continue
        tag.decompose()
    for tag in soup.find_all(_is_hidden):
        if not tag.decomposed:
            tag.decompose()


def _is_noise(tag: Tag) -> bool:
    # Chrome that contains the main region is an unclosed tag that swallowed the page.
    if tag.name in CHROME_TAGS and (tag.find(["main", "article"]) or tag.find(attrs={"role": "main"})):
        return False
    # An <article>'s own <header>/<footer> carry its heading and byline, not site chrome.
    if tag.name in ("header", "footer") and tag.find_parent("article") is not None:
        return False
    # ASP.NET-style pages wrap the whole page in one <form>; dropping it would drop everything.
    if tag.name == "form" and tag.find(["p", "table", "article", "main", *HEADING_LEVELS]):
        return False
    return True


def _is_hidden(tag: Tag) -> bool:
    # Inline display:none is kept on purpose: tabs and accordions often hide real content that way.
    return tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true"


def _main_region(soup: BeautifulSoup) -> Tag:
    """The page's main content: <main>, then role=main, then <article>, else the whole page."""
    for found in (soup.find("main"), soup.find(attrs={"role": "main"}), soup.find("article")):
        if isinstance(found, Tag) and _clean(found.get_text(" ")):
            return found
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup


def _walk(node: Tag, skip: Callable[[Tag], bool]) -> Iterator[tuple[str, PageElement]]:
    """Yield ("enter"|"exit", tag) and ("text", string) in document order, without recursion.

    Real pages with thousands of unclosed tags nest deeper than Python's recursion limit.
    """
    stack: list[tuple[str, PageElement]] = [("visit", child) for child in reversed(node.contents)]
    while stack:
        action, element = stack.pop()
        if action == "exit":
            yield "exit", element
        elif isinstance(element, NavigableString):
            yield "text", element
        elif isinstance(element, Tag) and not skip(element):
            yield "enter", element
            stack.append(("exit", element))
            stack.extend(("visit", child) for child in reversed(element.contents))
        elif isinstance(element, Tag):
            yield "skipped", element


class _Lines:
    """Accumulates inline text into lines; block boundaries become line or paragraph breaks."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.current: list[str] = []

    def add(self, text: str) -> None:
        self.current.append(text)

    def add_pre(self, text: str) -> None:
        """Preformatted text keeps its own line breaks and indentation."""
        first, *rest = text.split("\n")
        self.current.append(first)
        for line in rest:
            self.end_pre_line()
            self.current = [line]

    def end_pre_line(self) -> None:
        self.lines.append("".join(self.current).rstrip())
        self.current = []

    def breaks(self, paragraph: bool = False) -> None:
        line = _SPACE.sub(" ", "".join(self.current)).strip()
        self.current = []
        if line:
            self.lines.append(line)
        if paragraph and self.lines and self.lines[-1] != "":
            self.lines.append("")

    def block(self, text: str) -> None:
        self.breaks(paragraph=True)
        self.lines.extend(text.split("\n"))
        self.lines.append("")

    def text(self) -> str:
        self.breaks(paragraph=True)
        return _BLANK_LINES.sub("\n\n", "\n".join(self.lines)).strip()


def _render(root: Tag, tables: list[Table]) -> str:
    """Main text of `root`: blocks become line breaks, data tables become Markdown blocks."""
    out = _Lines()
    pre_depth = 0

    def is_table(tag: Tag) -> bool:
        return tag.name == "table" and _is_data_table(tag)

    for event, element in _walk(root, is_table):
        if event == "text":
            text = _INVISIBLE.sub("", str(element))
            out.add_pre(text) if pre_depth else out.add(_SPACE.sub(" ", text))
        elif event == "skipped":
            table = _parse_table(element)
            if table is not None:
                tables.append(table)
                out.block(table.markdown)
        elif event == "enter":
            pre_depth += element.name == "pre"
            _enter(element, out)
        else:
            pre_depth -= element.name == "pre"
            if element.name == "pre" and out.current:
                out.end_pre_line()
            if element.name in PARAGRAPH_TAGS or element.name in LINE_TAGS:
                out.breaks(paragraph=element.name in PARAGRAPH_TAGS)
    return out.text()


def _enter(tag: Tag, out: _Lines) -> None:
    if tag.name == "br":
        out.breaks()
    elif tag.name in PARAGRAPH_TAGS or tag.name in LINE_TAGS:
        out.breaks(paragraph=tag.name in PARAGRAPH_TAGS)
        # Headings stay visible as Markdown so downstream splitting can cut sections there.
        if tag.name in HEADING_LEVELS:
            out.add("#" * HEADING_LEVELS[tag.name] + " ")


def _is_data_table(table: Tag) -> bool:
    """Layout tables (nested tables, role=presentation, a single cell) are read as plain blocks."""
    if str(table.get("role", "")).lower() in ("presentation", "none"):
        return False
    if table.find("table") is not None:
        return False
    return len(table.find_all(_CELL_TAGS, limit=2)) >= 2


def _parse_table(table: Tag) -> Table | None:
    rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
    grid_rows = [_row_cells(row, table) for row in rows] if rows else [_loose_cells(table)]
    header_count = _header_row_count(rows, grid_rows)
    grid = _expand_spans(grid_rows)
    width = max((len(row) for row in grid), default=0)
    if width == 0:
        return None
    grid = [row + [""] * (width - len(row)) for row in grid]
    header = _merge_header(grid[:header_count]) if header_count else \
        tuple(f"col{i}" for i in range(1, width + 1))
    body = tuple(tuple(row) for row in grid[header_count:] if any(row))
    caption_tag = table.find("caption")
    caption = _clean(caption_tag.get_text(" ")) if isinstance(caption_tag, Tag) else ""
    if not body and not header_count:
        return None
    return Table(caption=caption, header=header, rows=body)


def _row_cells(row: Tag, table: Tag) -> list[tuple[Tag, str]]:
    """Cells of one row; unclosed <td>s nest inside each other with html.parser, so flatten."""
    cells = [cell for cell in row.find_all(_CELL_TAGS)
             if cell.find_parent("tr") is row and cell.find_parent("table") is table]
    return [(cell, _cell_text(cell)) for cell in cells]


def _loose_cells(table: Tag) -> list[tuple[Tag, str]]:
    """A table with cells but no <tr> at all: read it as one row."""
    cells = [c for c in table.find_all(_CELL_TAGS) if c.find_parent("table") is table]
    return [(cell, _cell_text(cell)) for cell in cells]


def _cell_text(cell: Tag) -> str:
    """The cell's own text, leaving out cells and rows that an unclosed tag nested inside it."""
    parts: list[str] = []
    for event, element in _walk(cell, lambda t: t.name in ("td", "th", "tr", "table")):
        if event == "text":
            parts.append(str(element))
        elif element.name == "br" or element.name in PARAGRAPH_TAGS or element.name in LINE_TAGS:
            parts.append(" ")  # a line break inside a cell reads as a space in one Markdown row
    return _clean("".join(parts))


def _header_row_count(rows: list[Tag], grid_rows: list[list[tuple[Tag, str]]]) -> int:
    """Leading rows inside <thead>, or made only of <th> cells, form the header."""
    count = 0
    for row, cells in zip(rows, grid_rows):
        in_thead = row.find_parent("thead") is not None
        all_th = bool(cells) and all(cell.name == "th" for cell, _ in cells)
        if not (in_thead or all_th):
            break
        count += 1
    # A table made only of <th> rows is a key/value sheet: keep just its first row as header.
    return 1 if count == len(grid_rows) and count > 1 else count


def _span(cell: Tag, name: str) -> int:
    digits = re.match(r"\s*(\d+)", str(cell.get(name, "1")))
    return max(1, min(int(digits.group(1)) if digits else 1, MAX_SPAN))


def _expand_spans(grid_rows: list[list[tuple[Tag, str]]]) -> list[list[str]]:
    """Repeat colspan cells across columns and rowspan cells down rows."""
    carried: dict[int, tuple[str, int]] = {}  # column -> (text, rows still to fill)
    grid: list[list[str]] = []
    for cells in grid_rows:
        row: list[str] = []
        queue = list(cells)
        while queue or any(col >= len(row) for col in carried):
            col = len(row)
            if col in carried:
                text, left = carried.pop(col)
                row.append(text)
                if left > 1:
                    carried[col] = (text, left - 1)
                continue
            if not queue:
                row.append("")
                continue
            cell, text = queue.pop(0)
            for offset in range(_span(cell, "colspan")):
                if _span(cell, "rowspan") > 1:
                    carried[col + offset] = (text, _span(cell, "rowspan") - 1)
                row.append(text)
        grid.append(row)
    return grid


def _merge_header(rows: list[list[str]]) -> tuple[str, ...]:
    """Several header rows (grouped columns) become one: "Group / Sub"."""
    merged = []
    for column in zip(*rows):
        parts: list[str] = []
        for part in column:
            if part and part not in parts:
                parts.append(part)
        merged.append(" / ".join(parts))
    return tuple(merged)
