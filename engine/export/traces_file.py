"""Read the traces ragscope itself writes, to export them elsewhere.

Three shapes come out of ragscope, and all three are read: `eval --out`'s traces.jsonl (one trace
per line), the History page's export (one JSON list of traces) and `ask --json` (one indented
trace). Every trace is checked field by field (`Trace.from_dict`); a bad line is named by number.
"""

from __future__ import annotations

from pathlib import Path

from engine.codec import loads_bounded
from engine.errors import PackError, RagscopeError
from engine.trace import Trace


def read_traces(path: Path) -> tuple[Trace, ...]:
    """Every trace in `path`; a RagscopeError names the first line (or run) that is not a trace."""
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RagscopeError(f"{label}: not UTF-8 text (byte {exc.start}); give a traces file ragscope wrote") from None
    try:  # a History export or an `ask --json` trace: one JSON value for the whole file
        whole = loads_bounded(text, label)
    except PackError:  # JSON lines: every line on its own, so a problem is reported with its line number
        # split on "\n" only: str.splitlines also cuts at U+2028 and U+0085, which JSON strings hold unescaped
        entries = [(f"{label}:{number}", loads_bounded(line, label, number))
                   for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    else:
        entries = [(f"{label}: run {n}", item) for n, item in enumerate(whole, start=1)] \
            if isinstance(whole, list) else [(label, whole)]
    traces = [(where, Trace.from_dict(data, where)) for where, data in entries]
    if not traces:
        raise RagscopeError(f"{label}: holds no traces; give eval --out's traces.jsonl, a History export or "
                            "ask --json's output")
    _check_unique(traces)
    return tuple(trace for _, trace in traces)


def _check_unique(traces: list[tuple[str, Trace]]) -> None:
    """Span ids come from trace ids: two traces with one id would overwrite each other in a backend."""
    seen: dict[str, str] = {}
    for where, trace in traces:
        if trace.id in seen:
            raise RagscopeError(f"{where}: trace id {trace.id!r} is already used by {seen[trace.id]}; their spans "
                                "would collide. Export them from separate files, or give one of them a new id")
        seen[trace.id] = where
