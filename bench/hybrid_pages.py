"""Hybrid method on a pack with 50 web pages (issue 16): first question and median, in a fresh process
with an empty RAGSCOPE_HOME and again in a second process that finds the page vectors stored.

Usage: python bench/hybrid_pages.py [--pages 50] [--questions 10] [--shared]

The pack is the demo pack with its pages.jsonl replaced by synthetic pages (3-10 KB of HTML each:
site chrome, paragraphs of demo-document text, a table). By default each question owns pages/questions
of them through `question_ids` (CRAG Task 1: 5 search results per question); --shared lists no
question on any page, so every question reads all of them (CRAG Task 3: 50 per question). The bare
baseline is the encoder alone on the texts the first question has to embed (its pages' chunks and
table previews).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import timed
from engine.knowledge.loader import load_pack
from engine.knowledge.writer import copy_pack_files
from engine.methods.hybrid.method import MAX_PAGES, PAGES, RANKING
from engine.methods.hybrid.page_selection import select_pages
from engine.methods.hybrid.pages import page_parts
from engine.retrieval.embedder import load_embedder
from engine.runner import Workbench
from engine.settings import DEMO_PACK, Settings
from engine.trace import ErrorStep, Trace

BUDGET_FIRST_S, BUDGET_MEDIAN_S = 10.0, 2.0
CHROME = ('<header><nav><ul><li><a href="/">Home</a></li><li><a href="/a">Archive</a></li></ul></nav></header>'
          '<aside><h3>Related</h3><ul><li><a href="/x">More science</a></li></ul></aside>')


def synthetic_page(n: int, docs: list, rng: random.Random, question_ids: list[str]) -> dict:
    """A page of 3-10 KB: a heading, paragraphs of demo-document text, a table with a row per paragraph."""
    picked = rng.sample(docs, rng.randint(4, 11))
    paragraphs = "".join(f"<h2>{d.title}</h2><p>{d.text}</p>" for d in picked)
    rows = "".join(f"<tr><td>{d.title}</td><td>{1850 + rng.randint(0, 120)}</td><td>{len(d.text)}</td></tr>"
                   for d in picked)
    title = f"{picked[0].title} and others — page {n}"
    html = (f"<!DOCTYPE html><html><head><title>{title}</title><script>var n = {n};</script></head><body>"
            f"{CHROME}<main><h1>{title}</h1>{paragraphs}<table><caption>Key figures</caption>"
            f"<tr><th>Name</th><th>Year</th><th>Characters</th></tr>{rows}</table></main>"
            f"<footer>Copyright 2024 example.org. All rights reserved.</footer></body></html>")
    return {"id": f"page-{n:03d}", "url": f"https://example.org/p/{n}", "title": title, "html": html,
            "question_ids": question_ids}


def build_pack(folder: Path, pages: int, questions: int, shared: bool) -> Path:
    copy_pack_files(DEMO_PACK, folder, "hybridbench")
    demo = load_pack(DEMO_PACK)
    asked = [q.id for q in demo.questions[:questions]]
    rng = random.Random(16)
    owners = [[] if shared else [asked[n % len(asked)]] for n in range(pages)]
    records = [synthetic_page(n, list(demo.documents), rng, owner) for n, owner in enumerate(owners)]
    with (folder / "pages.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return folder


def run_questions(pack_dir: Path, home: Path, questions: int) -> dict:
    """One process's figures: seconds for the first question, then every later one."""

    pack = load_pack(pack_dir)
    workbench = Workbench(pack, Settings(home=home))
    workbench.retrieval.ensure_index()  # the pack's document index is not what this bench measures
    workbench.retrieval.embedder.encode(["warm up"])  # nor the encoder's load
    times, ranking, failed = [], [], 0
    for question in pack.questions[:questions]:
        started = time.perf_counter()
        trace = workbench.ask(question.question, "hybrid")
        times.append(time.perf_counter() - started)
        ranking.append(_stage_s(trace, RANKING) - _stage_s(trace, PAGES))
        failed += any(isinstance(s, ErrorStep) and not s.recoverable for s in trace.steps)
    return {"first_s": times[0], "median_s": statistics.median(times[1:]), "all_s": times, "ranking_s": ranking,
            "failed": failed}


def _stage_s(trace: Trace, iteration: int) -> float:
    """Seconds into the run when the stage's last step came (steps carry cumulative times)."""
    return max(s.elapsed_ms for s in trace.steps if s.iteration == iteration) / 1000


def bare_encode_s(pack_dir: Path) -> tuple[float, int]:
    """The encoder alone on the first question's page texts: what a cold first question cannot avoid."""
    pack = load_pack(pack_dir)
    parts = [page_parts(p) for p in select_pages(pack, pack.questions[0].question, None, MAX_PAGES).pages]
    texts = [c.text for p in parts for c in p.chunks] + [t.preview for p in parts for t in p.tables]
    embedder = load_embedder()
    embedder.encode(["warm up"])
    return timed(lambda: embedder.encode(texts)), len(texts)


def child(pack_dir: Path, home: Path, questions: int) -> dict:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", str(pack_dir), str(home), str(questions)],
                         capture_output=True, text=True, env={**os.environ, "RAGSCOPE_HOME": str(home)})
    if out.returncode:
        sys.exit(f"the timed process failed:\n{out.stderr[-3000:]}")
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    return {**figures, "process_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--shared", action="store_true", help="every page is every question's")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_questions(Path(args.child[0]), Path(args.child[1]), int(args.child[2]))))
        return
    work = Path(tempfile.mkdtemp(prefix="ragscope-bench-hybrid-"))
    pack_dir = build_pack(work / "pack", args.pages, args.questions, args.shared)
    home = work / "home"
    try:
        bare_s, texts = bare_encode_s(pack_dir)
        cold = child(pack_dir, home, args.questions)
        warm = child(pack_dir, home, args.questions)
        kb = sorted(len(json.loads(line)["html"]) / 1000 for line in (pack_dir / "pages.jsonl").open())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    owned = "all pages shared" if args.shared else f"{args.pages // args.questions} pages per question"
    print(f"pack: {args.pages} pages ({kb[0]:.1f}-{kb[-1]:.1f} KB of HTML), {args.questions} questions, {owned}; "
          f"the first question embeds {texts} page texts")
    print(f"bare encoder on those texts: {bare_s:6.2f} s")
    for name, figures in (("fresh RAGSCOPE_HOME", cold), ("second process", warm)):
        first_rank = figures["ranking_s"][0]
        print(f"{name:20s} first question {figures['first_s']:6.2f} s (budget ≤ {BUDGET_FIRST_S:.0f} s), "
              f"median {figures['median_s']:5.2f} s (budget ≤ {BUDGET_MEDIAN_S:.0f} s); first question's ranking "
              f"{first_rank:5.2f} s = {first_rank / bare_s:.2f}× bare encoder; process {figures['process_s']:.1f} s")
        print("  each question (s):            " + " ".join(f"{t:5.2f}" for t in figures["all_s"]))
        print("  of which chunk/table ranking: " + " ".join(f"{t:5.2f}" for t in figures["ranking_s"]))
        if figures["failed"]:
            print(f"  warning: {figures['failed']} runs failed, so these are not full runs' times")

if __name__ == "__main__":
    main()
