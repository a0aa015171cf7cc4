"""An evaluation written to disk as it goes, so a reload, a crash or a new session loses at most the
question in flight and can go on from where it stood.

A journal is a folder: `plan.json` (what to ask, in order, and on what; rewritten atomically) and
`results.jsonl` (one line per finished question: its scores and its trace, appended and synced). A
line cut short by a kill is ignored on reading, so the question it held is asked again. The app keeps
its journals under the evaluations folder by id; `eval --out DIR` keeps one beside DIR (`--resume`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.codec import loads_bounded
from engine.disk import raising_disk_full
from engine.errors import PackError, RagscopeError
from engine.evaluation.runner import QuestionResult
from engine.files import write_text_atomic
from engine.locking import HeldLock, hold
from engine.trace import Trace

_ID = re.compile(r"^[0-9a-f]{32}$")
_RESULT_FIELDS = {f.name for f in fields(QuestionResult)}


@dataclass(frozen=True)
class JournalPlan:
    """What an evaluation asks: (question id, method) pairs in order, on one pack with one backend."""

    pack_path: str
    backend: str
    options: tuple[tuple[str, str], ...]  # without secrets: an API key is never written
    steps: tuple[tuple[str, str], ...]
    stopped: bool = False
    fingerprint: str = ""  # the pack's (documents' content hash): a changed pack must not be resumed
    params: tuple[tuple[str, str, Any], ...] = ()  # (method, name, value) set for the whole evaluation

    def differences(self, other: JournalPlan) -> list[str]:
        """Why `other` cannot continue this plan (empty when it can): two evaluations' results must not mix."""
        found = []
        if self.fingerprint != other.fingerprint:
            found.append(f"the pack's documents differ (fingerprint {self.fingerprint} → {other.fingerprint})"
                         if self.fingerprint else  # the app's plans held none before issue 24
                         "it was saved without its pack's fingerprint, so a changed pack cannot be ruled out")
        # The order they are asked in changes no answer (engine.evaluation.runner.evaluate): an evaluation
        # journalled in another order (method by method, as the CLI asked before issue 24) goes on.
        mine, theirs = sorted(self.steps), sorted(other.steps)
        if mine != theirs:
            found.append(f"the (question, method) pairs differ ({len(mine)} planned → {len(theirs)}; "
                         f"first difference at pair {_first_difference(mine, theirs) + 1})")
        if self.params != other.params:
            found.append(f"the parameters differ ({_shown_params(self.params)} → {_shown_params(other.params)})")
        model, other_model = dict(self.options).get("model", ""), dict(other.options).get("model", "")
        if (self.backend, model) != (other.backend, other_model):
            found.append(f"the model differs ({self.backend} {model!r} → {other.backend} {other_model!r})")
        return found


def _first_difference(a: Sequence, b: Sequence) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _shown_params(params: tuple[tuple[str, str, Any], ...]) -> str:
    return ", ".join(f"{method}: {name}={value!r}" for method, name, value in params) or "none"


@dataclass(frozen=True)
class JournalSummary:
    """One saved evaluation as a list of them shows it: what it asked, how far it got, when."""

    id: str
    written: float  # when it was last written to, in seconds since the epoch
    pack: str
    methods: tuple[str, ...]
    done: int
    total: int
    stopped: bool

    @property
    def state(self) -> str:
        """finished; stopped (by Stop: Resume goes on); or interrupted (a reload or crash: opening it goes on)."""
        return "finished" if self.done >= self.total else "stopped" if self.stopped else "interrupted"


def new_journal_id() -> str:
    return uuid.uuid4().hex


class Journal:
    """One evaluation's folder under `root`; ids are checked so a URL parameter can't name another path."""

    writer: HeldLock | None = None  # `beside`: the lock that keeps a second process from writing here

    def __init__(self, root: Path, journal_id: str):
        if not _ID.fullmatch(journal_id):
            raise RagscopeError(f"not an evaluation id: {journal_id!r}")
        self.id = journal_id
        self.folder = root / journal_id

    @classmethod
    def beside(cls, target: Path) -> Journal:
        """The journal of the CLI evaluation reporting to `target`: `.NAME.journal` next to it. The name is
        never a staging folder's (`writer.sweep_staging` would delete it once its writer has exited), so an
        interrupted evaluation waits there for `--resume` from any later process.

        While this journal lives no other process may write there (issue 26: the loser of two evaluations
        racing for one --out was told to add --resume, a second writer on a live journal): the other is
        told who writes and to wait. A folder without a plan, left by a write that failed (a full disk) or
        was killed before its plan was saved, holds nothing to resume and is removed."""
        journal = cls.__new__(cls)
        journal.id, journal.folder = f".{target.name}.journal", target.parent / f".{target.name}.journal"
        lock = target.parent / f".{target.name}.lock"
        with raising_disk_full(target.parent):
            journal.writer = hold(lock, lambda pid: RagscopeError(
                f"another evaluation{f' (pid {pid})' if pid else ''} is writing to {target}; wait for it to end, "
                "or choose another --out"))
        if journal.folder.is_dir() and not (journal.folder / "plan.json").exists():
            shutil.rmtree(journal.folder)
        return journal

    def write_plan(self, plan: JournalPlan) -> None:
        """Saved atomically; when it cannot be (a full disk: DiskFull), a journal folder this made is removed
        again, so no empty journal is left to refuse the next try."""
        record = {**asdict(plan), "options": [list(o) for o in plan.options if o[0] != "api_key"],
                  "steps": [list(s) for s in plan.steps], "params": [list(p) for p in plan.params]}
        new = not self.folder.exists()
        try:
            with raising_disk_full(self.folder):
                write_text_atomic(self.folder / "plan.json", json.dumps(record, ensure_ascii=False))
        except BaseException:
            if new:
                shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def append(self, result: QuestionResult, trace: Trace) -> None:
        """One finished question, synced; a full disk is DiskFull (a line cut short is ignored on reading)."""
        line = json.dumps({"result": asdict(result), "trace": trace.to_dict()}, ensure_ascii=False)
        with raising_disk_full(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / "results.jsonl", "a", encoding="utf-8") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())

    def read(self) -> tuple[JournalPlan, tuple[QuestionResult, ...], tuple[Trace, ...]]:
        """The plan and the finished questions; raises RagscopeError when there is no such journal."""
        plan = self._plan()
        return (plan, *_finished(self.folder / "results.jsonl"))

    def summary(self) -> JournalSummary:
        """What a list of evaluations shows; raises RagscopeError as `read` does."""
        plan = self._plan()
        written = max(p.stat().st_mtime for p in (self.folder / "plan.json", self.folder / "results.jsonl")
                      if p.exists())
        return JournalSummary(id=self.id, written=written, pack=Path(plan.pack_path).name,
                              methods=tuple(dict.fromkeys(m for _, m in plan.steps)), done=self._done(),
                              total=len(plan.steps), stopped=plan.stopped)

    def _done(self) -> int:
        path = self.folder / "results.jsonl"
        if not path.exists():
            return 0
        stat = path.stat()
        return _finished_count(path, stat.st_size, stat.st_mtime_ns)

    def _plan(self) -> JournalPlan:
        try:
            raw = loads_bounded((self.folder / "plan.json").read_text(encoding="utf-8"), "plan.json")
            plan = JournalPlan(raw["pack_path"], raw["backend"], tuple(tuple(o) for o in raw["options"]),
                               tuple(tuple(s) for s in raw["steps"]), bool(raw.get("stopped", False)),
                               str(raw.get("fingerprint", "")), tuple(tuple(p) for p in raw.get("params", ())))
        except FileNotFoundError:
            raise RagscopeError(f"no saved evaluation with id {self.id!r}") from None
        except (OSError, ValueError, KeyError, TypeError, PackError) as exc:
            raise RagscopeError(f"{self.folder / 'plan.json'}: unreadable evaluation plan ({exc})") from None
        return plan


def list_journals(root: Path) -> list[JournalSummary]:
    """The app's evaluations under `root`, last written first; one whose plan is unreadable is left out."""
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if _ID.fullmatch(folder.name):
            try:
                found.append(Journal(root, folder.name).summary())
            except RagscopeError:
                continue
    return sorted(found, key=lambda summary: summary.written, reverse=True)


@lru_cache(maxsize=256)
def _finished_count(path: Path, size: int, mtime_ns: int) -> int:
    """How many finished questions `read` finds, remembered while the results file's size and time stay
    the same: each line holds a whole trace, too much to parse again on every redraw of a list."""
    return len(_finished(path)[0])


def _finished(path: Path) -> tuple[tuple[QuestionResult, ...], tuple[Trace, ...]]:
    """The finished questions of a results file: its readable lines, in the order they were written."""
    results, traces = [], []
    for record in _records(path):
        try:
            trace = Trace.from_dict(record["trace"])
            # A line written before results carried `confidence` takes it from its trace's answer.
            saved = {"confidence": trace.answer.confidence if trace.answer else 0.0, **record["result"]}
            result = QuestionResult(**{k: v for k, v in saved.items() if k in _RESULT_FIELDS})
        except (TypeError, ValueError, KeyError, AttributeError, RagscopeError):
            continue  # not a line this code wrote: that question is asked again
        results.append(result)
        traces.append(trace)
    return tuple(results), tuple(traces)


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        try:
            record = loads_bounded(line, "results.jsonl", number)
        except PackError:
            continue  # a line cut short by a kill: that question is asked again
        if isinstance(record, dict) and "result" in record and "trace" in record:
            records.append(record)
    return records
