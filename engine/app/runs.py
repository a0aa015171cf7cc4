"""Asking questions: the methods on offer, starting a run on a pack's workbench, saving what it ends with,
replaying a saved one, grading it against the pack's gold answers.

The CLI's `ask` and the pages (Explore, Compare, the tour, History) share this one way of doing each job;
the pages import runs only from here, never the runner, the store or the method registry themselves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from engine.errors import RagscopeError, UnknownNameError
from engine.evaluation.compare import answer_evidence, shared_evidence, trace_overlap
from engine.evaluation.metrics import AnswerScores, backend_failure, grade_trace, pack_question
from engine.knowledge.records import Pack
from engine.live import Partial
from engine.methods.base import METHODS, method_ids
from engine.methods.plugins import load_plugins
from engine.params import AnswerPolicy, ParamSpec, build_params, param_specs
from engine.retrieval.user import user_retrievers
from engine.runner import Run, Workbench
from engine.runs import RunStore, RunSummary
from engine.settings import Settings
from engine.tour import Tour
from engine.trace import Trace
from engine.warmup import Warmup

log = logging.getLogger(__name__)

__all__ = [
    "POLICY_PARAMS", "AnswerPolicy", "AnswerScores", "LiveRuns", "MethodInfo", "Partial", "Run", "RunStore",
    "RunSummary", "Tour", "Warmup", "Workbench", "answer_evidence", "answer_policy", "backend_failure", "finish",
    "grade", "label", "method_choices", "method_info", "new_tour", "open_store", "open_workbench", "pack_question_id",
    "plugin_problems", "prepare", "replay", "shared_evidence", "start", "trace_overlap",
    "warm_up",
]


# ---- the methods on offer --------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodInfo:
    """What a page shows of a method: its names, where it comes from, and its parameter schema."""

    id: str
    label: str
    description: str
    paper: str
    params: tuple[ParamSpec, ...]


def method_choices() -> tuple[str, ...]:
    """Every registered method id (built-in, then the user's plugins), in the registry's order."""
    return method_ids()


def method_info(method_id: str) -> MethodInfo:
    """UnknownNameError for an id the registry does not hold."""
    if method_id not in METHODS:
        raise UnknownNameError(f"unknown method {method_id!r}; known: {', '.join(method_choices())}")
    cls = METHODS[method_id]
    return MethodInfo(method_id, cls.label, cls.description, cls.paper, param_specs(cls.Params))


def paper_card(method_id: str) -> dict[str, Any] | None:
    """The method's reproduce-a-paper card (engine.methods.paper_cards) as plain data for the page to render;
    None for a method without one (a user's own)."""
    from engine.methods.paper_cards import paper_card as card_of

    card = card_of(method_id)
    return asdict(card) if card is not None else None


def label(method_id: str) -> str:
    """The method's label, or its id for a method this process does not know (a saved run of a plugin)."""
    return METHODS[method_id].label if method_id in METHODS else method_id


POLICY_PARAMS: tuple[ParamSpec, ...] = param_specs(AnswerPolicy)  # the run's options beside the method's


def answer_policy(values: Mapping[str, Any]) -> AnswerPolicy:
    """The run's answer policy from its inputs (built from POLICY_PARAMS); RagscopeError when one is out of bounds."""
    return build_params(AnswerPolicy, dict(values))


def plugin_problems() -> tuple[str, ...]:
    """Why each of the user's plugins that failed to load was left out: methods, then retrievers."""
    return tuple(str(problem) for problem in (*load_plugins().problems, *user_retrievers().problems))


# ---- asking ------------------------------------------------------------------------------------------


def open_workbench(pack: Pack, settings: Settings | None = None, backend: str = "offline",
                   options: dict[str, Any] | None = None) -> Workbench:
    """One pack with one backend: its retrieval and tools are built once and shared by every run on it."""
    return Workbench(pack, settings, backend=backend, backend_options=options)


def pack_question_id(pack: Pack, question: str) -> str:
    """The id of the pack's question with this text (spaces normalised), else "" (a question of one's own)."""
    asked = " ".join(question.split())
    return next((q.id for q in pack.questions if q.question == asked), "")


def prepare(workbench: Workbench) -> None:
    """Sync the pack's index before the first run (once per process; free afterwards)."""
    workbench.retrieval.ensure_index()


def start(workbench: Workbench, question: str, method: str, params: dict[str, Any] | None = None, *,
          question_id: str = "", policy: AnswerPolicy | None = None) -> Run:
    """A run ready to execute; a question or parameters that cannot be asked raise here, before any work.
    `policy` settles the answer (default AnswerPolicy(); `params` naming min_confidence, as the CLI's `-p`
    does, set it too)."""
    return workbench.start(question, method, params, question_id=question_id, policy=policy)


def finish(run: Run, store: RunStore) -> Trace:
    """Execute `run` to its end in this thread and save it to History."""
    for _ in run:
        pass
    store.save(run.trace)
    return run.trace


class LiveRuns:
    """The runs still going in this process, by id: each is saved to History when it ends, even when the
    page that started it was reloaded or closed, and until then a reloaded page finds it here."""

    def __init__(self, store: RunStore):
        self.store = store
        self._running: dict[str, Run] = {}
        self._lock = threading.Lock()

    def launch(self, run: Run) -> None:
        """Start `run` in its own thread."""
        def ended(trace: Trace) -> None:
            try:
                self.store.save(trace)
            except RagscopeError as exc:  # the page says so (Explore's notice); one line here, not a traceback
                log.warning("run %s was not saved: %s", trace.id, exc)
            finally:  # a failed save (a full disk) must not leave the run listed as going forever
                with self._lock:
                    self._running.pop(trace.id, None)

        with self._lock:
            self._running[run.head.id] = run
        run.start(on_end=ended)

    def get(self, run_id: str) -> Run | None:
        """The run with this id if it is still going in this process, else None."""
        with self._lock:
            return self._running.get(run_id)


# ---- saved runs --------------------------------------------------------------------------------------


def open_store(settings: Settings) -> RunStore:
    return RunStore(settings.runs_db)


def replay(text: str, name: str) -> Trace:
    """A trace file read back (RagscopeError naming `name` and the problem when it is not one)."""
    return Trace.from_json(text, name)


def grade(trace: Trace, pack: Pack) -> tuple[tuple[str, ...], AnswerScores | None]:
    """The gold answers and the answer's scores when the run asked one of `pack`'s questions; ((), None) else."""
    return grade_trace(trace, pack)


def supporting_docs(trace: Trace, pack: Pack) -> frozenset[str]:
    """The doc ids that support the gold answer when the run asked one of `pack`'s questions on that pack (as
    `grade` decides); empty for a question of the user's own, so a page shows no gold marks at all."""
    question = pack_question(trace, pack)
    return frozenset(question.supporting_docs) if question is not None else frozenset()


# ---- background work on a workbench --------------------------------------------------------------------


def warm_up(workbench: Workbench) -> Warmup:
    """Prepare the workbench in the background (index, encoder, tools, each method once)."""
    return Warmup(workbench).start()


def new_tour(workbench: Workbench, store: RunStore) -> Tour:
    """A demo tour over every method, its stops saved to History as they are chosen (not started yet)."""
    return Tour(workbench, method_ids(), save=store.save)
