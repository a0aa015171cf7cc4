"""How much of a model's reply is read: a time, a token and a byte bound, each derived from the call's own
settings, so a server that never stops cannot hold a run for ever or fill the memory (issue 26).

Every backend that reads a reply from elsewhere (the openai and langchain backends) meters it here; when a
bound is hit, what came is kept, cut to the bound, and `Cut.reason` says so in plain words for the step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

TOKEN_MARGIN = 4            # text pieces per token asked for: servers may split a token, none splits it in 5
TEXT_BYTES_PER_TOKEN = 32   # UTF-8 bytes of reply text per token asked for: more than any real token writes
BODY_BYTES_PER_TOKEN = 2048  # HTTP body bytes per token asked for: JSON, escapes, logprobs, SSE framing
TEXT_SLACK_BYTES = 4 * 1024
BODY_SLACK_BYTES = 64 * 1024
MAX_TEXT_BYTES = 2 * 1024 * 1024  # whatever max_tokens says, a reply's text is never held beyond this …
MAX_BODY_BYTES = 8 * 1024 * 1024  # … nor more than this of its HTTP body read
DEFAULT_MAX_TOKENS = 1024  # for a request that names no max_tokens (the model list)


@dataclass(frozen=True)
class Cut:
    """Why a reply ended before the server ended it; `timed_out` when the time bound did it."""

    reason: str
    timed_out: bool = False


@dataclass(frozen=True)
class ReplyBounds:
    """The bounds of one reply: all of it within `seconds` (the backend's timeout setting), at most
    max_tokens × TOKEN_MARGIN pieces of text, `text_bytes` of text and `body_bytes` of HTTP body."""

    seconds: float
    max_tokens: int

    @property
    def pieces(self) -> int:
        return max(1, self.max_tokens) * TOKEN_MARGIN

    @property
    def text_bytes(self) -> int:
        return min(max(1, self.max_tokens) * TEXT_BYTES_PER_TOKEN + TEXT_SLACK_BYTES, MAX_TEXT_BYTES)

    @property
    def body_bytes(self) -> int:
        return min(max(1, self.max_tokens) * BODY_BYTES_PER_TOKEN + BODY_SLACK_BYTES, MAX_BODY_BYTES)

    def after_time(self) -> Cut:
        return Cut(f"reply cut after {self.seconds:g} s (the backend's timeout)", timed_out=True)

    def at_pieces(self) -> Cut:
        return Cut(f"reply cut at {self.pieces:,} tokens (max_tokens {self.max_tokens:,} × {TOKEN_MARGIN})")

    def at_text(self) -> Cut:
        return Cut(f"reply cut at {size(self.text_bytes)} of text (max_tokens {self.max_tokens:,})")

    def at_body(self) -> Cut:
        return Cut(f"reply cut at {size(self.body_bytes)} read from the server (max_tokens {self.max_tokens:,})")


class ReplyMeter:
    """Meters a reply piece by piece as it arrives: `take` gives back what of a piece is kept; once a bound
    is hit, `cut` says which and nothing more is kept (the caller stops reading)."""

    def __init__(self, bounds: ReplyBounds):
        self.bounds = bounds
        self.deadline = time.monotonic() + bounds.seconds
        self.pieces = self.bytes = 0
        self.cut: Cut | None = None

    def take(self, piece: str) -> str:
        if self.cut is not None:
            return ""
        if piece:
            self.pieces += 1
            if self.pieces > self.bounds.pieces:
                self.cut = self.bounds.at_pieces()
                return ""
            piece = self._within_bytes(piece)
        if self.cut is None and time.monotonic() > self.deadline:
            self.cut = self.bounds.after_time()
        return piece

    def _within_bytes(self, piece: str) -> str:
        encoded = piece.encode("utf-8", "surrogatepass")
        room = self.bounds.text_bytes - self.bytes
        if len(encoded) > room:
            self.cut = self.bounds.at_text()
            encoded = encoded[:room]
            piece = encoded.decode("utf-8", "ignore")  # a character the cut fell in is left out whole
        self.bytes += len(encoded)
        return piece


def size(n: int) -> str:
    """`6 KB`, `2.2 MB`: a byte count as a reader takes it in."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{max(1, round(n / 1e3))} KB"
