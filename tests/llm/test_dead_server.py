"""A run against a model server nobody listens on stops at the first failed call and says so once (issue 22)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import openai
import pytest

from engine.errors import ServerUnreachable
from engine.llm.bounded_http import BoundedClient
from engine.llm.chat import GenerationSettings, Message
from engine.methods.base import method_ids
from engine.runner import Workbench
from engine.tools.llm_call import call_model
from engine.trace import ErrorStep, LlmCallStep
from fake_chat_server import MODEL, closed_port

RETRIES = 2  # OpenAIChatModel's default max_retries: the client retries a refused connection twice


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every HTTP request the client sends (retries included), its retry delays skipped."""
    sent: list[str] = []
    send = BoundedClient.send

    def counted(self: Any, request: Any, **kwargs: Any) -> Any:
        sent.append(str(request.url))
        return send(self, request, **kwargs)

    monkeypatch.setattr(BoundedClient, "send", counted)
    monkeypatch.setattr(openai._base_client, "time", SimpleNamespace(sleep=lambda _s: None, time=time.time))
    return sent


@pytest.mark.parametrize("method", sorted(method_ids()))
def test_a_dead_server_is_asked_once_and_named_in_one_error_step(mini_pack, settings, attempts, method):
    url = closed_port()
    workbench = Workbench(mini_pack, settings, backend="openai", backend_options={"base_url": url, "model": MODEL})
    trace = workbench.ask(mini_pack.questions[0].question, method)
    errors = [s for s in trace.steps if isinstance(s, ErrorStep)]
    assert len(attempts) == 1 + RETRIES  # one call, with the client's two documented quick retries
    assert len(errors) == 1 and not errors[0].recoverable
    assert errors[0].title == "Model server unreachable: run stopped"
    assert errors[0].message.startswith(f"cannot reach {url}/v1: connection refused — is the server running?")
    assert trace.answer.refused


def test_an_unreachable_server_ends_the_call_while_other_failures_stay_steps():
    class Dead:
        backend, model = "openai", MODEL

        def complete(self, messages, settings):
            raise ServerUnreachable("cannot reach http://127.0.0.1:9/v1: connection refused")

    class Broken(Dead):
        def complete(self, messages, settings):
            raise ValueError("bad reply")

    ask = (Message("user", "Who wrote Hamlet?"),)
    with pytest.raises(ServerUnreachable):
        call_model(Dead(), ask, GenerationSettings(), role="reader")
    reply = call_model(Broken(), ask, GenerationSettings(), role="reader")
    assert reply.failed and isinstance(reply.steps[0], LlmCallStep) and isinstance(reply.steps[1], ErrorStep)
