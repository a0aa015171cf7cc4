"""Following a rule body: exact path counts without enumerating paths, the first path per end, the bounds."""

from __future__ import annotations

import itertools
import tracemalloc

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Triple
from engine.rules.walk import MAX_BODY_RELATIONS, Deadline, body_problem, walk_body

# two entities, each linked to both by `r`: a body of n `r` steps has 2**n paths (the 22 GB case)
TWINS = KnowledgeGraph([Triple(a, "r", b) for a, b in itertools.product(("A", "B"), repeat=2)])
FAMILY = KnowledgeGraph([
    Triple("Ann", "child", "Bob"), Triple("Ann", "child", "Cid"), Triple("Bob", "child", "Dee"),
    Triple("Cid", "child", "Dee"), Triple("Cid", "child", "Eve"), Triple("Dee", "lives_in", "Oslo"),
])


def every_path(kg: KnowledgeGraph, start: str, body: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The exponential enumeration the walk replaces, as the reference on small graphs."""
    paths = [(start,)]
    for relation in body:
        paths = [p + (nxt,) for p in paths for nxt in kg.follow(p[-1], relation)]
    return [p for p in paths if p[-1] != start]


def test_the_walk_counts_every_path_to_each_end_and_keeps_the_first():
    walk = walk_body(FAMILY.follow, "Ann", ("child", "child"), Deadline.after(1.0))
    assert dict(walk.counts) == {"Dee": 2, "Eve": 1}
    assert walk.path("Dee") == ("Ann", "Bob", "Dee") and walk.path("Eve") == ("Ann", "Cid", "Eve")
    assert not walk.stopped


def test_backward_steps_walk_edges_in_reverse_and_the_start_is_never_an_end():
    walk = walk_body(FAMILY.follow, "Bob", ("~child", "child"), Deadline.after(1.0))
    assert dict(walk.counts) == {"Cid": 1}  # Bob is his own sibling through Ann, and is left out
    assert walk.path("Cid") == ("Bob", "Ann", "Cid")


def test_the_walk_agrees_with_full_enumeration_on_every_short_body():
    relations = ("child", "~child", "lives_in", "~lives_in")
    for length in (1, 2, 3):
        for body in itertools.product(relations, repeat=length):
            for start in FAMILY.graph.nodes:
                walk = walk_body(FAMILY.follow, start, body, Deadline.after(1.0))
                paths = every_path(FAMILY, start, body)
                ends = dict.fromkeys(p[-1] for p in paths)
                assert list(walk.counts) == list(ends), (start, body)
                assert {e: sum(p[-1] == e for p in paths) for e in ends} == dict(walk.counts), (start, body)
                assert [walk.path(e) for e in ends] == [next(p for p in paths if p[-1] == e) for e in ends]


def test_a_60_relation_body_with_2_to_the_60_paths_is_counted_in_120_lookups_and_little_memory():
    looked_up: list[str] = []
    tracemalloc.start()
    walk = walk_body(lambda e, r: looked_up.append(e) or TWINS.follow(e, r), "A", ("r",) * 60, Deadline.after(60.0))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert dict(walk.counts) == {"B": 2**59}
    assert len(walk.path("B")) == 61
    assert len(looked_up) == 1 + 59 * 2 and peak < 1_000_000  # one lookup per entity reached per step, not per path


def test_a_walk_past_its_deadline_reports_no_ends_and_says_where_it_stopped():
    walk = walk_body(FAMILY.follow, "Ann", ("child", "child"), Deadline.after(-1.0))
    assert not walk.counts
    assert walk.stopped == "stopped after the -1 s time limit at step 1 of 2"


def test_a_body_with_no_way_on_ends_early_with_nothing():
    walk = walk_body(FAMILY.follow, "Oslo", ("child", "child"), Deadline.after(1.0))
    assert not walk.counts and not walk.stopped


def test_body_problem_names_an_empty_or_overlong_body_and_the_allowed_length():
    assert body_problem(("r",) * MAX_BODY_RELATIONS) is None
    assert body_problem(()) == "empty body; a rule needs at least one body relation"
    problem = body_problem(("r",) * 60)
    assert problem is not None and "60 relations; at most 6 are allowed" in problem and "split" in problem
