"""A LangChain runnable (an LCEL chain written elsewhere) registered as a ragscope method.

`lcel_method(id, label, build)` registers a Method whose run calls `build(LcelTools)` — the pack's
retriever and the chosen backend's chat model, both as LangChain objects — and invokes the chain it returns
on the question. The chain runs in a thread of its own while the run yields the steps its callbacks record,
so the page shows each one as it happens and Stop ends the run at once (the chain itself at its next event).
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

from engine.errors import MethodError, RunCancelled, ServerUnreachable
from engine.lcel.chat import BackendChatModel, ReaderChatModel
from engine.lcel.steps import MAX_OUTPUT_CHARS, StepRecorder, capped
from engine.methods.base import Method, RunContext, register
from engine.methods.common import distinct_docs
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.tools.base import IDK
from engine.trace import AnswerStep, Step
from engine.untraced import untraced

POLL_S = 0.1  # how often a waiting run looks at Stop


@dataclass(frozen=True)
class LcelParams:
    k: int = param(4, min=1, max=30, help="How many chunks the pack's retriever returns to the chain.")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES, help="The pack's retriever the chain is given.")
    max_new_tokens: int = param(128, min=16, max=1024, help="Longest reply of each of the chain's model calls.")


@dataclass(frozen=True)
class LcelTools:
    """What `build` gets for one run: the pack's retriever, the backend's chat model, the run's parameters."""

    retriever: BaseRetriever
    chat_model: BaseChatModel
    params: LcelParams


Build = Callable[[LcelTools], Runnable]


def lcel_method(method_id: str, label: str, build: Build, *, description: str, input_key: str = "") -> type[Method]:
    """Register a method that runs `build(tools)` on each question (given as the string itself, or as
    `{input_key: question}` for a chain that takes a dict, e.g. `create_retrieval_chain`'s "input")."""
    if not callable(build):
        raise MethodError(f"lcel_method({method_id!r}) needs build, a function from LcelTools to a runnable; "
                          f"got {build!r}")

    def run(self: Method, question: str, ctx: RunContext) -> Iterator[Step]:
        yield from run_chain(build, question if not input_key else {input_key: question}, question, ctx)

    attrs = {"id": method_id, "label": label, "description": description, "Params": LcelParams, "run": run,
             "__module__": getattr(build, "__module__", __name__)}
    return register(type(f"Lcel_{method_id}", (Method,), attrs))


def run_chain(build: Build, given: Any, question: str, ctx: RunContext) -> Iterator[Step]:
    """The chain's steps as its callbacks record them, then its output as the answer."""
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    recorder = StepRecorder(emit=lambda step: events.put(("step", step)), check=ctx.check)
    chain, reader = _built(build, question, ctx, recorder)
    worker = threading.Thread(target=_invoke, args=(chain, given, recorder, events, contextvars.copy_context()),
                              name="lcel-chain", daemon=True)
    worker.start()
    while True:
        try:
            what, value = events.get(timeout=POLL_S)
        except queue.Empty:
            ctx.check()
            continue
        if what == "step":
            yield value
        elif what == "failed":
            if isinstance(value, (RunCancelled, ServerUnreachable)):
                raise value  # the run says these once: "Stopped", or that the server cannot be reached
            error = recorder.error_step("chain", value)  # None when a callback recorded it where it happened
            if error is not None:
                yield error
            yield _answer(IDK, ctx, recorder, title=f"Refused: the chain failed ({type(value).__name__})",
                          refused=True)
            return
        else:
            yield _final(value, ctx, recorder, reader)
            return


def _built(build: Build, question: str, ctx: RunContext,
           recorder: StepRecorder) -> tuple[Runnable, ReaderChatModel | None]:
    params: LcelParams = ctx.params
    retriever = ctx.retrieval.retriever(params.retriever, k=params.k)
    reader = None
    if ctx.tools.chat is None:
        reader = ReaderChatModel(reader=ctx.tools.reader, question=question, hits=lambda: recorder.hits)
    chat = reader or BackendChatModel(chat=ctx.tools.chat, max_new_tokens=params.max_new_tokens)
    name = getattr(build, "__qualname__", repr(build))
    try:
        chain = build(LcelTools(retriever=retriever, chat_model=chat, params=params))
    except Exception as exc:  # the user's code: its failure is named as theirs, not as a ragscope bug
        raise MethodError(f"{name!r} failed to build the chain: {type(exc).__name__}: {exc}") from exc
    if not isinstance(chain, Runnable):
        raise MethodError(f"{name!r} returned {type(chain).__name__}, not a "
                          "LangChain runnable; return the chain, e.g. retriever | prompt | chat_model | parser")
    return chain, reader


def _invoke(chain: Runnable, given: Any, recorder: StepRecorder, events: queue.Queue[tuple[str, Any]],
            context: contextvars.Context) -> None:
    """In the chain's thread, with the run's context (a watching page's reply stream) and LangSmith tracing
    off whatever the environment says: nothing of a run leaves the machine unless the user's chain sends it."""
    def invoke() -> None:
        with untraced():
            events.put(("done", chain.invoke(given, config={"callbacks": [recorder]})))

    try:
        context.run(invoke)
    except Exception as exc:  # noqa: BLE001 — the recorder has the error step; the run turns it into a refusal
        events.put(("failed", exc))


def _final(output: Any, ctx: RunContext, recorder: StepRecorder, reader: ReaderChatModel | None) -> AnswerStep:
    """The chain's output as the answer; offline, the reader's last reading gives citations and confidence."""
    text = capped(answer_text(output), MAX_OUTPUT_CHARS).strip()
    reading = reader.readings[-1] if reader and reader.readings else None
    if reading is None:
        return _answer(text or IDK, ctx, recorder, title="Answer", refused=not text)
    return _answer(text, ctx, recorder, title="Refused: not enough evidence" if reading.refused else "Answer",
                   refused=reading.refused, citations=reading.citations, confidence=reading.confidence)


def _answer(text: str, ctx: RunContext, recorder: StepRecorder, *, title: str, refused: bool,
            citations: tuple[str, ...] = (), confidence: float = 0.0) -> AnswerStep:
    return AnswerStep(iteration=1, title=title, text=text, citations=citations, confidence=confidence,
                      refused=refused, backend=ctx.tools.backend, model=ctx.tools.model,
                      evidence=distinct_docs(recorder.hits))


def answer_text(output: Any) -> str:
    """The answer in a chain's output: a string (StrOutputParser), a message, or a dict holding it under
    "answer" (create_retrieval_chain), "output", "result" or "text"."""
    if isinstance(output, BaseMessage):
        return output.text
    if isinstance(output, dict):
        found = next((output[key] for key in ("answer", "output", "result", "text") if key in output), "")
        return answer_text(found)
    return output if isinstance(output, str) else str(output)
