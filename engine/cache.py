"""Thread-safe in-process caches: a bounded LRU for computed values, a registry for one object per key.

Issue 18: the engine had hand-rolled both many times over (an OrderedDict and a lock per vector cache,
a dict and a lock per "one X per key per process" loader). Names follow functools/cachetools
(`maxsize`, `get`, `clear`).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, MutableMapping, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most `maxsize` values (None: unbounded), the least recently used dropped first.

    Computing happens outside the lock, so one slow batch never blocks readers; a key missed by two
    threads at once is computed by both (the values are equal, and the last one stored wins).
    """

    def __init__(self, maxsize: int | None):
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"maxsize must be at least 1 or None (unbounded), got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: V | None = None) -> V | None:
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._store(key, value)

    def get_many(self, keys: Sequence[K], compute_missing: Callable[[list[K]], Collection[V]]) -> list[V]:
        """The values of `keys` in order; the missing ones (each once) computed by ONE call, then stored.

        The answer is assembled from what this call found and computed, never re-read from the cache,
        so an eviction by another thread in between cannot lose a value.
        """
        unique = list(dict.fromkeys(keys))
        found: dict[K, V] = {}
        with self._lock:
            for key in unique:
                if key in self._data:
                    self._data.move_to_end(key)
                    found[key] = self._data[key]
        missing = [k for k in unique if k not in found]
        if missing:
            values = compute_missing(missing)
            if len(values) != len(missing):
                raise ValueError(f"compute_missing returned {len(values)} values for {len(missing)} keys")
            computed = dict(zip(missing, values))
            found.update(computed)
            with self._lock:
                for key, value in computed.items():
                    self._store(key, value)
        return [found[k] for k in keys]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def _store(self, key: K, value: V) -> None:  # the caller holds the lock
        self._data[key] = value
        self._data.move_to_end(key)
        if self.maxsize is not None:
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)


class Registry(Generic[K, V]):
    """One value per key per process (or per owner object): built at most once, even when threads race.

    Builds of different keys run in parallel (a model loading for one key does not hold up another);
    callers of the key being built wait for it. A build that raises stores nothing, so the next call
    tries again. `weak_keys`: an entry goes when its key object is garbage collected.
    """

    def __init__(self, *, weak_keys: bool = False):
        self._values: MutableMapping[K, V] = weakref.WeakKeyDictionary() if weak_keys else {}
        self._building: dict[K, threading.Lock] = {}  # keys being built, each with its build lock
        self._lock = threading.Lock()  # guards both maps, never held while building

    def get(self, key: K, factory: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                return self._values[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._values:  # built by the thread this one waited for
                    return self._values[key]
            value = factory()
            with self._lock:
                self._values[key] = value
                self._building.pop(key, None)  # after a failed build it stays, so retries still queue
            return value

    def clear(self) -> None:
        """Forget every value (tests; a fresh process)."""
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
