"""Random rule bodies of length 1-60 over random KGs: every walk ends in time and memory, and agrees with
brute force wherever brute force is affordable (issue 15: a 60-relation body took 22 GB)."""

from __future__ import annotations

import random
import tracemalloc

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.rules.application import MAX_PATHS, apply_rules
from engine.rules.matching import ScoredRule
from engine.rules.mining import MiningConfig, mine_rules
from engine.rules.statistics import rule_statistics
from engine.rules.walk import Deadline, walk_body

RELATIONS = ("a", "b", "c", "d")


def random_kg(rng: random.Random, entities: int, triples: int) -> tuple[list[Triple], KnowledgeGraph]:
    """Dense and cyclic, so path counts grow exponentially with the body's length."""
    names = [f"e{i}" for i in range(entities)]
    facts = [Triple(rng.choice(names), rng.choice(RELATIONS), rng.choice(names)) for _ in range(triples)]
    return facts, KnowledgeGraph(facts)


def random_body(rng: random.Random, length: int) -> tuple[str, ...]:
    return tuple(("~" if rng.random() < 0.4 else "") + rng.choice(RELATIONS) for _ in range(length))


def every_path(kg: KnowledgeGraph, start: str, body: tuple[str, ...]) -> list[tuple[str, ...]]:
    paths = [(start,)]
    for relation in body:
        paths = [p + (nxt,) for p in paths for nxt in kg.follow(p[-1], relation)]
    return [p for p in paths if p[-1] != start]


def random_rules(rng: random.Random, tag: int, longest: int) -> list[ScoredRule]:
    return [ScoredRule(Rule(f"r{tag}.{k}", "a", random_body(rng, rng.randint(1, longest)), rng.random(), 1),
                       s := rng.random(), s, False) for k in range(rng.randint(1, 3))]


def test_random_bodies_of_up_to_60_relations_are_applied_in_linear_lookups_with_bounded_scores():
    rng = random.Random(1515)
    _, kg = random_kg(rng, 40, 300)
    starts = sorted(kg.graph.nodes)
    looked_up: list[str] = []
    kg.follow = lambda e, r, follow=kg.follow: looked_up.append(e) or follow(e, r)  # type: ignore[method-assign]
    most, capped = 0, 0
    for n in range(200):
        rules = random_rules(rng, n, 60)
        looked_up.clear()
        application = apply_rules(kg, rng.choice(starts), rules, seconds=60.0)
        # at most one lookup per entity per body step: the walk never enumerates the paths
        most = max(most, len(looked_up) / sum(len(s.rule.body) * len(starts) for s in rules))
        for candidate in application.candidates:
            assert 0 < candidate.score <= MAX_PATHS * len(rules) and candidate.paths
            assert all(p.entities[-1] == candidate.answer for p in candidate.paths)
        assert len(application.notes) <= len(rules) and not any("stopped" in n for n in application.notes)
        capped += len(application.notes)
    assert most <= 1.0 and capped > 100  # most long bodies have more paths than the cap


def test_a_60_relation_walk_holds_entities_not_paths():
    rng = random.Random(60)
    _, kg = random_kg(rng, 40, 300)
    tracemalloc.start()
    starts = [e for e in sorted(kg.graph.nodes) if kg.follow(e, "a")][:4]
    walks = [walk_body(kg.follow, e, ("a", "~a", "b", "~b") * 15, Deadline.after(2.0)) for e in starts]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert min(sum(w.counts.values()) for w in walks) > 10**20  # paths brute force would have had to hold
    assert peak < 2_000_000


class TickingClock:
    """`engine.rules.walk`'s clock, moved on one tick each time a deadline is read: a limit of n ticks passes
    after n checks however loaded the machine is, so "promptly" is a count of the lookups made within it."""

    TICK = 0.0001

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += self.TICK
        return self.now


def counted(follow, looked_up: list[str]):
    return lambda e, r: looked_up.append(e) or follow(e, r)


def test_a_tight_time_limit_cuts_walks_on_a_large_kg_promptly_and_says_which_rules(monkeypatch):
    monkeypatch.setattr("engine.rules.walk.time", TickingClock())
    rng = random.Random(3)
    _, kg = random_kg(rng, 300, 6000)
    starts = sorted(kg.graph.nodes)
    looked_up: list[str] = []
    kg.follow = counted(kg.follow, looked_up)  # type: ignore[method-assign]
    stopped = 0
    for n in range(30):
        rules = random_rules(rng, n, 60)
        looked_up.clear()
        application = apply_rules(kg, rng.choice(starts), rules, seconds=20 * TickingClock.TICK)
        assert len(looked_up) <= 20  # each lookup follows a check of the limit: none once it passed
        cut = {note.split(":")[0].removeprefix("rule ") for note in application.notes if "stopped after" in note}
        assert not any(p.rule_id in cut for c in application.candidates for p in c.paths)
        stopped += len(cut)
    assert stopped > 10


def test_random_short_bodies_count_exactly_the_paths_brute_force_enumerates():
    rng = random.Random(7)
    _, kg = random_kg(rng, 12, 40)
    starts = sorted(kg.graph.nodes)
    for _ in range(400):
        body, start = random_body(rng, rng.randint(1, 4)), rng.choice(starts)
        walk = walk_body(kg.follow, start, body, Deadline.after(1.0))
        paths = every_path(kg, start, body)
        ends = list(dict.fromkeys(p[-1] for p in paths))
        assert list(walk.counts) == ends, (start, body)
        assert all(walk.counts[e] == sum(p[-1] == e for p in paths) for e in ends), (start, body)
        assert all(walk.path(e) in paths for e in ends)


def test_random_statistics_match_the_pair_set_definition_and_long_bodies_stop_in_time(monkeypatch):
    rng = random.Random(99)
    _, kg = random_kg(rng, 30, 120)
    for _ in range(40):
        body, head = random_body(rng, rng.randint(1, 3)), rng.choice(RELATIONS)
        pairs = {(s, p[-1]) for s in kg.graph.nodes for p in every_path(kg, s, body)}
        stats = rule_statistics(kg, head, body)
        support = sum(1 for x, y in pairs if y in kg.follow(x, head))
        assert (stats.body_pairs, stats.support, stats.stopped) == (len(pairs), support, ""), body
    _, dense = random_kg(rng, 60, 1500)
    monkeypatch.setattr("engine.rules.walk.time", TickingClock())
    walked: list[str] = []  # statistics cache their lookups: count the walk's expansions instead
    monkeypatch.setattr("engine.rules.statistics.walk_body",
                        lambda follow, *args: walk_body(counted(follow, walked), *args))
    stopped = 0
    for _ in range(20):
        walked.clear()
        stats = rule_statistics(dense, "a", random_body(rng, rng.randint(30, 60)), seconds=200 * TickingClock.TICK)
        assert len(walked) <= 200  # each expansion follows a check of the limit: none once it passed
        stopped += stats.stopped.endswith("the counts are partial")
    assert stopped > 10


def test_random_kgs_mine_rules_whose_statistics_equal_the_recount():
    rng = random.Random(2024)
    for _ in range(5):
        triples, kg = random_kg(rng, 25, 90)
        mined = mine_rules(triples, MiningConfig(min_support=1, min_confidence=0.0, max_rules=100_000))
        assert mined
        for rule in mined:
            stats = rule_statistics(kg, rule.head, rule.body)
            assert (rule.body_pairs, rule.support, rule.confidence) == (
                stats.body_pairs, stats.support, stats.confidence), (rule.head, rule.body)
