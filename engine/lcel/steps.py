"""A LangChain callback handler that turns a runnable's retriever, model, tool and error events into ragscope steps.

LangChain calls the handler from the thread that runs the runnable; each step goes to `emit` at once, so the
page shows it while the pipeline is still working. The handler also checks the run's Stop at every start
event: with `raise_error` set, LangChain lets that `RunCancelled` through and the pipeline ends there.
What it records is capped (prompt, output, hits), because a user's pipeline may pass megabytes around.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from engine.errors import BackendError, RunCancelled, ServerUnreachable
from engine.retrieval.user import document_score
from engine.trace import DecisionStep, ErrorStep, Hit, LlmCallStep, RetrievalStep, Step, TokenLogprob

MAX_PROMPT_CHARS = 20_000  # a long stuffed prompt still shows its instructions and the start of its evidence
MAX_OUTPUT_CHARS = 8_000
MAX_HITS = 50
MAX_HIT_CHARS = 4_000
MAX_LOGPROBS = 2_000  # tokens of one reply


def capped(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters not recorded]"


def render_messages(messages: Sequence[BaseMessage]) -> str:
    return "\n\n".join(f"{message.type}: {message.text}" for message in messages)


def hit_from_document(doc: Document, rank: int) -> Hit:
    """A Hit from any retriever's Document: ragscope's own carry every field in their metadata; another's
    keeps its source as the doc id and a content hash as the chunk id, so it is still shown."""
    meta = doc.metadata
    source = str(meta.get("doc_id") or meta.get("source") or doc.id or "")
    digest = hashlib.sha256(doc.page_content.encode()).hexdigest()[:12]
    return Hit(doc_id=source or f"doc-{digest}", chunk_id=str(meta.get("chunk_id") or doc.id or f"chunk-{digest}"),
               title=str(meta.get("title") or source), text=capped(doc.page_content, MAX_HIT_CHARS),
               score=document_score(meta), rank=int(meta.get("rank", rank)),
               retriever=str(meta.get("retriever", "")))


class StepRecorder(BaseCallbackHandler):
    """Steps from a runnable's events, handed to `emit` as they happen; `hits` keeps what was retrieved."""

    raise_error = True  # the Stop check's RunCancelled must end the pipeline, not be logged and ignored

    def __init__(self, emit: Callable[[Step], None], check: Callable[[], None], iteration: int = 1):
        self.emit, self.check, self.iteration = emit, check, iteration
        self.hits: list[Hit] = []
        self._queries: dict[UUID, str] = {}  # retriever runs in flight, outermost ones
        self._inner: dict[UUID, str] = {}  # … and the parts of those
        self._outer: dict[int, UUID] = {}  # thread → the outermost retriever run in flight there
        self._calls: dict[UUID, tuple[str, str, float]] = {}  # run id → (prompt, backend, start time)
        self._tools: dict[UUID, tuple[str, str]] = {}  # run id → (tool name, input)
        self._failures: set[int] = set()  # ids of exceptions already recorded: one error climbs every parent chain

    # ---- retriever ---------------------------------------------------------------------------------
    # A retriever made of retrievers (ragscope's hybrid, an EnsembleRetriever) reports its parts as runs of
    # their own, begun in its thread while it runs (their parent is not always it): only the outermost is
    # recorded, as it is the one whose documents the chain goes on with.
    def on_retriever_start(self, serialized: dict[str, Any], query: str, *, run_id: UUID,
                           parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.check()
        thread = threading.get_ident()
        if thread in self._outer or parent_run_id in self._queries or parent_run_id in self._inner:
            self._inner[run_id] = query
        else:
            self._outer[thread] = run_id
            self._queries[run_id] = query

    def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any) -> None:
        if self._end_retriever(run_id) is None:
            return
        hits = tuple(hit_from_document(doc, rank) for rank, doc in enumerate(documents[:MAX_HITS], start=1))
        self.hits += hits
        query = self._queries.pop(run_id)
        retriever = next((hit.retriever for hit in hits if hit.retriever), "retriever")
        self.emit(RetrievalStep(iteration=self.iteration, title=f"Retrieved {len(hits)} chunks ({retriever})",
                                query=query, retriever=retriever, hits=hits))

    def _end_retriever(self, run_id: UUID) -> UUID | None:
        """The run id when it was an outermost retriever's run, else None; either way it is no longer open."""
        if self._inner.pop(run_id, None) is not None:
            return None
        self._outer = {thread: outer for thread, outer in self._outer.items() if outer != run_id}
        return run_id if run_id in self._queries else None

    # ---- chat models and LLMs -----------------------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID,
                            **kwargs: Any) -> None:
        self._start_call(run_id, "\n\n".join(render_messages(chat) for chat in messages), kwargs)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        self._start_call(run_id, "\n\n".join(prompts), kwargs)

    def _start_call(self, run_id: UUID, prompt: str, kwargs: dict[str, Any]) -> None:
        self.check()
        params = kwargs.get("invocation_params") or {}
        model = params.get("model") or params.get("model_name") or ""
        backend = ": ".join(str(part) for part in (params.get("_type", "model"), model) if part)
        self._calls[run_id] = (prompt, backend, time.perf_counter())

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt, backend, started = self._calls.pop(run_id, ("", "", time.perf_counter()))
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        output = generation.text if generation else ""
        tokens_in, tokens_out = token_counts(response)
        latency = round((time.perf_counter() - started) * 1000, 2)
        self.emit(LlmCallStep(iteration=self.iteration, title=f"Model call ({backend})", role="chat model",
                              prompt=capped(prompt, MAX_PROMPT_CHARS), output=capped(output, MAX_OUTPUT_CHARS),
                              tokens_in=tokens_in, tokens_out=tokens_out, latency_ms=latency, backend=backend,
                              logprobs=token_logprobs(generation)))

    # ---- tools: a decision step, since a tool's input and output are any text (a calculation step
    # would need a number, and would feed the calibration's derived results with whatever the tool said)
    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.check()
        self._tools[run_id] = (str(serialized.get("name") or "tool"), input_str)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        name, given = self._tools.pop(run_id, ("tool", ""))
        detail = f"input: {capped(given, MAX_OUTPUT_CHARS)}\noutput: {capped(str(output), MAX_OUTPUT_CHARS)}"
        self.emit(DecisionStep(iteration=self.iteration, title=f"Tool {name}", action=f"tool:{name}", detail=detail))

    # ---- errors: recorded once, where they happened; the run goes on if a fallback catches them ------
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._failed("chain", error)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._calls.pop(run_id, None)
        self._failed("model call", error)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end_retriever(run_id)
        self._queries.pop(run_id, None)
        self._failed("retriever", error)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._failed(f"tool {self._tools.pop(run_id, ('', ''))[0]}".strip(), error)

    def _failed(self, where: str, error: BaseException) -> None:
        step = self.error_step(where, error)
        if step is not None:
            self.emit(step)

    def error_step(self, where: str, error: BaseException) -> ErrorStep | None:
        """The error's step, or None when it was recorded already, or when the run itself says it once (the
        user's Stop, a model server that cannot be reached)."""
        if isinstance(error, (RunCancelled, ServerUnreachable)) or id(error) in self._failures:
            return None
        self._failures.add(id(error))
        return ErrorStep(iteration=self.iteration, title=f"The {where} failed",
                         message=capped(f"{type(error).__name__}: {error}", MAX_OUTPUT_CHARS),
                         backend_failure=isinstance(error, BackendError))  # our backend under the chain (issue 26)


def token_logprobs(generation: Any) -> tuple[TokenLogprob, ...]:
    """The reply's tokens and logprobs when the model gave them, in OpenAI's shape (`{"content": [{"token",
    "logprob"}, …]}` in the message's response metadata or the generation's info); () when it gave none."""
    message = getattr(generation, "message", None)
    found = (getattr(message, "response_metadata", None) or {}).get("logprobs") \
        or (getattr(generation, "generation_info", None) or {}).get("logprobs") or {}
    content = found.get("content") if isinstance(found, dict) else None
    return tuple(TokenLogprob(str(t["token"]), float(t["logprob"])) for t in (content or [])[:MAX_LOGPROBS]
                 if isinstance(t, dict) and "token" in t and "logprob" in t)


def token_counts(response: LLMResult) -> tuple[int, int]:
    """(prompt, output) tokens when the model reported them: a chat message's usage metadata, or the
    OpenAI-style `token_usage` of the result; (0, 0) when it gave none."""
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    usage = (response.llm_output or {}).get("token_usage") or {}
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
