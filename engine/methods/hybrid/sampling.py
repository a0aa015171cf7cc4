"""Self-consistency samples (spec §2.3, §2.4, §2.8): one model call each, until a reply repeats an earlier one.

A sample that repeats an earlier reply word for word ends the draw (it is kept: its call is in the
trace and it counts as a vote). Sampling only pays when replies differ; a local model's sampling is
seeded per call (engine/llm/decoding.py), so there every sample repeats the first, and a server at a
low temperature often does the same. Five identical calculator calls, or three identical attribute
votes, cost five or three calls and say no more than two.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.tools.llm_call import ModelReply, call_model


def draw(chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings, role: str, samples: int,
         segments: Sequence[PromptSegment] | None = None) -> tuple[ModelReply, ...]:
    """Up to `samples` replies, roles '<role> 1', '<role> 2', …; the first repeat is the last one drawn."""
    replies: list[ModelReply] = []
    for n in range(1, max(1, samples) + 1):
        reply = call_model(chat, messages, settings, role=f"{role} {n}", segments=segments)
        replies.append(reply)
        if any(earlier.text == reply.text for earlier in replies[:-1]):
            break
    return tuple(replies)

