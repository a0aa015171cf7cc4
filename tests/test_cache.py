"""LruCache and Registry: bounds, order, one computation per missing key, one build per key under races."""

from __future__ import annotations

import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine.cache import LruCache, Registry

# ---- LruCache --------------------------------------------------------------------------------------------


def test_lru_cache_drops_the_least_recently_used_beyond_maxsize() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent, so b goes first
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_lru_cache_get_many_also_refreshes_what_it_finds() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get_many(["a"], lambda missing: [])
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1


def test_lru_cache_get_returns_the_default_for_a_missing_key() -> None:
    assert LruCache(1).get("nope", "fallback") == "fallback"


def test_get_many_computes_only_the_missing_keys_once_in_one_call_and_keeps_order() -> None:
    cache: LruCache[str, str] = LruCache(10)
    cache.put("b", "B")
    calls: list[list[str]] = []

    def upper(keys: list[str]) -> list[str]:
        calls.append(keys)
        return [k.upper() for k in keys]

    assert cache.get_many(["c", "b", "a", "c", "b"], upper) == ["C", "B", "A", "C", "B"]
    assert calls == [["c", "a"]]
    assert cache.get_many(["a", "c"], upper) == ["A", "C"]
    assert calls == [["c", "a"]]  # everything is cached now: no second call


def test_get_many_answers_from_what_it_computed_when_its_batch_overflows_the_cache() -> None:
    cache: LruCache[int, int] = LruCache(2)
    assert cache.get_many([1, 2, 3, 4, 5], lambda keys: [k * 10 for k in keys]) == [10, 20, 30, 40, 50]
    assert len(cache) == 2 and cache.get(5) == 50 and cache.get(1) is None


def test_get_many_survives_another_thread_evicting_its_keys_while_it_computes() -> None:
    """The race the hand-rolled reader cache fell back from: keys evicted between compute and return."""
    cache: LruCache[str, int] = LruCache(2)
    cache.put("kept", 1)

    def compute_while_others_fill_the_cache(keys: list[str]) -> list[int]:
        for n in range(5):
            cache.put(f"other{n}", n)  # evicts "kept", which this call already found
        return [7 for _ in keys]

    assert cache.get_many(["kept", "new"], compute_while_others_fill_the_cache) == [1, 7]


def test_get_many_refuses_a_compute_that_returns_the_wrong_number_of_values() -> None:
    with pytest.raises(ValueError, match="returned 1 values for 2 keys"):
        LruCache(4).get_many(["a", "b"], lambda keys: [0])


def test_lru_cache_with_no_maxsize_keeps_everything_and_clear_empties_it() -> None:
    cache: LruCache[int, int] = LruCache(None)
    cache.get_many(list(range(1000)), lambda keys: list(keys))
    assert len(cache) == 1000
    cache.clear()
    assert len(cache) == 0 and cache.get(3) is None


def test_lru_cache_refuses_a_maxsize_below_one() -> None:
    with pytest.raises(ValueError, match="maxsize must be at least 1"):
        LruCache(0)


def test_lru_cache_stays_bounded_and_correct_under_many_threads() -> None:
    cache: LruCache[int, int] = LruCache(50)

    def work(seed: int) -> bool:
        keys = [(seed * 7 + n) % 120 for n in range(40)]
        return cache.get_many(keys, lambda missing: [k * k for k in missing]) == [k * k for k in keys]

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert all(pool.map(work, range(400)))
    assert len(cache) == 50


# ---- Registry --------------------------------------------------------------------------------------------


def test_registry_builds_once_per_key_when_many_threads_race() -> None:
    registry: Registry[str, object] = Registry()
    builds: list[str] = []
    start = threading.Barrier(32)

    def get(n: int) -> object:
        key = f"k{n % 4}"
        start.wait()

        def build() -> object:
            builds.append(key)
            time.sleep(0.05)  # slow, like loading a model: the other threads arrive meanwhile
            return object()

        return registry.get(key, build)

    with ThreadPoolExecutor(max_workers=32) as pool:
        got = list(pool.map(get, range(32)))
    assert sorted(builds) == ["k0", "k1", "k2", "k3"]
    assert all(got[n] is got[n % 4] for n in range(32))
    assert len(registry) == 4


def test_a_slow_build_for_one_key_does_not_block_another_key() -> None:
    registry: Registry[str, str] = Registry()
    a_started, release_a = threading.Event(), threading.Event()

    def slow_a() -> str:
        a_started.set()
        assert release_a.wait(5)
        return "A"

    with ThreadPoolExecutor(max_workers=1) as pool:
        a = pool.submit(registry.get, "a", slow_a)
        assert a_started.wait(5)
        assert registry.get("b", lambda: "B") == "B"  # would deadlock under one build-wide lock
        assert not a.done()
        release_a.set()
        assert a.result(5) == "A"


def test_a_failed_build_stores_nothing_and_the_next_call_builds_again() -> None:
    registry: Registry[str, int] = Registry()

    def broken() -> int:
        raise OSError("disk unplugged")

    with pytest.raises(OSError, match="disk unplugged"):
        registry.get("k", broken)
    assert len(registry) == 0
    assert registry.get("k", lambda: 3) == 3


def test_registry_clear_forgets_values_so_the_next_get_builds_anew() -> None:
    registry: Registry[str, object] = Registry()
    first = registry.get("k", object)
    assert registry.get("k", object) is first
    registry.clear()
    assert len(registry) == 0
    assert registry.get("k", object) is not first


def test_a_weak_key_registry_lets_an_entry_go_with_its_key() -> None:
    class Owner:
        pass

    registry: Registry[Owner, str] = Registry(weak_keys=True)
    owner = Owner()
    assert registry.get(owner, lambda: "value") == "value"
    assert len(registry) == 1
    del owner
    gc.collect()
    assert len(registry) == 0
