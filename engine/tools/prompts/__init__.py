"""Prompt templates kept as text files beside the code that uses them, and a brace-safe way to fill them.

The shared tools' prompts (reader, classifier) live in this folder; each method keeps its own in
`engine/methods/<method>/prompts/`, read through a `PromptFolder` of its own.

`str.format` would choke on (or worse, interpret) braces inside documents and questions, so `fill`
substitutes only the placeholder names it is given, in one pass: a value that itself contains
`{question}` is never substituted again.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from engine.errors import UnknownNameError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class PromptFolder:
    """The `<name>.txt` templates of one folder, read once each."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder).resolve()
        self._cache: dict[str, str] = {}

    @classmethod
    def beside(cls, module_file: str) -> PromptFolder:
        """The `prompts/` folder next to a module: `PROMPTS = PromptFolder.beside(__file__)`."""
        return cls(Path(module_file).parent / "prompts")

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(p.stem for p in self.folder.glob("*.txt")))

    def load(self, name: str) -> str:
        """The template `<name>.txt`; an unknown name raises `UnknownNameError`."""
        if name not in self._cache:
            # the name check also keeps a caller from reading files outside this folder ('../x')
            if not _NAME.fullmatch(name) or name not in self.names:
                raise UnknownNameError(f"unknown prompt {name!r} in {self.folder.name}/; "
                                       f"known: {', '.join(self.names)}")
            self._cache[name] = (self.folder / f"{name}.txt").read_text(encoding="utf-8")
        return self._cache[name]


SHARED = PromptFolder(Path(__file__).parent)


def known_prompts() -> tuple[str, ...]:
    return SHARED.names


def load_prompt(name: str) -> str:
    """A shared tool's template from this folder."""
    return SHARED.load(name)


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
