"""Per-question latency of each method on the offline backend, warm (DESIGN §11, issue 22).

A *new* question (one the pack does not ship, so nothing about it is cached) must take ≤ 5 s warm for
every method: each method answers one new warm-up question, then the median over the others is printed.
`--pack-questions` times the pack's own questions instead (median and p90 over all of them).

Usage: python bench/methods.py [PACK_DIR[,PACK_DIR…]] [METHOD,…] [--pack-questions]
       (default: the demo pack, every method)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from common import fresh_settings, pack_path
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack
from engine.methods.base import method_ids
from engine.runner import Workbench

NEW_BUDGET_MS = 5000
PACK_BUDGET_MS = {"vanilla": 300, "rulerag": 500, "hybrid": 1000, "r2ag": 500, "tog2": 2000, "ras": 2000}
# Questions the shipped packs do not contain, single- and multi-hop; the first one warms up.
NEW_QUESTIONS = {
    "demo": ("Who founded the Curie Institute?",
             "Which university did the discoverer of X-rays attend?",
             "Who was the doctoral advisor of Werner Heisenberg?",
             "What prize did Niels Bohr receive in 1922?",
             "Where did Lise Meitner's nephew work?"),
    "geo": ("Which river flows through Vienna?",
            "Where does BASF have its head office?",
            "Which sea does the river that flows through Warsaw drain into?",
            "Who founded the company headquartered in Stuttgart?",
            "How long is the Danube?"),
}
GENERATED = 5


def new_questions(pack: Pack, folder: Path) -> tuple[str, ...]:
    """The shipped list for a known pack, else questions built from the pack's KG facts."""
    if folder.name in NEW_QUESTIONS:
        return NEW_QUESTIONS[folder.name]
    known = {q.question for q in pack.questions}
    built = (f"What is the {t.relation.replace('_', ' ')} of {t.head}?" for t in pack.triples)
    return tuple(dict.fromkeys(q for q in built if q not in known))[:GENERATED]


def seconds(workbench: Workbench, question: str, method: str, question_id: str = "") -> float:
    started = time.perf_counter()
    workbench.ask(question, method, question_id=question_id)
    return time.perf_counter() - started


def bench_new(workbench: Workbench, questions: tuple[str, ...], method: str) -> str:
    """On a workbench of its own, with the encoder's query cache emptied: a method timed after another
    must not find the questions' vectors and readings already computed."""
    workbench.retrieval.embedder._queries.clear()
    seconds(workbench, questions[0], method)  # warm: encoder, KG, caches
    times = [seconds(workbench, q, method) * 1000 for q in questions[1:]]
    median = statistics.median(times)
    flag = "" if median <= NEW_BUDGET_MS else "  OVER BUDGET"
    return (f"{method:8s} new questions n={len(times)}  median {median:7.1f} ms  max {max(times):7.1f} ms  "
            f"(budget ≤ {NEW_BUDGET_MS} ms){flag}")


def bench_pack(workbench: Workbench, pack: Pack, method: str) -> str:
    questions = pack.questions
    seconds(workbench, questions[0].question, method)
    times = sorted(seconds(workbench, q.question, method, q.id) * 1000 for q in questions)
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    budget = PACK_BUDGET_MS.get(method)
    return (f"{method:8s} pack questions n={len(times):3d}  median {statistics.median(times):7.1f} ms  "
            f"p90 {p90:7.1f} ms" + (f"  (budget ≤ {budget} ms)" if budget else ""))


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    folders = [Path(p) for p in args[0].split(",")] if args else [pack_path()]
    methods = args[1].split(",") if len(args) > 1 else list(method_ids())
    for folder in folders:
        pack, settings = load_pack(folder), fresh_settings()
        Workbench(pack, settings).retrieval.ensure_index()
        print(f"pack {folder.name}")
        questions = new_questions(pack, folder)
        for method in methods:
            workbench = Workbench(pack, settings)  # reopens the index built above
            line = bench_pack(workbench, pack, method) if "--pack-questions" in sys.argv else \
                bench_new(workbench, questions, method)
            print("  " + line, flush=True)


if __name__ == "__main__":
    main()
