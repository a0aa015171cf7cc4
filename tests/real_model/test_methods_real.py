"""Every method, run end to end by a real instruct model (SmolLM2-135M-Instruct on the CPU, issue 23).

Fakes test plumbing; these test what a weak real model must not break: the run finishes; an output that
does not parse is a recoverable `error` step after the call that keeps the raw text; no prompt exceeds
the model's context; attention is captured; the answer is never the prompt echoed; RAS's
[NO_RETRIEVAL] is shown as the planner's decision. The questions are the pack's first one-hop and
first multi-hop question, whatever the pack says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from engine.methods.base import method_ids
from engine.methods.hybrid.reasoner import REASON_SETTINGS
from engine.trace import (
    AnswerStep,
    AttentionStep,
    DecisionStep,
    ErrorStep,
    LlmCallStep,
    RetrievalStep,
    Step,
    Trace,
)
from paths import ROOT

pytestmark = pytest.mark.llm

# A run's model work, which its time follows: the heaviest run here (ToG-2, 8 calls) reads about 4,800 prompt
# tokens and writes about 300, in about a minute on a loaded 2-core machine. About three times that is allowed (the
# 240 s this test gave a run before issue 24); the seconds themselves are bench/llm_quality.py's to report.
RUN_PROMPT_TOKENS = 15_000
RUN_OUTPUT_TOKENS = 1_500
TEMPLATE_LINES = {line.strip().lower() for path in (ROOT / "engine").rglob("prompts/*.txt")
                  for line in path.read_text(encoding="utf-8").splitlines() if len(line.split()) >= 4}


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def echoed(answer: str, question: str, trace: Trace) -> str:
    """Why `answer` is the prompt handed back rather than an answer, or ''."""
    said = " ".join(words(answer))
    if not said:
        return ""
    if said == " ".join(words(question)) or (len(words(question)) >= 4 and " ".join(words(question)) in said):
        return "the question"
    if answer.strip().lower() in TEMPLATE_LINES:
        return "an instruction line"
    for step in trace.steps:
        for hit in getattr(step, "hits", ()) if isinstance(step, RetrievalStep) else ():
            chunk = words(hit.text)
            if len(words(answer)) >= 12 and len(set(words(answer)) & set(chunk)) >= 0.5 * len(set(chunk)):
                return f"chunk {hit.doc_id}"
    return ""


def fallbacks_after_calls(steps: tuple[Step, ...]) -> list[tuple[LlmCallStep, ErrorStep]]:
    pairs, last = [], None
    for step in steps:
        if isinstance(step, LlmCallStep):
            last = step
        elif isinstance(step, ErrorStep) and last is not None and "model failed" not in step.message:
            pairs.append((last, step))
    return pairs


@pytest.fixture(scope="module")
def context_tokens(real_workbench) -> int:
    return int(real_workbench.tools.chat.model_obj.config.max_position_embeddings)


def demo_questions(pack) -> list:
    one_hop = next(q for q in pack.questions if q.hops == 1 and q.type == "factoid")
    multi_hop = next(q for q in pack.questions if q.hops >= 2)
    return [one_hop, multi_hop]


# The multi-round methods run two rounds here (RAS T_max, ToG-2 D) and RAS extracts triples from 2 chunks a
# sub-query (a 160-token call each) so the suite stays within its time on 2 cores; every role's calls,
# parsers and fallbacks still run. bench/llm_quality.py runs the papers' defaults.
CI_PARAMS = {"ras": {"max_iterations": 2, "k": 2}, "tog2": {"depth": 2}}


@dataclass(frozen=True)
class RealRun:
    question: str
    trace: Trace


@pytest.fixture(scope="module")
def real_runs(real_workbench, demo_pack):
    """`real_runs(method)`: the method's runs on the demo questions, each asked once per module."""
    runs: dict[str, list[RealRun]] = {}

    def get(method: str) -> list[RealRun]:
        if method not in runs:
            runs[method] = []
            for question in demo_questions(demo_pack):
                trace = real_workbench.ask(question.question, method, CI_PARAMS.get(method), question_id=question.id)
                runs[method].append(RealRun(question.question, trace))
        return runs[method]

    return get


@pytest.mark.parametrize("method", method_ids())
def test_every_method_answers_demo_questions_with_a_real_model(real_runs, context_tokens, method):
    for run in real_runs(method):
        trace, where = run.trace, f"{method} on {run.question!r}"
        answers = [s for s in trace.steps if isinstance(s, AnswerStep)]
        assert answers, f"{where}: the run did not finish with an answer"
        fatal = [s.message for s in trace.steps if isinstance(s, ErrorStep) and not s.recoverable]
        assert not fatal, f"{where}: {fatal}"
        calls = [s for s in trace.steps if isinstance(s, LlmCallStep)]
        assert calls and all(c.backend.startswith("hf: SmolLM2") for c in calls), where
        for call in calls:
            assert call.tokens_in + call.tokens_out <= context_tokens, f"{where}: {call.role} exceeds the context"
            assert call.output or call.tokens_out == 0, f"{where}: {call.role} lost its raw output"
        for call, error in fallbacks_after_calls(trace.steps):  # a fallback follows the call that holds the raw text
            assert error.recoverable and (call.output or call.tokens_out == 0), f"{where}: {error.message}"
        assert any(isinstance(s, AttentionStep) for s in trace.steps), f"{where}: no attention captured"
        final = answers[-1]
        for text in (final.text, final.guess):
            assert not echoed(text, run.question, trace), f"{where}: answer {text!r} echoes the prompt"
        totals = trace.totals
        assert totals.tokens_in <= RUN_PROMPT_TOKENS and totals.tokens_out <= RUN_OUTPUT_TOKENS, f"{where}: {totals}"
        if method == "ras":
            assert_no_retrieval_is_shown_as_a_decision(trace, where)


def test_hybrid_spends_no_call_for_nothing_and_bounds_every_reply(real_runs):
    """Before issue 23's fixes, "Where was Marie Curie born?" cost hybrid 13 calls and 5 minutes: 3 attribute
    and 5 calculator samples that repeated the first word for word, a calculator asked about a question with
    no number in it, and 2 reasoning samples that looped to 512 tokens each."""
    for run in real_runs("hybrid"):
        roles = [s.role for s in run.trace.steps if isinstance(s, LlmCallStep)]
        if not re.search(r"\d", run.question):  # no number to compute with: the calculator stage is skipped
            assert not [r for r in roles if r.startswith("calculator")], run.question
            skip = next(s for s in run.trace.steps if isinstance(s, DecisionStep) and s.iteration == 3)
            assert skip.action == "skip", run.question
        assert len([r for r in roles if r.startswith("attributes")]) <= 2  # the local model repeats its first vote
        assert len([r for r in roles if r.startswith("reasoning")]) <= 1, roles
        for call in (s for s in run.trace.steps if isinstance(s, LlmCallStep)):
            assert call.tokens_out <= REASON_SETTINGS.max_new_tokens, call.role
        answer = next(s for s in run.trace.steps if isinstance(s, AnswerStep))
        assert "<" not in answer.text and "unknown" not in answer.text.lower()  # no placeholder of the format


def assert_no_retrieval_is_shown_as_a_decision(trace: Trace, where: str) -> None:
    """RAS's planner may answer [NO_RETRIEVAL] first: a decision shown as such, then a closed-book answer."""
    first = next(s for s in trace.steps if isinstance(s, LlmCallStep) and s.role == "planner")
    decision = next(s for s in trace.steps if isinstance(s, DecisionStep))
    if "[NO_RETRIEVAL]" in first.output.upper().replace(" ", "") and decision.action == "no_retrieval":
        assert "no retrieval" in decision.title and "closed-book" in decision.title, where
        assert not any(isinstance(s, RetrievalStep) for s in trace.steps), where
    else:
        assert decision.action in ("subq", "no_retrieval", "sufficient"), f"{where}: {decision.title}"
