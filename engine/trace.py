"""Step kinds and the Trace: the contract between the engine and the UI (DESIGN §2).

A method yields steps as it works; the UI renders each kind with one component and a saved
trace replays without recomputing. Every type here is a frozen dataclass with exact JSON
round-trip; an unknown kind in a saved trace loads as `UnknownStep` instead of failing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from engine.codec import from_jsonable, loads_bounded, to_jsonable
from engine.errors import RagscopeError
from engine.params import AnswerPolicy, split_policy
from engine.text import content_words

SCHEMA_VERSION = 1
Scalar = str | int | float | bool | None


# ---- payload records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk; `provenance` says what pulled it (rule, sub-query, entity). `score` is None when the
    retriever gives none (most LangChain retrievers, e.g. a vector store's `as_retriever()`): shown as "no score",
    never made up."""

    doc_id: str
    chunk_id: str
    title: str
    text: str
    score: float | None
    rank: int
    retriever: str = ""
    provenance: str = ""


@dataclass(frozen=True)
class RuleMatch:
    id: str
    text: str
    head: str
    body: tuple[str, ...]
    confidence: float
    support: int
    similarity: float


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    kind: str = "entity"
    score: float | None = None


@dataclass(frozen=True)
class Edge:
    source: str
    relation: str
    target: str
    score: float | None = None
    provenance: str = ""


@dataclass(frozen=True)
class Segment:
    """A labelled span of attention columns [start, end) — a document, rule, triple block, question."""

    label: str
    start: int
    end: int
    kind: str = "document"
    # what a reader calls it (a document's title, else the start of its text); "" in older traces
    title: str = ""


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token and the natural-log probability the model gave it (issue 18)."""

    token: str
    logprob: float


@dataclass(frozen=True)
class AttributeLabel:
    name: str
    value: str
    confidence: float


# ---- steps ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Step:
    """Common header of every step: iteration 0 is set-up, 1.. are loop rounds."""

    kind: ClassVar[str] = ""
    iteration: int = 0
    title: str = ""
    elapsed_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class RulesMatchedStep(Step):
    kind: ClassVar[str] = "rules_matched"
    rules: tuple[RuleMatch, ...]


@dataclass(frozen=True, kw_only=True)
class RetrievalStep(Step):
    kind: ClassVar[str] = "retrieval"
    query: str
    retriever: str
    hits: tuple[Hit, ...]

    @property
    def query_terms(self) -> tuple[str, ...]:
        """The query's words as lexical retrieval compares them (stopwords out): what the chunk view marks."""
        return tuple(content_words(self.query))


@dataclass(frozen=True, kw_only=True)
class GraphDeltaStep(Step):
    """KG change in one round; the graph at iteration i is the fold of all deltas up to i."""

    kind: ClassVar[str] = "graph_delta"
    added_nodes: tuple[Node, ...] = ()
    added_edges: tuple[Edge, ...] = ()
    pruned_nodes: tuple[Node, ...] = ()
    pruned_edges: tuple[Edge, ...] = ()
    focus: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DecisionStep(Step):
    kind: ClassVar[str] = "decision"
    action: str
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class LlmCallStep(Step):
    kind: ClassVar[str] = "llm_call"
    role: str
    prompt: str
    output: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    backend: str = ""
    # the output's tokens with their logprobs, when the backend reports them (absent from older traces)
    logprobs: tuple[TokenLogprob, ...] = ()
    # why the reply was cut short ("" when it was not): a time, token or byte bound of issue 26 was reached
    cut: str = ""

    @property
    def mean_logprob(self) -> float | None:
        """How sure the model was of its output on average; None when the backend gave no logprobs."""
        return sum(t.logprob for t in self.logprobs) / len(self.logprobs) if self.logprobs else None

    @property
    def perplexity(self) -> float | None:
        """exp(−mean logprob): 1 for an output the model was certain of, k for a k-way guess per token."""
        mean = self.mean_logprob
        return None if mean is None else math.exp(-mean)


@dataclass(frozen=True, kw_only=True)
class AttentionStep(Step):
    """Rows × columns of attention mass (e.g. layer × segment), head-averaged unless `note` says."""

    kind: ClassVar[str] = "attention"
    name: str
    matrix: tuple[tuple[float, ...], ...]
    x_labels: tuple[str, ...]
    y_labels: tuple[str, ...]
    segments: tuple[Segment, ...] = ()
    note: str = ""
    # per-head matrices (heads × rows × columns) when small enough to keep, e.g. the R2-Former's k × k
    heads: tuple[tuple[tuple[float, ...], ...], ...] = ()
    # which run the map belongs to, so two runs can be shown side by side (e.g. "R2AG", "plain RAG")
    group: str = ""
    # labels (x or y) to mark, e.g. the gold documents when the question came from the pack
    highlight: tuple[str, ...] = ()
    # the generated token a one-token map is about (its text and id); "" / -1 in older traces
    token: str = ""
    token_id: int = -1


@dataclass(frozen=True, kw_only=True)
class FeaturesStep(Step):
    kind: ClassVar[str] = "features"
    columns: tuple[str, ...]
    rows: tuple[tuple[Scalar, ...], ...]
    note: str = ""  # what the columns mean or where they come from


@dataclass(frozen=True, kw_only=True)
class AttributesStep(Step):
    kind: ClassVar[str] = "attributes"
    labels: tuple[AttributeLabel, ...]
    method: str = ""  # how they were predicted, e.g. "logreg" or "icl" (hybrid)
    votes: tuple[str, ...] = ()  # one entry per sampled LLM vote, when there was a vote


@dataclass(frozen=True, kw_only=True)
class CalculationStep(Step):
    kind: ClassVar[str] = "calculation"
    expression: str
    result: float | None = None
    error: str = ""
    status: str = ""  # hybrid: ok | dup | forbidden_token | eval_error | trivial | empty
    source: str = ""  # who wrote the expression, e.g. "LLM sample 2" or "years from the evidence"


@dataclass(frozen=True, kw_only=True)
class AnswerStep(Step):
    kind: ClassVar[str] = "answer"
    text: str
    citations: tuple[str, ...] = ()
    confidence: float = 0.0
    refused: bool = False
    backend: str = ""
    model: str = ""
    evidence: tuple[str, ...] = ()  # doc ids in the method's final reading order (DESIGN §10)
    guess: str = ""  # a calibration refusal's held-back best guess, scored for AUROC; "" otherwise
    min_confidence: float | None = None  # the run's AnswerPolicy threshold a calibration refusal fell below

    def __post_init__(self) -> None:
        require_bool("refused", self.refused)


def require_bool(name: str, value: object) -> None:
    """A flag set from a string ('no evidence', a rationale) is truthy and silently wrong: refuse it."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


@dataclass(frozen=True, kw_only=True)
class ErrorStep(Step):
    kind: ClassVar[str] = "error"
    message: str
    recoverable: bool = True
    # a model server, vector store or other outside service failed (not the method's own code): evaluations
    # count these per method and the CLI exits non-zero when an answer rests on one (issue 26)
    backend_failure: bool = False

    def __post_init__(self) -> None:
        require_bool("backend_failure", self.backend_failure)


@dataclass(frozen=True, kw_only=True)
class UnknownStep(Step):
    """A step of a kind this version does not know, kept verbatim so old or newer traces still open."""

    kind: ClassVar[str] = "unknown"
    original_kind: str
    data: dict[str, Any]


STEP_TYPES: dict[str, type[Step]] = {
    cls.kind: cls
    for cls in (
        RulesMatchedStep,
        RetrievalStep,
        GraphDeltaStep,
        DecisionStep,
        LlmCallStep,
        AttentionStep,
        FeaturesStep,
        AttributesStep,
        CalculationStep,
        AnswerStep,
        ErrorStep,
    )
}


def step_to_dict(step: Step) -> dict[str, Any]:
    if isinstance(step, UnknownStep):
        return {"kind": step.original_kind, **step.data}
    return {"kind": step.kind, **to_jsonable(step)}


_HEADER = frozenset({"kind", *(f.name for f in fields(Step))})


def saved_kind(step: Step) -> str:
    """The kind as saved: a step this version does not know keeps its own name, not "unknown"."""
    return step.original_kind if isinstance(step, UnknownStep) else step.kind


def step_payload(step: Step) -> dict[str, Any]:
    """A step's own fields as JSON values, the common header left out: what every view of a kind without a
    view of its own (text, tour caption, OpenInference, the UI) shows, so a new kind needs no edit there."""
    return {name: value for name, value in step_to_dict(step).items() if name not in _HEADER}


def step_from_dict(data: Any, path: str = "step") -> Step:
    """A step from its JSON object; a wrong field type raises TypeError naming the field's path."""
    kind = from_jsonable(str, from_jsonable(dict[str, Any], data, path).get("kind", ""), f"{path}.kind")
    payload = {k: v for k, v in data.items() if k != "kind"}
    cls = STEP_TYPES.get(kind)
    if cls is None:  # kept verbatim, but its header is checked: the UI sorts and labels by it
        head = from_jsonable(Step, payload, path)
        return UnknownStep(iteration=head.iteration, title=head.title or kind, elapsed_ms=head.elapsed_ms,
                           original_kind=kind, data=payload)
    return from_jsonable(cls, payload, path)


# ---- trace ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Totals:
    latency_ms: float = 0.0
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass(frozen=True)
class Trace:
    id: str
    question: str
    method: str
    backend: str
    model: str
    pack: str
    params: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    steps: tuple[Step, ...] = ()
    totals: Totals = Totals()
    question_id: str = ""
    policy: AnswerPolicy | None = None  # the run's answer policy; None in traces saved before issue 24
    schema_version: int = SCHEMA_VERSION

    @property
    def answer(self) -> AnswerStep | None:
        """The final answer is the last answer step (a stopped run may have none)."""
        answers = [s for s in self.steps if isinstance(s, AnswerStep)]
        return answers[-1] if answers else None

    @property
    def iterations(self) -> int:
        return max((s.iteration for s in self.steps), default=0)

    def settings(self) -> dict[str, Any]:
        """The method parameters and answer policy the run was asked with, in one dict (the boxes a page refills,
        the line it shows, what a diff compares); a trace saved before issue 24 kept its policy among its params."""
        params, named = split_policy(self.params)
        policy = self.policy or named
        return {**params, **(to_jsonable(policy) if policy is not None else {})}

    def with_steps(self, steps: tuple[Step, ...], latency_ms: float) -> Trace:
        """A finished copy whose totals are summed from its steps."""
        calls = [s for s in steps if isinstance(s, LlmCallStep)]
        totals = Totals(
            latency_ms=latency_ms,
            llm_calls=len(calls),
            tokens_in=sum(c.tokens_in for c in calls),
            tokens_out=sum(c.tokens_out for c in calls),
        )
        return replace(self, steps=tuple(steps), totals=totals)

    def to_dict(self) -> dict[str, Any]:
        data = to_jsonable(replace(self, steps=()))
        data["steps"] = [step_to_dict(s) for s in self.steps]
        return data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: Any, where: str = "trace") -> Trace:
        """Checked field by field: a saved trace is a file anyone can edit (issue 15)."""
        try:
            head = from_jsonable(cls, {k: v for k, v in from_jsonable(dict[str, Any], data, "trace").items()
                                       if k != "steps"}, "trace")
            steps = from_jsonable(tuple[Any, ...], data.get("steps", []), "trace.steps")
            return replace(head, steps=tuple(step_from_dict(s, f"trace.steps[{i}]") for i, s in enumerate(steps)))
        except TypeError as exc:
            raise RagscopeError(f"{where}: not a ragscope trace: {exc}") from None

    @classmethod
    def from_json(cls, text: str, where: str = "trace") -> Trace:
        """`where` names the file in messages (`where:line: problem`)."""
        return cls.from_dict(loads_bounded(text, where), where)
