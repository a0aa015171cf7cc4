"""Shared bits of the benchmarks: timing, medians, a throwaway data folder, the demo pack."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from engine.settings import DEMO_PACK, Settings


def fresh_settings() -> Settings:
    return Settings(home=Path(tempfile.mkdtemp(prefix="ragscope-bench-")))


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call takes."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    return statistics.median(timed(fn) for _ in range(repeats)) * 1000


def pack_path() -> Path:
    return Path(sys.argv[1]) if len(sys.argv) > 1 else DEMO_PACK
