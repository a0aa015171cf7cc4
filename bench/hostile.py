"""Hostile input (issue 15): how long the parsers, the loader, the calculator and the miner take on it.

The tests keep what these inputs must give (bounded output, a clear error, exact counts); how long they take
is measured here, where a loaded machine cannot fail a build (issue 24: a test failed at 3.08 s against a
3.0 s limit). The inputs are the tests' own, imported from them, so both always see the same cases. Each
budget is the limit the test asserted before; every line prints the median (or, for a fuzz family, the
slowest case) beside it.

Usage: python bench/hostile.py
"""

from __future__ import annotations

import importlib.util
import logging
import random
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from common import median_ms, timed

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.append(str(TESTS))  # after bench/: the test modules import their helpers (fake_chat, knowledge.…)
REPEATS = 3


def from_tests(path: str) -> ModuleType:
    """A test module by its path under tests/ (by name, `methods` would be bench/methods.py)."""
    spec = importlib.util.spec_from_file_location(f"tests_{path.replace('/', '_')[:-3]}", TESTS / path)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def line(name: str, ms: float, budget_ms: float, what: str = "median") -> str:
    flag = "" if ms <= budget_ms else "  OVER BUDGET"
    return f"{name:52s} {what} {ms:9.1f} ms  (budget ≤ {budget_ms:g} ms){flag}"


def slowest_ms(calls: Iterable[Callable[[], object]]) -> tuple[float, int]:
    """The slowest of the calls (each run once) and how many there were."""
    times = [timed(call) * 1000 for call in calls]
    return max(times), len(times)


def html_pages() -> list[str]:
    cases = from_tests("knowledge/test_html.py")
    return [line(f"html {name}", median_ms(lambda h=html: cases.html_to_content(h), REPEATS), 5000)
            for name, html in cases.HOSTILE.items()]


def stored_page() -> list[str]:
    cases = from_tests("methods/hybrid/test_pages.py")
    pages = iter(cases.Page(f"hostile{n}", "", "Hostile", cases.HOSTILE_PAGE) for n in range(REPEATS))
    # a new page id each time: parts are cached per page, and the first read is the one a question waits for
    return [line("hybrid stored page", median_ms(lambda: cases.page_parts(next(pages)), REPEATS), 5000)]


def sentences() -> list[str]:
    from engine.text import split_sentences

    texts = ["Ab. " * 20000, ("x" * 5000 + ". ") * 20 + "B"]
    return [line("split_sentences, both hostile texts", median_ms(lambda: [split_sentences(t) for t in texts],
                                                                  REPEATS), 2000)]


def calculator() -> list[str]:
    cases = from_tests("tools/test_calculator_fuzz.py")

    def attempt(expression: str) -> Callable[[], object]:
        def call() -> None:
            try:
                cases.calculate(expression)
            except Exception:  # noqa: BLE001 — refusals are expected; only the time counts here
                pass
        return call

    rng = random.Random(15)
    drawn = [cases.arithmetic(rng, rng.randint(0, 5)) for _ in range(12_000)]
    fuzzed = [cases.mutated(rng, e) if n % 4 == 3 else e for n, e in enumerate(drawn)]
    hostile_ms, hostile_n = slowest_ms(attempt(e) for e in cases.HOSTILE)
    fuzzed_ms, fuzzed_n = slowest_ms(attempt(e) for e in fuzzed)
    return [line(f"calculator, {hostile_n} hostile expressions", hostile_ms, 1000, "slowest"),
            line(f"calculator, {fuzzed_n:,} random expressions", fuzzed_ms, 500, "slowest")]


def loader() -> list[str]:
    pack = from_tests("knowledge/conftest.py").TINY_PACK
    fuzz = from_tests("knowledge/test_loader_fuzz.py")
    base = {name: pack[name].encode() for name in fuzz.FILES}
    rng = random.Random(fuzz.SEED)
    folder = Path(tempfile.mkdtemp(prefix="ragscope-bench-"))
    cases = []
    for case in range(fuzz.CASES):
        files = dict(base)
        for _ in range(rng.randint(1, 3)):
            rng.choice(fuzz.MUTATIONS)(rng, files)
        cases.append(lambda f=files, c=case: fuzz._run_case(folder / f"case{c}", f))
    ms, n = slowest_ms(cases)
    return [line(f"pack loader, {n:,} mutated packs", ms, 5000, "slowest")]


def ingest() -> list[str]:
    fuzz = from_tests("knowledge/test_ingest_fuzz.py")
    folder = Path(tempfile.mkdtemp(prefix="ragscope-bench-"))

    def attempt(path: Path) -> None:
        try:
            fuzz.ingest_paths([path], "fuzz")
        except fuzz.IngestError:
            pass

    lines = []
    for kind, make in fuzz.KINDS.items():
        rng = random.Random(f"{fuzz.SEED}-{kind}")
        paths = []
        for case in range(fuzz.CASES_PER_KIND):
            suffix, data = make(rng)
            paths.append(folder / f"{kind}{case}{suffix}")
            paths[-1].write_bytes(data)
        ms, n = slowest_ms(lambda p=p: attempt(p) for p in paths)
        lines.append(line(f"ingest {kind}, {n} files", ms, 3000, "slowest"))
    return lines


def mining() -> list[str]:
    from engine.knowledge.records import Triple
    from engine.rules.mining import MiningConfig, mine_rules

    triples = [Triple(f"p{i}", "born_in", "Hub") for i in range(2000)]
    triples += [Triple(f"p{i}", "knows", f"p{i + 1}") for i in range(3)]
    config = MiningConfig(min_support=1, min_confidence=0.0)
    return [line("rule mining, a hub of 2,000", median_ms(lambda: mine_rules(triples, config), REPEATS), 5000)]


def main() -> None:
    logging.disable(logging.WARNING)  # the parsers say what they cut; here only the time counts
    for part in (html_pages, stored_page, sentences, calculator, loader, ingest, mining):
        for text in part():
            print(text, flush=True)


if __name__ == "__main__":
    main()
