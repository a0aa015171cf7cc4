"""`eval --shard I/N`: one of N disjoint slices of an evaluation's questions, for machines sharing one server.

Shard I takes questions[I-1::N] (round robin, not blocks: each shard gets a like mix of early and late
questions, and so a like share of the types a pack lists together). Every question is in exactly one shard
whatever N is, and the list's fingerprint (its ordered ids) lets `merge-evals` check that the shards split
the same list.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from engine.errors import RagscopeError

T = TypeVar("T")
_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise RagscopeError(f"shard {self.index}/{self.count}: give I/N with 1 ≤ I ≤ N, e.g. 1/3")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """'2/3' → Shard(2, 3); anything else is a RagscopeError that says what is allowed."""
        match = _SPEC.fullmatch(text)
        if not match:
            raise RagscopeError(f"--shard {text!r} is not I/N: give the shard's number and the number of shards, "
                                "e.g. --shard 1/3 (1 ≤ I ≤ N)")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1:
            raise RagscopeError(f"--shard {text}: the number of shards must be at least 1, e.g. --shard 1/3")
        if not 1 <= index <= count:
            raise RagscopeError(f"--shard {text}: the shard's number must be between 1 and {count}, e.g. 1/{count}")
        return cls(index, count)

    def take(self, items: Sequence[T]) -> list[T]:
        """This shard's share of `items`: items[I-1::N], in their order."""
        return list(items[self.index - 1 :: self.count])


WHOLE = Shard(1, 1)


def question_list_fingerprint(question_ids: Sequence[str]) -> str:
    """Content hash of the ordered ids before sharding: equal for every shard of one evaluation."""
    digest = hashlib.sha256()
    for qid in question_ids:
        digest.update(qid.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:16]
