"""Prompt templates kept as text files beside this module, and a brace-safe way to fill them.

`str.format` would choke on (or worse, interpret) braces inside documents and questions, so `fill`
substitutes only the placeholder names it is given, in one pass: a value that itself contains
`{question}` is never substituted again.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from engine.errors import UnknownNameError

PROMPT_DIR = Path(__file__).resolve().parent
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def known_prompts() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in PROMPT_DIR.glob("*.txt")))


@cache
def load_prompt(name: str) -> str:
    """The template `<name>.txt` from this folder; an unknown name raises `UnknownNameError`."""
    # the name check also keeps a caller from reading files outside this folder ('../x')
    if not _NAME.fullmatch(name) or not (PROMPT_DIR / f"{name}.txt").is_file():
        raise UnknownNameError(f"unknown prompt {name!r}; known: {', '.join(known_prompts())}")
    return (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8")


def fill(template: str, **values: object) -> str:
    """Replace `{name}` for the given names only; every other brace is left as written."""
    return fill_spans(template, **values)[0]


def fill_spans(template: str, **values: object) -> tuple[str, dict[str, tuple[int, int]]]:
    """`fill`, plus the [start, end) span in the result where each name's value was first placed."""
    pieces: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    length, last = 0, 0
    for match in _PLACEHOLDER.finditer(template):
        name = match.group(1)
        if name not in values:
            continue
        before, value = template[last:match.start()], str(values[name])
        pieces += [before, value]
        length += len(before)
        spans.setdefault(name, (length, length + len(value)))
        length += len(value)
        last = match.end()
    pieces.append(template[last:])
    return "".join(pieces), spans
