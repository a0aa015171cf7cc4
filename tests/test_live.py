"""Token streaming into a live view (issue 18): the reply of the model call in flight reaches a page that
watches the run, the steps stay those of a plain run, and runs nobody watches do not stream."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from engine.live import Partial, listening, reply_sink
from engine.methods import base
from engine.runner import Workbench
from engine.trace import DecisionStep, LlmCallStep, Step
from fake_chat_server import MODEL, Answerer, ChatServer, serving

QUESTION = "When was Grace Hopper born?"
TOKENS = ("Answer", ":", " 1906", "\n", "Evidence", ":", " [1]")


# ---------------------------------------------------------------- the channel


def test_a_sink_reports_the_growing_reply_in_order_and_only_where_someone_listens() -> None:
    assert reply_sink("reader") is None
    heard: list[Partial] = []
    with listening(heard.append):
        sink = reply_sink("reader")
        assert sink is not None
        for piece in ("Sha", "kes", "peare."):
            sink(piece)
        elsewhere: list[object] = []
        thread = threading.Thread(target=lambda: elsewhere.append(reply_sink("reader")))
        thread.start()
        thread.join()
    assert heard == [Partial("reader", "Sha"), Partial("reader", "Shakes"), Partial("reader", "Shakespeare.")]
    assert elsewhere == [None]  # another thread (another session's run) is not this listener's
    assert reply_sink("reader") is None


# ---------------------------------------------------------------- runs on a streaming backend


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with serving() as script:
        script.answerer = Answerer(TOKENS, logprobs=(-0.01, -0.02, -0.3, -0.05, -0.1, -0.01, -0.2), token_delay_s=0.01)
        yield script


@pytest.fixture
def served_workbench(mini_pack, settings, chat_server: ChatServer) -> Workbench:
    options = {"base_url": chat_server.url, "model": MODEL}
    return Workbench(mini_pack, settings, backend="openai", backend_options=options)


def untimed(steps: tuple[Step, ...] | list[Step]) -> list[Step]:
    """Steps without their clocks: the only thing two runs of one question may differ in."""
    return [replace(s, latency_ms=0.0, elapsed_ms=0.0) if isinstance(s, LlmCallStep) else replace(s, elapsed_ms=0.0)
            for s in steps]


def test_a_watched_run_shows_the_reply_growing_before_its_step_and_yields_a_plain_runs_steps(
    served_workbench: Workbench, chat_server: ChatServer,
) -> None:
    plain = served_workbench.ask(QUESTION, "vanilla")
    run = served_workbench.start(QUESTION, "vanilla")
    events = list(run.live())
    steps = [e for e in events if not isinstance(e, Partial)]
    assert untimed(steps) == untimed(plain.steps) == untimed(run.trace.steps)
    [call] = [s for s in steps if isinstance(s, LlmCallStep)]
    assert call.output == "".join(TOKENS) and call.logprobs and call.tokens_in == 7  # the server's own counts
    before = events[: events.index(call)]
    partials = [e for e in before if isinstance(e, Partial)]
    assert len(partials) >= 2 and all(p.role == "reader" for p in partials)
    texts = [p.text for p in partials]
    assert all(call.output.startswith(t) for t in texts) and texts == sorted(set(texts), key=len)  # growing, in order
    assert not [e for e in events[events.index(call):] if isinstance(e, Partial)]  # the step replaced it
    streamed = [r["body"].get("stream", False) for r in chat_server.requests]
    assert streamed == [False, True]  # the plain run asked once without streaming, the watched one streamed


def test_a_run_nobody_watches_does_not_stream(served_workbench: Workbench, chat_server: ChatServer) -> None:
    run = served_workbench.start(QUESTION, "vanilla")
    assert [s.kind for s in run][-1] == "answer"
    assert [r["body"].get("stream", False) for r in chat_server.requests] == [False]


def test_a_watched_run_on_a_backend_that_does_not_stream_yields_steps_only(mini_workbench: Workbench) -> None:
    plain = mini_workbench.ask(QUESTION, "vanilla")
    events = list(mini_workbench.start(QUESTION, "vanilla").live())
    assert untimed(events) == untimed(plain.steps)


@dataclass(frozen=True)
class _Params:
    pass


class _Gated(base.Method):
    """Yields a step, waits until the test opens the gate, yields another: a stop lands in between."""

    id = "test-gated"
    label = paper = description = "gated"
    Params = _Params
    gate = threading.Event()

    def run(self, question: str, ctx: base.RunContext) -> Iterator[Step]:
        yield DecisionStep(iteration=1, action="continue", detail="before the gate")
        assert self.gate.wait(timeout=10)
        yield DecisionStep(iteration=2, action="continue", detail="after the gate")
        yield DecisionStep(iteration=3, action="continue", detail="never reached: the stop comes first")


def test_a_watched_run_stopped_half_way_keeps_its_steps_and_plain_iteration_finishes_it(
    mini_workbench: Workbench, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Explore's Stop reruns the page, which then iterates the same Run plainly to its end."""
    monkeypatch.setitem(base.METHODS, _Gated.id, _Gated)
    run = mini_workbench.start("anything?", _Gated.id)
    first = next(run.live())  # the page drew one step, then was interrupted by the Stop
    run.stop()
    _Gated.gate.set()
    rest = list(run)
    assert run.trace.steps == (first, *rest)
    assert [s.detail for s in rest] == ["after the gate", "stopped by the user; the steps so far are kept"]
    assert list(run) == [] and list(run.live()) == []  # a finished run yields nothing more, and does not hang
