"""The run's language model as a LangChain `BaseChatModel`, so a user's chain calls the backend chosen in the app.

With a model loaded (hf, openai, …) the chain's calls go through `call_model`, as every ragscope tool's do:
the prompt is fitted to the model's context and the reply streams to a page that watches the run. The
offline backend has no model; there the chain's model call is answered by the offline reader from the chunks
the chain retrieved, so the method still answers on the default backend (Explore, Compare, Evaluate, the tour)
instead of failing every run. That reader does not read the prompt: the step's backend label says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from engine.errors import BackendError
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.tools.base import Reader, Reading
from engine.trace import ErrorStep, Hit, LlmCallStep, TokenLogprob

READER_LABEL = "reader (reads the retrieved chunks, not the prompt)"
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def _result(text: str, tokens_in: int = 0, tokens_out: int = 0, logprobs: Sequence[TokenLogprob] = ()) -> ChatResult:
    """The reply as LangChain's chat models give it: token usage, and logprobs in OpenAI's shape, which
    LangChain's OpenAI model uses too, so the step recorder reads one shape from either."""
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
    scored = {"logprobs": {"content": [{"token": t.token, "logprob": t.logprob} for t in logprobs]}} if logprobs else {}
    message = AIMessage(content=text, usage_metadata=usage, response_metadata=scored)
    return ChatResult(generations=[ChatGeneration(message=message)])


class BackendChatModel(BaseChatModel):
    """A ragscope `ChatModel` (the chosen backend's) behind LangChain's chat model interface."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    chat: Any  # engine.llm.chat.ChatModel: a Protocol, which pydantic cannot check
    max_new_tokens: int = 128

    @property
    def _llm_type(self) -> str:
        return str(self.chat.backend)

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": str(self.chat.model)}

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        from engine.tools.llm_call import call_model  # the LLM tools' one way to call a model

        chat: ChatModel = self.chat
        ours = [Message(_ROLES.get(message.type, "user"), message.text) for message in messages]
        reply = call_model(chat, ours, GenerationSettings(max_new_tokens=self.max_new_tokens, stop=tuple(stop or ())),
                           role="chat model")
        if reply.failed:  # LangChain's error path: the handler records it, a fallback in the chain may catch it
            raise BackendError(next((s.message for s in reply.steps if isinstance(s, ErrorStep)), "the model failed"))
        call = next((s for s in reply.steps if isinstance(s, LlmCallStep)), None)
        if call is None:
            return _result(reply.text)
        return _result(reply.text, call.tokens_in, call.tokens_out, call.logprobs)


class ReaderChatModel(BaseChatModel):
    """The offline backend's stand-in: answers the run's question from the chunks retrieved so far."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    reader: Any  # engine.tools.base.Reader
    question: str
    hits: Callable[[], Sequence[Hit]]  # what the run's retrievers returned, read at call time
    readings: list[Reading] = Field(default_factory=list)  # what it read: the answer's citations and confidence

    @property
    def _llm_type(self) -> str:
        return "offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": READER_LABEL}

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        reader: Reader = self.reader
        reading = reader.read(self.question, tuple(self.hits()))
        self.readings.append(reading)
        return _result(reading.answer)
