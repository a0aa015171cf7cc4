"""Users' code (method plugins, retriever files, entry points) tried first in a child process (issue 26).

A plugin runs arbitrary code when it is imported: it may loop, sleep, `os._exit()`, raise KeyboardInterrupt or
monkeypatch ragscope and then fail. In-process, each of those would hang or end the CLI and the app, built-ins
included, or leave its patch behind. So every candidate is first imported by one child process
(`python -m engine.plugin_probe`) that checks the candidates one after the other, as the real process would,
and reports one JSON line per candidate as it goes; each candidate gets its own time limit
(RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S, default 10 s). A candidate that hangs, ends the child or fails is reported
with the reason and never imported by the caller; a hung or ended child is replaced by a fresh one for the
candidates left. Verdicts are kept per process, keyed by the candidate's files (path, size, mtime_ns), so a
process pays the child once per change; with no candidate (the usual empty plugin folder) no child starts.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NoReturn, TextIO

from engine.settings import env_seconds

TIMEOUT_ENV = "RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 60.0  # the child's own start (Python, ragscope's built-ins) before the first candidate
MAX_VERDICT_CHARS = 600  # ≤ 6 bytes each as JSON: a line under PIPE_BUF (4096) is written whole, never interleaved
_ENGINE_ROOT = str(Path(__file__).resolve().parent.parent)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """One piece of user code: `source` as the user reads it; `kind` file, package (a folder with __init__.py),
    entry (an entry point) or ref (a `module:attr`); `target` its path or value; `name` the name it is listed as."""

    source: str
    kind: str
    target: str
    name: str = ""


@dataclass(frozen=True)
class LoadProblem:
    """A user's code left out (a method plugin, a retriever): where it is, and why; `what` names the kind."""

    source: str
    message: str
    what: ClassVar[str] = "Plugin"

    def __str__(self) -> str:
        return f"{self.what} {self.source} was not loaded: {self.message}"


def exception_text(exc: BaseException) -> str:
    """`Type: message`, or the type alone for one raised bare (`raise KeyboardInterrupt`)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


Check = Callable[[Candidate], "str | None"]  # in the child: import the candidate; why it is unusable, or None


def probe(check: str, candidates: Sequence[Candidate]) -> dict[Candidate, str | None]:
    """Each candidate → None when `check` (`module:function`, run in a child) found it usable, else why not.
    Verdicts for unchanged candidates come from this process's earlier calls."""
    if _in_child:  # a plugin listing plugins while it is checked: no child of a child
        return {c: "it could not be checked: plugins were listed while another plugin was being checked"
                for c in candidates}
    fingerprints = {c: (check, c, _fingerprint(c)) for c in candidates}
    with _lock:
        verdicts = {c: _VERDICTS[key] for c, key in fingerprints.items() if key in _VERDICTS}
    todo = [c for c in candidates if c not in verdicts]
    if todo:
        fresh = _probe_in_children(check, todo, import_timeout())
        with _lock:
            _VERDICTS.update({fingerprints[c]: verdict for c, verdict in fresh.items()})
        verdicts.update(fresh)
    return {c: verdicts[c] for c in candidates}


_in_child = False  # set in the checking process
_lock = threading.Lock()
_VERDICTS: dict[tuple[str, Candidate, tuple], str | None] = {}


def import_timeout() -> float:
    """RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S seconds; the default when unset or not a positive number (logged)."""
    text, seconds = env_seconds(TIMEOUT_ENV)
    if seconds is None:
        if text:
            log.warning("%s=%r is not a positive number of seconds; using %g", TIMEOUT_ENV, text, DEFAULT_TIMEOUT_S)
        return DEFAULT_TIMEOUT_S
    return seconds


def _fingerprint(candidate: Candidate) -> tuple:
    """What changes when the user edits the candidate: its files' (path, size, mtime_ns)."""
    if candidate.kind not in ("file", "package"):  # an entry point's or module's code is the installed one
        return ()
    root = Path(candidate.target)
    files = [root] if candidate.kind == "file" else sorted(
        p for p in root.rglob("*") if "__pycache__" not in p.parts and p.is_file())
    stamps = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(stamps)


def _probe_in_children(check: str, candidates: Sequence[Candidate], timeout: float) -> dict[Candidate, str | None]:
    """One child checks the candidates; should it end or stall itself, a fresh one goes on with the rest."""
    verdicts: dict[Candidate, str | None] = {}
    left = list(candidates)
    while left:
        verdicts.update(_one_child(check, left, timeout))
        left = [c for c in left if c not in verdicts]
    return verdicts


def _one_child(check: str, candidates: Sequence[Candidate], timeout: float) -> dict[Candidate, str | None]:
    """Verdicts for a prefix of `candidates` (at least the first): the child imports ragscope once, then forks a
    process per candidate (cheap, and each starts clean); it reports when each begins, its pid, its verdict and
    how it ended. One outlasting `timeout` is killed here."""
    request = {"path": sys.path, "check": check, "candidates": [vars(c) for c in candidates]}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_ENGINE_ROOT, os.environ.get("PYTHONPATH"))))}
    try:
        child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env=env, text=True, encoding="utf-8", errors="replace", start_new_session=True)
    except OSError as exc:  # no process to spare: nothing of the user's is imported, the built-ins go on
        return dict.fromkeys(candidates, f"it could not be checked: the checking process did not start ({exc})")
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(child, lines), daemon=True).start()
    verdicts: dict[Candidate, str | None] = {}
    current, pid = None, 0  # the candidate being checked, and its process
    try:
        try:
            child.stdin.write(json.dumps(request))
            child.stdin.close()
        except OSError:  # it ended at once: its end, read below, says how
            pass
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(verdicts) < len(candidates):
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                if current is None or current in verdicts:  # the child itself stalled
                    first = next(c for c in candidates if c not in verdicts)
                    return {**verdicts, first: "it could not be checked: the checking process stopped answering"}
                verdicts[current] = (f"did not finish importing within {timeout:g} s; make its import fast (no loops, "
                                     f"servers or downloads at import), or allow longer with {TIMEOUT_ENV}")
                _kill_group(pid)  # the child sees it end and goes on with the next
                deadline = time.monotonic() + START_TIMEOUT_S
                continue
            if line is None:  # the child ended: a candidate's process killed it, or it never started
                ended = _how_it_ended(child.wait())
                first = next(c for c in candidates if c not in verdicts)
                return {**verdicts, first: f"it could not be checked: the checking process {ended}"}
            report = _parsed(line, len(candidates))
            if report is None:
                continue
            candidate = candidates[report["index"]]
            if "pid" in report:  # it began: its own time limit starts now
                current, pid, deadline = candidate, report["pid"], time.monotonic() + timeout
            elif "verdict" in report:
                verdicts.setdefault(candidate, report["verdict"])
            else:  # its process ended; without a verdict, that ending is the verdict
                verdicts.setdefault(candidate, f"{_how_it_ended(report['status'])} while importing")
                current, deadline = None, time.monotonic() + START_TIMEOUT_S
        return verdicts
    finally:
        _kill_group(child.pid)
        child.wait()
        child.stdout.close()


def _parsed(line: str, count: int) -> dict | None:
    """A report line, or None for one that is not ours (a forked plugin may write to the inherited pipe)."""
    try:
        report = json.loads(line)
        ok = 0 <= report["index"] < count and (isinstance(report.get("pid"), int) or "verdict" in report
                                                 or isinstance(report.get("status"), int))
    except (ValueError, TypeError, KeyError):
        return None
    return report if ok else None


def _how_it_ended(code: int) -> str:
    if code < 0 and -code in signal.valid_signals():
        return f"was killed by signal {signal.Signals(-code).name}"
    return f"exited the process with code {code}"


def _read_lines(child: subprocess.Popen, lines: queue.Queue[str | None]) -> None:
    for line in child.stdout:
        lines.put(line)
    lines.put(None)


def _kill_group(pid: int) -> None:
    """SIGKILL a process and what it started (each runs in its own session, its group named by its pid)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # not (yet) in a session of its own
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _child_main() -> None:
    """The child: read the request from stdin, import the check, then fork one process per candidate and report
    one JSON line per event on the real stdout. A plugin's own prints go to stderr (fd 1 is pointed there), so
    they cannot be taken for a report."""
    global _in_child
    _in_child = True
    report = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    request = json.loads(sys.stdin.read())
    sys.path[:] = request["path"]  # the caller's: a test's or an app's additions find the same modules
    module, _, function = request["check"].partition(":")
    check: Check = getattr(importlib.import_module(module), function)
    for index, fields in enumerate(request["candidates"]):
        pid = os.fork()
        if pid == 0:
            os.setsid()  # its own group, so a kill ends what it started too
            _check_one(check, index, Candidate(**fields), report)
        report.write(json.dumps({"index": index, "pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        report.write(json.dumps({"index": index, "status": os.waitstatus_to_exitcode(status)}) + "\n")
    report.close()
    os._exit(0)


def _check_one(check: Check, index: int, candidate: Candidate, report: TextIO) -> NoReturn:
    """In the forked process: the verdict on one line, then exit at once: a
    plugin's non-daemon thread or atexit hook must not keep it going."""
    try:
        verdict = check(candidate)
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt, SystemExit: all are the plugin's
        verdict = f"{type(exc).__name__}: {exc}".removesuffix(": ")
    shown = verdict if verdict is None else verdict[:MAX_VERDICT_CHARS]
    report.write(json.dumps({"index": index, "verdict": shown}) + "\n")
    report.flush()
    os._exit(0)


if __name__ == "__main__":  # run as engine.plugin_probe, not __main__, so `_in_child` is the one probe() reads
    from engine import plugin_probe

    plugin_probe._child_main()
