"""Turn a (possibly messy) web page into its title, main text and tables, with tables as Markdown."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, ProcessingInstruction
from bs4.element import NavigableString, PageElement, Tag
from bs4.exceptions import ParserRejectedMarkup

log = logging.getLogger(__name__)

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
# Spans and padding may make a table's Markdown at most this many times the size of its cells as
# written; unbounded, colspan/rowspan 100 turned kilobytes of HTML into gigabytes (issue 15).
TABLE_GROWTH = 4
# html.parser re-reads the rest of the page for every construct it cannot close. A rest shorter
# than this costs little; for longer ones the repairs below may re-read the page this many times.
MAX_UNPARSED_TAIL = 4096
REPAIR_PASSES = 4
_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
_CELL_TAGS = ("td", "th")
_CONTENT_TAGS = frozenset({"p", "table", "article", "main", *HEADING_LEVELS})  # a <form> holding these is the page
_TAG = re.compile(r"<[^>]*>")
# html.parser stops at the first '&#' that is not a character reference and reads the rest of the
# page after the next such one as raw text (a stdlib bug); escaped, the '&#' is plain text.
_BAD_CHARREF = re.compile(r"&#(?!(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F])")
# An unknown marked-section keyword (`<![<![`) makes html.parser raise.
_BAD_SECTION = re.compile(r"<!\[(?!(?:temp|cdata|ignore|include|rcdata|if|else|endif)(?![-_.\w]))",
                          re.IGNORECASE | re.ASCII)
_KEYWORD_END = r"(?![-_.\w])"
# (opener, its escaped form, what closes it, how far after the opener html.parser looks for that)
_CLOSERS = (
    (re.compile(rf"<!\[(?=(?:temp|cdata|ignore|include|rcdata){_KEYWORD_END})", re.I | re.A), "&lt;![",
     re.compile(r"]\s*]\s*>"), 3),
    (re.compile(rf"<!\[(?=(?:if|else|endif){_KEYWORD_END})", re.I | re.A), "&lt;![", re.compile(r"]\s*>"), 3),
    (re.compile(r"<!--"), "&lt;!--", re.compile(r"--\s*>"), 4),
    (re.compile(r"<"), "&lt;", re.compile(r">"), 1),
)


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
    """Parse `html` with the stdlib parser (tolerant of unclosed tags) and extract its content.

    Time and memory stay linear in the size of the page whatever it holds (issue 15).
    """
    html = _repair(_defuse(html))
    content = _extract(html, drop_chrome=True)
    if not content.text:
        # An unclosed <header> or <nav> can swallow the whole page; then keep the chrome.
        content = _extract(html, drop_chrome=False)
    return content


def _extract(html: str, drop_chrome: bool) -> HtmlContent:
    soup = _parse(html)
    title = _page_title(soup)
    _drop_noise(soup, NON_TEXT_TAGS + CHROME_TAGS if drop_chrome else NON_TEXT_TAGS)
    root = _main_region(soup)
    tables: list[Table] = []
    text = _render(root, tables)
    return HtmlContent(title=title, text=text, tables=tuple(tables))


# --- parsing in linear time ---------------------------------------------------------------------

def _defuse(html: str) -> str:
    """Escape the '<' of every construct html.parser could never close, so it reads them as text.

    At the end of its input html.parser re-scans the rest of the page once per such construct
    (50,000 `<!--` took 12 s, 20,000 unclosed `<a ` far longer); escaped, they give the same text
    in one pass.
    """
    html = _BAD_SECTION.sub("&lt;![", _BAD_CHARREF.sub("&amp;#", html))
    for opener, escaped, closer, offset in _CLOSERS:
        last = -1
        for last_close in closer.finditer(html):
            last = last_close.start()
        cut = max(0, last - offset + 1)  # an opener from here on has no closer far enough after it
        html = html[:cut] + opener.sub(escaped, html[cut:])
    return html


def _repair(html: str) -> str:
    """Escape start tags that never close (quoted '>'s hide their end), as html.parser would read them.

    A tokenizer pass stops at such a tag; html.parser would then read up to the next '>' as text
    and go on, re-scanning the rest of the page each time. After REPAIR_PASSES pages' worth of
    re-scanning, the rest is read as plain text instead.
    """
    done: list[str] = []
    rest = html
    budget = REPAIR_PASSES * len(html)
    while True:
        probe = HTMLParser(convert_charrefs=False)  # configured as bs4 configures it
        probe.feed(rest)
        budget -= len(rest)
        tail = probe.rawdata
        if len(tail) <= MAX_UNPARSED_TAIL or probe.cdata_elem is not None:  # an unclosed <script> is fine
            return "".join(done) + rest
        done.append(rest[:len(rest) - len(tail)])
        if budget < 0:
            log.warning("HTML has tags that never close; reading its last %d characters as plain text",
                        len(tail))
            return "".join(done) + _plain(tail)
        close = tail.find(">") + 1 or len(tail)
        done.append(tail[:close].replace("<", "&lt;"))
        rest = tail[close:]


def _plain(html: str) -> str:
    """Markup-free text that html.parser reads as one string: tags dropped, any '<' left escaped."""
    return _TAG.sub(" ", html).replace("<", "&lt;")


def _parse(html: str) -> BeautifulSoup:
    """bs4 over html.parser; a page it still rejects is read as plain text, with a warning."""
    try:
        return BeautifulSoup(html, "html.parser")
    except ParserRejectedMarkup as exc:
        log.warning("HTML parser rejected the page (%s); reading it as plain text", exc)
        return BeautifulSoup(_plain(html), "html.parser")


# --- page structure -----------------------------------------------------------------------------

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
    keep = _swallowing_chrome(soup)
    _remove([tag for tag in soup.find_all(dropped) if id(tag) not in keep])
    _remove(soup.find_all(_is_hidden))


def _remove(tags: list[Tag]) -> None:
    """Decompose `tags` (in document order); one inside an earlier one goes with it.

    Not bs4's `tag.decomposed`: on a live tag it falls back to a search of the whole subtree,
    which made nested <nav>s quadratic.
    """
    inner = _inside(tags)
    for tag in tags:
        if id(tag) not in inner:
            tag.decompose()


def _swallowing_chrome(soup: BeautifulSoup) -> set[int]:
    """ids of chrome elements that hold real content and must stay, found in one pass over the page.

    Asking each element what is inside or above it took quadratic time on deeply nested pages.
    """
    mains: list[Tag] = []
    contents: list[Tag] = []
    articles: list[Tag] = []
    chrome: list[Tag] = []
    for tag in soup.find_all(True):
        if tag.name in ("main", "article") or tag.get("role") == "main":
            mains.append(tag)
        if tag.name in _CONTENT_TAGS:
            contents.append(tag)
        if tag.name == "article":
            articles.append(tag)
        if tag.name in CHROME_TAGS:
            chrome.append(tag)
    holds_main, holds_content, in_article = _ancestors(mains), _ancestors(contents), _inside(articles)
    # Chrome that contains the main region is an unclosed tag that swallowed the page.
    # An <article>'s own <header>/<footer> carry its heading and byline, not site chrome.
    # ASP.NET-style pages wrap the whole page in one <form>; dropping it would drop everything.
    return {id(tag) for tag in chrome
            if id(tag) in holds_main or (tag.name in ("header", "footer") and id(tag) in in_article)
            or (tag.name == "form" and id(tag) in holds_content)}


def _ancestors(tags: Iterable[Tag]) -> set[int]:
    """ids of every element above one of `tags`; each element is visited once, however deep."""
    marked: set[int] = set()
    for tag in tags:
        parent = tag.parent
        while parent is not None and id(parent) not in marked:
            marked.add(id(parent))
            parent = parent.parent
    return marked


def _inside(tags: Iterable[Tag]) -> set[int]:
    """ids of every element inside one of `tags` (in document order); nested ones are not walked twice."""
    inside: set[int] = set()
    for tag in tags:
        if id(tag) not in inside:
            inside.update(id(node) for node in tag.descendants)
    return inside


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
    layout = _ancestors(root.find_all("table"))  # a table holding another table is layout

    def is_table(tag: Tag) -> bool:
        return tag.name == "table" and id(tag) not in layout and _is_data_table(tag)

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
    """Layout tables (role=presentation, a single cell; _render also skips those holding a table) are
    read as plain blocks."""
    if str(table.get("role", "")).lower() in ("presentation", "none"):
        return False
    return len(table.find_all(_CELL_TAGS, limit=2)) >= 2


# --- tables -------------------------------------------------------------------------------------

@dataclass
class _Cell:
    header: bool  # a <th>
    colspan: int
    rowspan: int
    parts: list[str] = field(default_factory=list)  # the cell's own text, collected while walking


@dataclass
class _Row:
    in_thead: bool
    cells: list[_Cell] = field(default_factory=list)


def _parse_table(table: Tag) -> Table | None:
    rows, loose = _table_rows(table)
    header_count = _header_row_count(rows)
    grid = _expand_spans([row.cells for row in rows] if rows else [loose])
    width = max((len(row) for row in grid), default=0)
    if width == 0:
        return None
    header = _merge_header(grid[:header_count]) if header_count else \
        tuple(f"col{i}" for i in range(1, width + 1))
    body = tuple(tuple(row) for row in grid[header_count:] if any(row))
    caption_tag = table.find("caption")
    caption = _clean(caption_tag.get_text(" ")) if isinstance(caption_tag, Tag) else ""
    if not body and not header_count:
        return None
    return Table(caption=caption, header=header, rows=body)


def _table_rows(table: Tag) -> tuple[list[_Row], list[_Cell]]:
    """The table's rows, and its cells outside any <tr> (read as one row when there is no <tr>).

    One pass over the table: with html.parser unclosed <td>s and <tr>s nest inside each other, so a
    cell belongs to the innermost open row and text to the innermost open cell (asking each cell
    for its row took quadratic time on a long run of unclosed cells).
    """
    rows: list[_Row] = []
    loose: list[_Cell] = []
    open_rows: list[_Row] = []
    open_parts: list[_Row | _Cell] = []  # open rows and cells, innermost last
    thead_depth = 0
    for event, element in _walk(table, lambda tag: tag.name == "table"):
        name = element.name if event in ("enter", "exit") else ""
        if event == "exit" and name in ("tr", *_CELL_TAGS):
            if isinstance(open_parts.pop(), _Row):
                open_rows.pop()
        into = open_parts[-1] if open_parts and isinstance(open_parts[-1], _Cell) else None
        if into is not None and event == "text":
            into.parts.append(str(element))
        elif into is not None and (name == "br" or name in PARAGRAPH_TAGS or name in LINE_TAGS):
            into.parts.append(" ")  # a line break inside a cell reads as a space in one Markdown row
        if event == "enter" and name == "tr":
            rows.append(_Row(in_thead=thead_depth > 0))
            open_rows.append(rows[-1])
            open_parts.append(rows[-1])
        elif event == "enter" and name in _CELL_TAGS:
            cell = _Cell(header=name == "th", colspan=_span(element, "colspan"),
                         rowspan=_span(element, "rowspan"))
            (open_rows[-1].cells if open_rows else loose).append(cell)
            open_parts.append(cell)
        elif name == "thead":
            thead_depth += 1 if event == "enter" else -1
    return rows, loose


def _header_row_count(rows: list[_Row]) -> int:
    """Leading rows inside <thead>, or made only of <th> cells, form the header."""
    count = 0
    for row in rows:
        if not (row.in_thead or (row.cells and all(cell.header for cell in row.cells))):
            break
        count += 1
    # A table made only of <th> rows is a key/value sheet: keep just its first row as header.
    return 1 if count == len(rows) and count > 1 else count


def _span(cell: Tag, name: str) -> int:
    digits = re.match(r"\s*0*(\d+)", str(cell.get(name, "1")))
    # Four significant digits are already over the cap; int() of thousands of digits would raise.
    return max(1, min(int(digits.group(1)[:4]) if digits else 1, MAX_SPAN))


def _expand_spans(rows: list[list[_Cell]]) -> list[list[str]]:
    """Repeat colspan cells across columns and rowspan cells down rows, within TABLE_GROWTH.

    A span that would take the table past its budget is ignored, and columns whose empty cells the
    budget cannot pay for are cut, with a warning: work and output stay linear in the cells' size.
    """
    texts = [[_clean("".join(cell.parts)) for cell in cells] for cells in rows]
    written = sum(len(text) + 3 for row in texts for text in row)  # " text |" per cell as written
    spare = (TABLE_GROWTH - 1) * written
    carried: dict[int, tuple[str, int]] = {}  # column -> (text, rows below still to fill)
    grid: list[dict[int, str]] = []
    cut = False
    for r, cells in enumerate(rows):
        row = {col: text for col, (text, _) in carried.items()}
        carried = {col: (text, left - 1) for col, (text, left) in carried.items() if left > 1}
        col = 0
        for cell, text in zip(cells, texts[r]):
            while col in row:
                col += 1
            colspan, rowspan = cell.colspan, min(cell.rowspan, len(rows) - r)
            cost = (colspan * rowspan - 1) * (len(text) + 3)
            if cost > spare:
                colspan, rowspan, cut = 1, 1, True
            else:
                spare -= cost
            for span_col in range(col, col + colspan):
                row.setdefault(span_col, text)  # a cell carried down from above keeps its slot
                if rowspan > 1:
                    carried.setdefault(span_col, (text, rowspan - 1))
            col += colspan
        grid.append(row)
    width = _affordable_width(grid, spare)
    if cut or any(col >= width for row in grid for col in row):
        log.warning("table cut to stay within %d times the size of its cells: spans ignored or columns past "
                    "%d dropped", TABLE_GROWTH, width)
    return [[row.get(col, "") for col in range(width)] for row in grid]


def _affordable_width(grid: list[dict[int, str]], spare: int) -> int:
    """The widest the table can be padded to when each empty cell costs " |" from `spare`."""
    filled = [0] * max((max(row) + 1 for row in grid if row), default=0)
    for row in grid:
        for col in row:
            filled[col] += 1
    empty = 0
    for col, count in enumerate(filled):
        empty += len(grid) - count
        if 3 * empty > spare:
            return col
    return len(filled)


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
