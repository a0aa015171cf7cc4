"""`diff`: what changed between two saved runs — settings, steps by round and kind, chunks, graph, answer.

A RUN is a file holding one trace (`ask --json`'s output, Explore's "Download trace JSON", a one-run History export),
`FILE#N` for the N-th trace (from 1) of a file holding several (eval --out's traces.jsonl, a History export), or the
id of a run saved in History under RAGSCOPE_HOME. A path that exists is read as a file before it is taken for an id.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from engine.cli.command import Command
from engine.errors import RagscopeError
from engine.trace import Trace

WHAT_A_RUN_IS = ("give a run id from History, a file holding one trace (ask --json, Download trace JSON, a one-run "
                 "History export) or FILE#N for the N-th trace of a file holding several")


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="the reference run: a History run id, a trace file or FILE#N")
    parser.add_argument("run_b", metavar="RUN_B", help="the run compared with it (same forms)")
    parser.add_argument("--json", action="store_true", help="print the diff as JSON instead of text")


def _run(args: argparse.Namespace) -> int:
    from engine.trace_diff import diff_traces, format_diff

    diff = diff_traces(load_run(args.run_a), load_run(args.run_b))
    print(json.dumps(diff.to_dict(), ensure_ascii=False, indent=2) if args.json else format_diff(diff))
    return 0


def load_run(spec: str) -> Trace:
    """The trace `spec` names (see the module); RagscopeError saying what was looked for and where."""
    if not spec.strip():
        raise RagscopeError(f"a RUN is empty; {WHAT_A_RUN_IS}")
    path, sep, pick = spec.rpartition("#")
    if sep and path and _is(path, Path.is_file) and not _is(spec, Path.exists):
        return _pick(_read(Path(path)), pick, path)
    if _is(spec, Path.exists):
        traces = _read(Path(spec))
        if len(traces) > 1:
            raise RagscopeError(f"{spec} holds {len(traces)} traces; pick one with {spec}#N, N from 1 to "
                                f"{len(traces)} (or {spec}#RUN_ID)")
        return traces[0]
    return _saved(spec)


def _is(name: str, test: Callable[[Path], bool]) -> bool:
    """A name the system cannot even look up (too long, say) is no file: it may still be a run id."""
    try:
        return test(Path(name))
    except OSError:
        return False


def _shown(spec: str) -> str:
    return repr(spec if len(spec) <= 80 else spec[:79] + "…")


def _read(path: Path) -> tuple[Trace, ...]:
    from engine.export.traces_file import read_traces

    if path.is_dir():
        raise RagscopeError(f"{path} is a folder; {WHAT_A_RUN_IS}")
    return read_traces(path)


def _pick(traces: tuple[Trace, ...], pick: str, path: str) -> Trace:
    """`#N` counts from 1; `#ID` picks the trace with that run id."""
    if pick.isdigit() and 1 <= int(pick) <= len(traces):
        return traces[int(pick) - 1]
    found = [t for t in traces if t.id == pick]
    if found:
        return found[0]
    raise RagscopeError(f"{path}#{pick}: no such trace; the file holds {len(traces)}, pick N from 1 to "
                        f"{len(traces)} or one of the run ids {', '.join(t.id for t in traces[:5])}"
                        f"{', …' if len(traces) > 5 else ''}")


def _saved(run_id: str) -> Trace:
    from engine.app.runs import open_store
    from engine.settings import Settings

    settings = Settings()
    db = settings.runs_db
    if not db.exists():  # opening the store would create an empty one: say there is no History instead
        raise RagscopeError(f"{_shown(run_id)} is not a file, and there is no History at {db} to look the run id "
                            f"up in; {WHAT_A_RUN_IS}")
    store = open_store(settings)
    if not store.has(run_id):
        raise RagscopeError(f"{_shown(run_id)} is neither a file nor the id of a run saved in History ({db}); "
                            f"{WHAT_A_RUN_IS}")
    return store.get(run_id)


COMMAND = Command("diff", "what changed between two saved runs (History ids or trace files): settings, steps by "
                          "round and kind, chunks, graph nodes, answer and confidence", _arguments, _run)
