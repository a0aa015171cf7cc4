"""Per-question latency of each method on the offline backend, warm (DESIGN §11).

Usage: python bench/methods.py [PACK_DIR] [METHOD,…]   (default: the demo pack, every method)
"""

from __future__ import annotations

import statistics
import sys
import time

from common import fresh_settings, pack_path

from engine.knowledge.loader import load_pack
from engine.methods.base import method_ids
from engine.runner import Workbench

BUDGET_MS = {"vanilla": 300, "rulerag": 500, "hybrid": 1000, "r2ag": 500, "tog2": 2000, "ras": 2000}


def main() -> None:
    pack = load_pack(pack_path())
    methods = sys.argv[2].split(",") if len(sys.argv) > 2 else list(method_ids())
    workbench = Workbench(pack, fresh_settings())
    workbench.retrieval.ensure_index()
    questions = pack.questions or ()
    for method in methods:
        workbench.ask(questions[0].question, method)  # warm: encoder, KG, caches
        latencies = []
        for q in questions:
            started = time.perf_counter()
            workbench.ask(q.question, method, question_id=q.id)
            latencies.append((time.perf_counter() - started) * 1000)
        latencies.sort()
        p90 = latencies[min(len(latencies) - 1, int(0.9 * len(latencies)))]
        budget = BUDGET_MS.get(method)
        print(f"{method:8s} n={len(latencies):3d}  median {statistics.median(latencies):7.1f} ms  "
              f"p90 {p90:7.1f} ms" + (f"  (budget ≤ {budget} ms)" if budget else ""))


if __name__ == "__main__":
    main()
