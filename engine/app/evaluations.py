"""One evaluation loop for `python -m engine eval` and the Evaluate page (issue 24): the plan (pack
fingerprint, methods, parameters, backend and model, questions), its journal, the strict checks before a
saved evaluation goes on, workers, progress and Stop.

Both front ends hold an `EvaluationJob`. The CLI runs it in its own thread, where Ctrl-C stops it; the page
starts it in a background thread and polls it, so the evaluation outlives a rerun, a reload or a closed tab,
and `Evaluations` hands a reload or a second tab the job already being asked instead of asking it twice.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from engine.errors import EvaluationBusy, RagscopeError
from engine.evaluation import runner
from engine.evaluation.calibration import Reliability, reliability_by_method
from engine.evaluation.compare import OVERALL, metric_rows, pick_questions, results_csv
from engine.evaluation.journal import Journal, JournalPlan, JournalSummary, list_journals, new_journal_id
from engine.evaluation.regression import EvaluationComparison, Flip, Setting, compare_evaluations, setting_of
from engine.evaluation.runner import Progress, QuestionResult
from engine.knowledge.records import QUESTION_TYPES, Pack, Question
from engine.locking import HeldLock, hold
from engine.runner import Workbench
from engine.trace import Trace

# Re-exported so the Evaluate page needs no module of engine.evaluation or engine.knowledge itself.
__all__ = ["OVERALL", "EvaluationComparison", "EvaluationJob", "Evaluations", "Filters", "Flip", "JournalPlan",
           "JournalSummary", "Question", "SavedComparison", "asked_filters", "method_params", "time_limited",
           "metric_rows", "pick_questions", "plan_evaluation", "question_types", "shared"]

log = logging.getLogger(__name__)

Params = dict[str, dict[str, Any]]  # method id → parameter name → value, for the whole evaluation
WorkbenchFor = Callable[[JournalPlan], Workbench]  # the workbench a saved plan is asked on (pack, backend, model)


def plan_evaluation(workbench: Workbench, methods: Sequence[str], questions: Sequence[Question],
                    params: Params | None = None) -> JournalPlan:
    """What an evaluation asks and on what: a saved one goes on only under the same plan, or results would mix."""
    pack, params = workbench.pack, params or {}
    return JournalPlan(
        pack_path=str(pack.path or pack.info.name), backend=workbench.backend,
        options=tuple(sorted(workbench.backend_options.items())),
        steps=tuple((question.id, method) for question, method in runner.ask_order(methods, questions)),
        fingerprint=pack.fingerprint,
        params=tuple((method, name, value) for method in methods for name, value in params.get(method, {}).items()))


def method_params(methods: Sequence[str], given: dict[str, str]) -> tuple[Params, list[str]]:
    """Parameters given once for several methods: each set, checked, for every method that has it (the run's
    answer policy, e.g. min_confidence, every method has); a name none has is an error. Also returns a note
    for each name some of the methods lack."""
    from engine.methods.base import get_method
    from engine.params import AnswerPolicy, build_params, param_specs

    policy = {s.name for s in param_specs(AnswerPolicy)}
    names = {method: {s.name for s in param_specs(get_method(method).Params)} | policy for method in methods}
    known = set().union(*names.values())
    unknown = sorted(set(given) - known)
    if unknown:
        raise RagscopeError(f"unknown parameter(s) {', '.join(unknown)} for {', '.join(methods)}; "
                            f"known: {', '.join(sorted(known))}")
    chosen: Params = {}
    for method in methods:
        mine = {name: value for name, value in given.items() if name in names[method]}
        try:
            built = build_params(get_method(method).Params, {n: v for n, v in mine.items() if n not in policy})
            policy_built = build_params(AnswerPolicy, {n: v for n, v in mine.items() if n in policy})
        except RagscopeError as exc:
            raise RagscopeError(f"{method}: {exc}") from None
        chosen[method] = {name: getattr(policy_built if name in policy else built, name) for name in mine}
    notes = []
    for name in given:
        lacking = [method for method in methods if name not in names[method]]
        if lacking:
            having = [method for method in methods if name in names[method]]
            notes.append(f"{name} applies to {', '.join(having)} only; {', '.join(lacking)} "
                         f"{'has' if len(lacking) == 1 else 'have'} no such parameter")
    return chosen, notes


def question_types(pack: Pack) -> list[str]:
    """The question types the pack has: the known ones in their usual order, then any others."""
    present = [t for t in QUESTION_TYPES if any(q.type == t for q in pack.questions)]
    return present + sorted({q.type for q in pack.questions} - set(present))


@dataclass(frozen=True)
class Filters:
    """The Evaluate form's choices: methods, question types, at most this many questions, each run's time limit."""

    methods: tuple[str, ...]
    types: tuple[str, ...]
    limit: int
    timeout_s: float | None = None


def asked_filters(job: EvaluationJob, pack: Pack) -> Filters:
    """The form's choices that plan `job`'s questions on `pack`: a page that shows a running evaluation draws
    its disabled form with them (Streamlit forgets a form's values once the user visited another page)."""
    question_ids = {question_id for question_id, _ in job.plan.steps}
    types = {q.type for q in pack.questions if q.id in question_ids}
    timeout_s = next((value for _, name, value in job.plan.params if name == "timeout_s"), None)
    return Filters(tuple(job.methods), tuple(t for t in question_types(pack) if t in types), len(question_ids),
                   timeout_s)


def time_limited(methods: Sequence[str], timeout_s: float | None) -> Params:
    """Every method's params with the run's time limit (the answer policy's `timeout_s`, as `eval --timeout`
    sets it), or none when there is no limit: a plan without it equals one planned before the field existed."""
    return {method: {"timeout_s": float(timeout_s)} for method in methods} if timeout_s else {}


class EvaluationJob:
    """One evaluation: its plan, its journal (None: kept in memory only) and the answers so far.

    Every property may be read from any thread at any time. `results[i]` belongs to `traces[i]`, in the
    order they finished; `run` returns them in report order.
    """

    def __init__(self, plan: JournalPlan, journal: Journal | None = None,
                 done: Sequence[tuple[QuestionResult, Trace]] = ()):
        self._plan = plan
        self.journal = journal
        self._lock = threading.Lock()
        self._answered = list(done)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer: HeldLock | None = None  # held while this process asks it (`_claim`)
        self._error = ""

    @classmethod
    def begin(cls, plan: JournalPlan, journal: Journal | None = None) -> EvaluationJob:
        """A new evaluation; its plan is written first, so a reload or `--resume` finds it before its first answer."""
        if journal is not None:
            journal.write_plan(plan)
        return cls(plan, journal)

    @classmethod
    def read(cls, journal: Journal) -> EvaluationJob:
        """A saved evaluation with its finished answers; raises RagscopeError when there is none."""
        plan, results, traces = journal.read()
        return cls(plan, journal, tuple(zip(results, traces)))

    # ---- what it has ---------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.journal.id if self.journal is not None else ""

    @property
    def plan(self) -> JournalPlan:
        return self._plan

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(method for _, method in self._plan.steps))

    @property
    def results(self) -> tuple[QuestionResult, ...]:
        with self._lock:
            return tuple(result for result, _ in self._answered)

    @property
    def traces(self) -> tuple[Trace, ...]:
        with self._lock:
            return tuple(trace for _, trace in self._answered)

    @property
    def done(self) -> int:
        with self._lock:
            return len({(r.method, r.question_id) for r, _ in self._answered})

    @property
    def total(self) -> int:
        return len(self._plan.steps)

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopped(self) -> bool:
        """Stopped by Stop (or refused to go on): it waits for Resume, also after a reload."""
        return self._plan.stopped

    @property
    def error(self) -> str:
        """Why it could not go on (a refused resume, a full disk), or ''."""
        return self._error

    def next_step(self) -> tuple[str, str] | None:
        """The (question id, method) asked next, or None when all are done."""
        with self._lock:
            seen = {(r.question_id, r.method) for r, _ in self._answered}
        return next((step for step in self._plan.steps if step not in seen), None)

    def report(self) -> dict[str, dict[str, Any]]:
        return runner.summarise(self.results)

    def results_csv(self) -> str:
        return results_csv(self.results)

    def failures(self) -> str:
        """'N of M runs rest on a failed backend (method: n, …); first: …', or '' when none does (issue 26)."""
        return runner.failure_summary(self.results)

    def reliability(self) -> dict[str, Reliability]:
        return reliability_by_method(self.results)

    def run_card(self, workbench: Workbench) -> str:
        """The run_card.json `eval --out` would write for this plan (engine.evaluation.run_card), so a table
        downloaded from the page can be traced to what produced it too. `workbench` is the one the plan is asked on;
        the card keeps the plan's pack fingerprint (what was asked), whatever the pack holds now."""
        from engine.evaluation.run_card import make_run_card

        plan, params = self._plan, {}
        for method, name, value in plan.params:
            params.setdefault(method, {})[name] = value
        spans = [(began, began + t.totals.latency_ms / 1000) for t in self.traces if (began := _began(t)) is not None]
        started = _utc(min(start for start, _ in spans)) if spans else ""
        finished = _utc(max(end for _, end in spans)) if spans else ""
        card = make_run_card(pack=workbench.pack, backend=plan.backend, backend_options=dict(plan.options),
                             embedder=workbench.settings.embedder, methods=self.methods, params=params, judge=False,
                             all_question_ids=list(dict.fromkeys(question for question, _ in plan.steps)),
                             started=started, finished=finished)
        return replace(card, pack_fingerprint=plan.fingerprint or card.pack_fingerprint).to_json()

    # ---- going on with it ----------------------------------------------------------------------------

    def check(self, wanted: JournalPlan, hint: str) -> None:
        """Refuse to go on under another plan than the one it was started with: a changed pack (fingerprint),
        other (question, method) pairs, parameters or model would mix two evaluations' results."""
        problems = self._plan.differences(wanted)
        if problems:
            where = self.journal.folder if self.journal is not None else "memory"
            raise RagscopeError(f"cannot resume the evaluation in {where}: {'; '.join(problems)}. {hint}")

    def replanned(self, workbench: Workbench) -> JournalPlan:
        """This evaluation's own plan made again on `workbench` as it is now: what `check` compares with."""
        by_id = workbench.pack.questions_by_id
        ids = list(dict.fromkeys(question_id for question_id, _ in self._plan.steps))
        missing = [question_id for question_id in ids if question_id not in by_id]
        if missing:
            raise RagscopeError(f"question {missing[0]!r} is no longer in the pack")
        return plan_evaluation(workbench, self.methods, [by_id[i] for i in ids], self._params())

    def run(self, workbench: Workbench, *, workers: int = 1, progress: Progress | None = None
            ) -> tuple[list[QuestionResult], list[Trace]]:
        """Ask what is left, `workers` at a time, in this thread; each answer is journalled (synced) before
        `progress` sees it, so what a progress bar counts done is on disk. Returns every answer so far in
        report order. After `stop` the plan is saved as stopped; after Ctrl-C or a failure the journal keeps
        what was done, for `--resume` or the page to go on from."""
        by_id = workbench.pack.questions_by_id
        questions = [by_id[question_id] for question_id in dict.fromkeys(q for q, _ in self._plan.steps)]
        self._save_stopped(False)

        def record(result: QuestionResult, trace: Trace) -> None:
            if self.journal is not None:
                self.journal.append(result, trace)
            with self._lock:
                self._answered.append((result, trace))
            if progress:
                progress(result, trace)

        with self._lock:
            done = tuple(self._answered)
        answered = runner.evaluate(workbench, self.methods, questions, self._params(), progress=record,
                                   workers=workers, done=done, stop=self._stop)
        if self._stop.is_set() and not self.finished:
            self._save_stopped(True)
        return answered

    def start(self, workbench: Workbench, *, workers: int = 1) -> EvaluationJob:
        """`run` in a background thread (the index prepared first); returns at once. A failure is kept in
        `error` and leaves the job stopped, resumable. RagscopeError when another process is asking it."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return self
            self._writer = self._claim()
            self._error = ""
            self._stop.clear()
            self._thread = threading.Thread(target=self._run_in_background, args=(workbench, workers),
                                            name=f"evaluation-{self.id}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop: no new question is started, the one in flight finishes, and the journal says stopped."""
        self._stop.set()
        if not self.running and not self.finished:
            self._save_stopped(True)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds for the background run to end; True when it is not running."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def refuse(self, reason: str) -> None:
        """Keep it stopped (in this process) with `reason` shown: it may not go on."""
        self._error = reason
        self._plan = replace(self._plan, stopped=True)

    def _claim(self) -> HeldLock | None:
        """The lock that keeps a second process (another app server on this home) from asking this evaluation
        while this one does (issue 26): the app reopens an interrupted evaluation by itself, and without it both
        servers would append to one journal. Held while the background run lasts; the kernel drops it with us."""
        if self.journal is None or self.journal.writer is not None:  # in memory, or `eval --out`'s own lock
            return None
        folder = self.journal.folder
        return hold(folder.parent / f".{folder.name}.lock", lambda pid: EvaluationBusy(
            f"evaluation {self.id} is being asked by another ragscope process{f' (pid {pid})' if pid else ''} on "
            "this home; its answers appear here once it ends: reload then"))

    def _run_in_background(self, workbench: Workbench, workers: int) -> None:
        try:
            workbench.retrieval.ensure_index()
            self.run(workbench, workers=workers)
        except Exception as exc:  # shown on the page; the journal keeps what was done
            log.exception("evaluation %s failed", self.id)
            self._error = str(exc) or type(exc).__name__
            self._save_stopped(True)
        finally:
            self._writer = None  # let go: a stopped evaluation may go on in another process

    def _params(self) -> Params:
        params: Params = {method: {} for method in self.methods}
        for method, name, value in self._plan.params:
            params.setdefault(method, {})[name] = value
        return params

    def _save_stopped(self, stopped: bool) -> None:
        if self._plan.stopped != stopped:
            self._plan = replace(self._plan, stopped=stopped)
            if self.journal is not None:
                self.journal.write_plan(self._plan)


REFUSED_HINT = "Start a new evaluation to ask its questions on the pack as it is now."


class Evaluations:
    """The evaluations kept under one folder (Settings.evaluations), and those open in this process by id:
    a reload, a second tab or a link gets the job still being asked instead of asking it twice."""

    KEPT = 8  # finished or stopped evaluations held in memory besides the running ones

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._open: OrderedDict[str, EvaluationJob] = OrderedDict()

    def begin(self, plan: JournalPlan, workbench: Workbench, *, workers: int = 1) -> EvaluationJob:
        """A new evaluation of `plan` on `workbench`, journalled under a new id and asked in the background."""
        job = EvaluationJob.begin(plan, Journal(self.root, new_journal_id()))
        with self._lock:
            self._keep(job)
        return job.start(workbench, workers=workers)

    def open(self, journal_id: str, workbench_for: WorkbenchFor) -> EvaluationJob:
        """The evaluation with this id: the one open in this process, or read back from disk. One that was
        interrupted (not stopped, not finished, its process gone) goes on, if its plan still holds."""
        with self._lock:
            job = self._open.get(journal_id)
            if job is not None:
                self._open.move_to_end(journal_id)
                return job
            job = EvaluationJob.read(Journal(self.root, journal_id))
            self._keep(job)
        if not job.stopped and not job.finished:
            self.resume(job, workbench_for)
        return job

    def resume(self, job: EvaluationJob, workbench_for: WorkbenchFor) -> EvaluationJob:
        """Go on with a stopped or interrupted evaluation on its own pack, backend and model, under the same
        strict checks as `eval --resume`; a refusal is kept in `job.error` and the job stays stopped."""
        try:
            workbench = workbench_for(job.plan)
            job.check(job.replanned(workbench), REFUSED_HINT)
            return job.start(workbench)
        except EvaluationBusy as exc:  # shown now, not kept: once the other process ends, a reload goes on with it
            job.refuse(str(exc))
            with self._lock:
                self._open.pop(job.id, None)
            return job
        except RagscopeError as exc:
            job.refuse(str(exc))
            return job

    def past(self) -> list[JournalSummary]:
        """The evaluations kept on disk, last written first."""
        return list_journals(self.root)

    def running(self, journal_id: str) -> bool:
        """Whether this process is asking that evaluation now (a journal on disk cannot tell running from
        interrupted)."""
        with self._lock:
            job = self._open.get(journal_id)
        return job is not None and job.running

    def resume_saved(self, journal_id: str, workbench_for: WorkbenchFor) -> EvaluationJob:
        """Go on with a saved evaluation picked from the list: an interrupted one goes on as it opens, a stopped
        one as `resume` does; a refusal is kept in the job's `error`. RagscopeError when there is no such one."""
        job = self.open(journal_id, workbench_for)
        if not job.running and not job.finished:
            self.resume(job, workbench_for)
        return job

    def compare(self, first: JournalSummary, second: JournalSummary, *, swap: bool = False,
                seed: int = 0) -> SavedComparison:
        """Two saved evaluations compared, the one started first as "before" (`swap`: the other way round);
        remembered while neither journal is written to, so a page redrawn on every click does not read both
        journals and bootstrap again."""
        return _compared(self.root, first, second, swap, seed)

    def _keep(self, job: EvaluationJob) -> None:
        self._open[job.id] = job
        idle = [key for key, kept in self._open.items() if not kept.running]
        for key in idle[: max(0, len(idle) - self.KEPT)]:
            del self._open[key]


@dataclass(frozen=True)
class SavedComparison:
    """Two of the app's saved evaluations compared, with the flipped questions' traces to open."""

    before: JournalSummary
    after: JournalSummary
    comparison: EvaluationComparison
    traces: dict[str, Trace]  # both sides' traces of the flipped questions, by id

    def trace(self, trace_id: str) -> Trace:
        return self.traces[trace_id]


@lru_cache(maxsize=4)
def _compared(root: Path, first: JournalSummary, second: JournalSummary, swap: bool, seed: int) -> SavedComparison:
    # JournalSummary holds when each was last written and how far it got: a journal written to since is read again
    sides = sorted((_saved_side(root, summary) for summary in (first, second)), key=lambda side: side[0])
    (_, old, old_plan, old_results, old_traces), (_, new, new_plan, new_results, new_traces) = sides[::-1] if swap \
        else sides
    comparison = compare_evaluations(old_results, new_results, seed=seed, settings=(
        _setting(old_plan, old_traces), _setting(new_plan, new_traces)))
    wanted = {trace_id for flip in comparison.flips for trace_id in (flip.trace_before, flip.trace_after)}
    traces = {t.id: t for t in (*old_traces, *new_traces) if t.id in wanted}
    return SavedComparison(old, new, comparison, traces)


def _saved_side(root: Path, summary: JournalSummary
                ) -> tuple[tuple[float, float], JournalSummary, JournalPlan, tuple[QuestionResult, ...],
                           tuple[Trace, ...]]:
    """A journal read back, keyed by when it began (its first run's start, to the second; its last write when it
    has no run), then by its last write."""
    plan, results, traces = Journal(root, summary.id).read()
    starts = [began for t in traces if (began := _began(t)) is not None]
    return (min(starts, default=summary.written), summary.written), summary, plan, results, traces


def _began(trace: Trace) -> float | None:
    try:
        return datetime.fromisoformat(trace.started).timestamp()
    except ValueError:  # none kept (a failed run's trace) or not a time this code wrote
        return None


def _setting(plan: JournalPlan, traces: Sequence[Trace]) -> Setting:
    return setting_of(traces, pack=Path(plan.pack_path).name, fingerprint=plan.fingerprint, options=plan.options)


@cache
def shared(root: Path) -> Evaluations:
    """The one `Evaluations` of `root` in this process, shared by every browser session."""
    return Evaluations(root)


def _utc(timestamp: float) -> str:
    """A time as the run card writes times (engine.evaluation.run_card.utc_now)."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
