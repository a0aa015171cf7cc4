"""Following a rule body through the KG, in bounded time and memory (issue 15).

Enumerating every path of a body is exponential in its length: a 60-relation body over a KG with
two neighbours per step took 22 GB. The walk here keeps, per step, only the entities reached, the
number of paths reaching each (exact, as a Python int) and the first entity each was reached from,
so it costs at most `len(body)` × edges and stores at most `len(body)` × entities; the first path
(in KG order) to any end is rebuilt from those parents. Bodies are capped at `MAX_BODY_RELATIONS`
when a pack is loaded (`body_problem`), and every walk runs against a `Deadline`: a walk that runs
out of time says so in `stopped` and reports no ends, never a partial answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# [decide] the bundled packs' bodies have at most 3 relations and the miner writes 1 or 2; 6 leaves room
MAX_BODY_RELATIONS = 6
TIME_LIMIT_S = 2.0  # per rule application, and per rule when statistics are recomputed

# (entity, relation) -> the entities one step on, `~relation` backwards: `KnowledgeGraph.follow` or a cache of it
Follow = Callable[[str, str], Sequence[str]]


@dataclass(frozen=True)
class Deadline:
    """A wall-clock budget, shared by every walk of one rule application, one recount or one mining."""

    seconds: float
    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.perf_counter() + seconds)

    def passed(self) -> bool:
        return time.perf_counter() > self.at

    def message(self) -> str:
        return f"stopped after the {self.seconds:g} s time limit"


@dataclass(frozen=True)
class BodyWalk:
    """Where a body leads from `start`: path counts per end (in order of discovery, never `start`) and,
    per step, the entity each was first reached from. A walk cut short has no ends and says why."""

    start: str
    counts: Mapping[str, int]
    parents: tuple[Mapping[str, str], ...] = ()
    stopped: str = ""

    def path(self, end: str) -> tuple[str, ...]:
        """The first path (in KG order) from the start to `end`: start, intermediates, end."""
        path = [end]
        for parent in reversed(self.parents):
            path.append(parent[path[-1]])
        return tuple(reversed(path))


def body_problem(body: Sequence[str]) -> str | None:
    """Why a body cannot be followed in bounded time (empty or too long), or None; the loader adds `file:line:`."""
    if not body:
        return "empty body; a rule needs at least one body relation"
    if len(body) > MAX_BODY_RELATIONS:
        return (f"body has {len(body)} relations; at most {MAX_BODY_RELATIONS} are allowed (a longer body is "
                "followed through exponentially many paths); split it into shorter rules")
    return None


def walk_body(follow: Follow, start: str, body: Sequence[str], deadline: Deadline) -> BodyWalk:
    """Follow `body` from `start` (`~r` walks an r edge backwards), step by step, until the deadline."""
    counts: dict[str, int] = {start: 1}
    parents: list[dict[str, str]] = []
    for step, relation in enumerate(body, start=1):
        reached: dict[str, int] = {}
        parent: dict[str, str] = {}
        for node, paths in counts.items():
            if deadline.passed():
                return BodyWalk(start, {}, stopped=f"{deadline.message()} at step {step} of {len(body)}")
            for nxt in follow(node, relation):
                reached[nxt] = reached.get(nxt, 0) + paths
                parent.setdefault(nxt, node)
        if not reached:
            return BodyWalk(start, {})
        counts = reached
        parents.append(parent)
    counts.pop(start, None)
    return BodyWalk(start, counts, tuple(parents))

