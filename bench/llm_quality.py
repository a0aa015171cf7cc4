"""Answer quality and cost of every method run by a real language model, pack by pack (issue 23).

For each pack and method it runs `python -m engine eval` (journalled: a stopped bench goes on where it
stopped) into bench/out/llm_quality/<model>/<pack>/<method>/, then reads the traces for what `eval`
does not report: how often a model output did not parse (a recoverable `error` step: the method fell
back), LLM calls and prompt / output tokens per question, and each paper's call budget. Prints one
markdown table per pack (the README's table is this output).

    python bench/llm_quality.py --model .venv/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        [--backend hf] [--packs demo,geo,hotpot] [--methods vanilla,rulerag,…] [--limit 30]

Packs: `demo` and `geo` are the shipped packs; `hotpot` is the public adversarial-HotpotQA slice in
the shared data folder, imported once into bench/out/packs/hotpot. Any other value is a pack folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "llm_quality"
HOTPOT_JSON = ROOT.parent / "shared" / "data" / "hotpotadv_public.json"
SHIPPED = {"demo": ROOT / "assets" / "packs" / "demo", "geo": ROOT / "assets" / "packs" / "geo"}
METHODS = ("vanilla", "rulerag", "hybrid", "r2ag", "ras", "tog2")

sys.path.insert(0, str(ROOT))
from engine.evaluation.runner import QuestionResult, aggregate  # noqa: E402
from engine.trace import ErrorStep, LlmCallStep, Trace  # noqa: E402


@dataclass(frozen=True)
class Budget:
    """A paper's bound on one kind of call per question: `limit` calls whose role contains `role`."""

    role: str
    limit: int
    source: str


# ToG-2: at most D rounds, each one reasoning call, plus the initial check and the final answer (2D+1
# with the paper's D=3 when every round also re-formulates); RAS: T_max planner decisions.
BUDGETS = {"tog2": Budget("reasoning", 2 * 3 + 1, "ToG-2: ≤ 2D+1 reasoning calls, D=3"),
           "ras": Budget("planner", 5 + 1, "RAS: ≤ T_max+1 planner calls, T_max=5")}


def pack_folder(name: str) -> Path:
    if name in SHIPPED:
        return SHIPPED[name]
    if name == "hotpot":
        folder = ROOT / "bench" / "out" / "packs" / "hotpot"
        if not (folder / "pack.json").is_file():
            engine(["import-hotpot", str(HOTPOT_JSON), "--out", str(folder)])
        return folder
    return Path(name)


def engine(argv: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, check=True)


def run_eval(args: argparse.Namespace, pack: Path, method: str, out: Path) -> None:
    """One method on one pack; resumes an evaluation a previous bench left unfinished."""
    if (out / "metrics.json").is_file():
        return
    argv = ["eval", "--pack", str(pack), "--method", method, "--limit", str(args.limit),
            "--backend", args.backend, "--model", args.model, "--dtype", args.dtype, "--out", str(out)]
    if args.base_url:
        argv += ["--base-url", args.base_url]
    if (out.parent / f".{out.name}.journal").is_dir():  # engine.evaluation.journal.Journal.beside
        argv.append("--resume")
    out.parent.mkdir(parents=True, exist_ok=True)
    engine(argv)


@dataclass(frozen=True)
class Row:
    method: str
    n: int
    em: float
    f1: float
    crag: float
    refused: float
    fallback_rate: float  # of model calls, the share whose output did not parse (the method fell back)
    calls: float
    prompt_tokens: float
    output_tokens: float
    seconds: float
    over_budget: str
    finished: bool = True  # False: the questions an unfinished evaluation has answered so far


def unparsed_calls(trace: Trace) -> int:
    """Model calls followed (before the next call) by a recoverable error step other than a failed call:
    the tool could not use the output as asked and fell back."""
    unparsed, last = set(), None
    for index, step in enumerate(trace.steps):
        if isinstance(step, LlmCallStep):
            last = index
        elif (isinstance(step, ErrorStep) and step.recoverable and last is not None
              and "model failed" not in step.message):
            unparsed.add(last)
    return len(unparsed)


def row(method: str, folder: Path) -> Row | None:
    """The finished evaluation's row; else, while it runs (or after it was stopped), a row of the questions
    its journal holds so far, marked unfinished; None when neither exists."""
    journal = folder.parent / f".{folder.name}.journal" / "results.jsonl"
    if (folder / "metrics.json").is_file():
        overall = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))[method]["overall"]
        traces = [Trace.from_json(line) for line in _lines(folder / "traces.jsonl")]
        finished = True
    elif journal.is_file():
        entries = [json.loads(line) for line in _lines(journal)]
        if not entries:
            return None
        overall = aggregate([QuestionResult(**e["result"]) for e in entries])
        traces = [Trace.from_dict(e["trace"]) for e in entries]
        finished = False
    else:
        return None
    calls = [[s for s in t.steps if isinstance(s, LlmCallStep)] for t in traces]
    fallbacks = sum(unparsed_calls(t) for t in traces)
    n_calls = sum(len(c) for c in calls)
    budget = BUDGETS.get(method)
    over = ""
    if budget is not None:
        counts = [sum(budget.role in c.role for c in mine) for mine in calls]
        over = f"{sum(k > budget.limit for k in counts)}/{len(counts)} (max {max(counts, default=0)}≤{budget.limit})"
    n = max(1, len(traces))
    return Row(method=method, n=overall["n"], em=overall["em"], f1=overall["f1"], crag=overall["crag_score"],
               refused=1 - overall["coverage"], fallback_rate=fallbacks / n_calls if n_calls else 0.0,
               calls=n_calls / n, prompt_tokens=sum(c.tokens_in for m in calls for c in m) / n,
               output_tokens=sum(c.tokens_out for m in calls for c in m) / n,
               seconds=statistics.median(t.totals.latency_ms for t in traces) / 1000 if traces else 0.0,
               over_budget=over, finished=finished)


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def table(pack: str, rows: list[Row]) -> str:
    head = ("| method | n | EM | F1 | CRAG | refused | parse fallbacks / call | calls / q | prompt tok / q "
            "| output tok / q | s / q (median) | over paper's budget |\n|" + "---|" * 12)
    lines = [f"| {r.method} | {r.n}{'' if r.finished else ' (unfinished)'} | {r.em:.2f} | {r.f1:.2f} | "
             f"{r.crag:+.2f} | {r.refused:.0%} | "
             f"{r.fallback_rate:.0%} | {r.calls:.1f} | {r.prompt_tokens:,.0f} | {r.output_tokens:,.0f} | "
             f"{r.seconds:.1f} | {r.over_budget or '–'} |" for r in rows]
    return f"**{pack}**\n\n{head}\n" + "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="hf")
    parser.add_argument("--model", required=True, help="hf: folder or .gguf file; openai: model name")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--packs", default="demo,geo,hotpot")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--limit", type=int, default=30, help="questions per pack (the first N)")
    parser.add_argument("--report-only", action="store_true",
                        help="print the table of what has run (an unfinished evaluation: its questions so far)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model_name = Path(args.model).stem if args.backend == "hf" else args.model.replace("/", "_")
    for pack in args.packs.split(","):
        rows = []
        for method in args.methods.split(","):
            out = OUT / model_name / f"{pack}-{args.limit}" / method
            if not args.report_only:
                run_eval(args, pack_folder(pack), method, out)
            if (found := row(method, out)) is not None:
                rows.append(found)
        print(table(f"{pack} — {args.backend}: {model_name}, first {args.limit} questions", rows) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
