"""Offline answer quality of every built-in method, pack by pack: the figures issue 27 is judged by.

    python bench/offline_quality.py --packs demo,geo,hotpot [--methods vanilla,rulerag,…] [--out FILE.json]

For each pack it reuses scripts/fit_calibration.py's `collect` rows (every question, every method, the
offline backend, calibration off), cached in bench/out/quality/<pack>.jsonl beside a key file: a rerun
asks again only when the pack's files or the code that answers (engine/ as committed plus any
uncommitted change, and `collect` itself) differ, or a method is missing. From the rows, exactly as
`eval` scores a calibrated run (engine.calibration.settle, engine.evaluation.runner.aggregate):

- at the default policy (min_confidence 0.5) and at min_confidence 0: SQuAD-style EM, coverage (share
  answered), the CRAG score (right − hallucinated, "I don't know" scoring 0) and factoid coverage;
- AUROC of the shipped model's calibrated confidence over every answer or held-back guess;
- leave-one-pack-out AUROC: the calibration model fitted (fit_calibration.fit_model) on every other
  pack's rows scores the held-out pack's answers; per method, per pack and pooled over packs; and from
  the same held-out scores coverage, CRAG and factoid coverage at the default policy, with whether
  issue 27's calibration targets are met (calibration_targets);
- EM per question type, with the difference to vanilla on the same questions, and whether each seed
  method is at least vanilla on the types it targets (TARGETS; issue 27's target).

Prints Markdown tables and how long it took; `--out` writes every figure as JSON. Packs as in
bench/llm_quality.py: `demo`, `geo`, `hotpot` (the public adversarial-HotpotQA slice, imported on first
use) or a pack folder.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "out" / "quality"
METHODS = ("vanilla", "rulerag", "hybrid", "r2ag", "ras", "tog2")
POLICIES = (0.5, 0.0)  # the default min_confidence (engine.params.DEFAULT_MIN_CONFIDENCE) and "never refuse"
# The question types each seed method is built for (our reading of each paper's claim; docs/packs.md's
# types): RuleRAG's rules; ToG-2's and RAS's multi-hop walks; the CRAG hybrid's calculator, premise
# check and set answers; R2AG, evaluated on NQ and HotpotQA-style QA.
TARGETS = {"rulerag": ("rule",), "tog2": ("multi_hop",), "ras": ("multi_hop",),
           "hybrid": ("numeric", "comparison", "set", "false_premise"), "r2ag": ("factoid", "multi_hop")}

sys.path.insert(0, str(ROOT))
import scripts.fit_calibration as fitting  # noqa: E402
from bench.llm_quality import pack_folder  # noqa: E402
from engine.evaluation.metrics import auroc, normalize  # noqa: E402
from engine.params import DEFAULT_MIN_CONFIDENCE  # noqa: E402
from engine.tools.base import IDK  # noqa: E402
from scripts.fit_calibration import collect, fit_model, probability  # noqa: E402

assert DEFAULT_MIN_CONFIDENCE == POLICIES[0], "POLICIES must start with the engine's default min_confidence"


# ---------------------------------------------------------------- rows, cached


ANSWERLESS = "engine/calibration/"  # collect asks with calibration off: the model changes no answer


def code_version() -> str:
    """A hash of engine/ as committed and as changed since, less engine/calibration, and of the source of
    `collect` and of the trace readers it writes rows with: what decides the rows. Commits elsewhere (a
    pack, a bench, the fitting code, the calibration model or its features) change no answer and keep the
    cache, so a refit after a model change asks nothing again."""
    from engine.calibration import model

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    skip = f":(exclude){ANSWERLESS}"
    tree = "".join(line for line in git("ls-tree", "-r", "HEAD", "--", "engine").splitlines(keepends=True)
                   if f"\t{ANSWERLESS}" not in line)
    dirty = git("diff", "HEAD", "--", "engine", skip) + git("ls-files", "--others", "--exclude-standard", "--",
                                                             "engine", skip)
    readers = "".join(inspect.getsource(f) for f in (fitting.collect, model.retrieved_documents, model.graph_facts,
                                                        model.derivations))
    return hashlib.sha256(f"{tree}\n{dirty}\n{readers}".encode()).hexdigest()[:16]


def pack_fingerprint(folder: Path) -> str:
    """A hash of every file of the pack folder, names and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def pack_rows(folder: Path, methods: Sequence[str], cache: Path = CACHE, workers: int = 2) -> list[dict]:
    """The collect rows of `methods` on the pack in `folder`, asked only where the cache lacks them."""
    rows_file = cache / f"{folder.name}.jsonl"
    key_file = rows_file.with_suffix(".key.json")
    key = {"pack": pack_fingerprint(folder), "code": code_version()}
    stale = not rows_file.is_file() or not key_file.is_file() or json.loads(key_file.read_text()) != key
    if stale:
        rows_file.unlink(missing_ok=True)
    have = set() if stale else {json.loads(line)["method"] for line in rows_file.read_text().splitlines() if line}
    missing = [m for m in methods if m not in have]
    if missing:
        print(f"{folder.name}: asking {', '.join(missing)} (cache {'stale' if stale else 'lacks them'})",
              file=sys.stderr)
        key_file.unlink(missing_ok=True)  # a collect cut short leaves no key, so the next run asks again
        collect(folder, rows_file, workers, missing)
        key_file.write_text(json.dumps(key) + "\n", encoding="utf-8")
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["method"] in methods]


def resolve_packs(names: Sequence[str]) -> dict[str, Path]:
    """{folder name: folder} of `names` (demo, geo, hotpot or folders), hotpot imported on first use."""
    packs = {}
    for name in names:
        folder = pack_folder(name)
        if not (folder / "questions.jsonl").is_file():
            raise ValueError(f"{name!r} is no pack folder ({folder}/questions.jsonl is missing); "
                             "give demo, geo, hotpot or a pack folder")
        packs[folder.name] = folder
    return packs


def question_types(folder: Path) -> dict[str, str]:
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return {q["id"]: q["type"] for q in (json.loads(line) for line in lines if line.strip())}


# ---------------------------------------------------------------- figures


@dataclass(frozen=True)
class Policy:
    """One method on one pack at one min_confidence, as `eval` would report it."""

    min_confidence: float
    em: float
    coverage: float
    crag: float
    factoid_coverage: float | None  # None: the pack has no factoid question


@dataclass(frozen=True)
class Scored:
    """A collect row with what the figures need: its type and the calibrated confidence of its answer."""

    method: str
    question_id: str
    type: str
    answer: str
    refused: bool  # by the method itself, before any policy
    right: bool
    em: float
    confidence: float


def scored_rows(rows: Sequence[dict], types: dict[str, str], confidence: Callable[[dict], float]) -> list[Scored]:
    return [Scored(method=r["method"], question_id=r["question_id"], type=types[r["question_id"]],
                   answer=r["answer"], refused=r["refused"], right=r["right"], em=r["em"],
                   confidence=round(confidence(r), 4) if not r["refused"] else 0.0) for r in rows]


def _kept(row: Scored, min_confidence: float) -> bool:
    """Answered under the policy: the method answered and settle did not refuse (it compares the rounded value)."""
    return not row.refused and row.confidence >= min_confidence


def _outcome(row: Scored, min_confidence: float) -> str:
    """engine.evaluation.metrics.score_answer's CRAG outcome of the row's answer under the policy."""
    if not _kept(row, min_confidence):
        return "correct" if row.right and row.refused else "missing"
    if row.right:
        return "correct"
    return "missing" if normalize(row.answer) in ("", normalize(IDK)) else "hallucinated"


def policy_figures(rows: Sequence[Scored], min_confidence: float) -> Policy:
    n = len(rows)
    outcomes = [_outcome(r, min_confidence) for r in rows]
    factoid = [r for r in rows if r.type == "factoid"]
    return Policy(
        min_confidence=min_confidence,
        em=round(sum(r.em for r in rows if _kept(r, min_confidence)) / n, 4),
        coverage=round(sum(_kept(r, min_confidence) for r in rows) / n, 4),
        crag=round((outcomes.count("correct") - outcomes.count("hallucinated")) / n, 4),
        factoid_coverage=round(sum(_kept(r, min_confidence) for r in factoid) / len(factoid), 4) if factoid else None)


def ranking(rows: Sequence[Scored]) -> float | None:
    """AUROC over every answer or held-back guess (the method's own refusals name none), as `eval` reports it."""
    guesses = [r for r in rows if not r.refused and r.answer]
    return auroc([r.confidence for r in guesses], [r.right for r in guesses])


def by_type(rows: Sequence[Scored], method: str) -> dict[str, dict]:
    """EM per question type of `method` at each policy, and its difference to vanilla on the same questions."""
    mine = {r.question_id: r for r in rows if r.method == method}
    base = {r.question_id: r for r in rows if r.method == "vanilla"}
    table = {}
    for qtype in sorted({r.type for r in mine.values()}):
        ids = [q for q, r in mine.items() if r.type == qtype]
        both = [q for q in ids if q in base]
        cell: dict = {"n": len(ids)}
        for t in POLICIES:
            cell[f"em@{t}"] = round(sum(mine[q].em for q in ids if _kept(mine[q], t)) / len(ids), 4)
            cell[f"delta_vanilla@{t}"] = round(sum((mine[q].em if _kept(mine[q], t) else 0.0)
                                                   - (base[q].em if _kept(base[q], t) else 0.0)
                                                   for q in both) / len(both), 4) if both else None
        table[qtype] = cell
    return table


def leave_one_pack_out(rows: dict[str, list[dict]], types: dict[str, dict[str, str]]) -> dict[str, list[Scored]]:
    """Each pack's rows scored by a calibration model fitted on every other pack's rows (fit_model)."""
    if len(rows) < 2:
        raise ValueError(f"leave-one-pack-out AUROC needs at least 2 packs; got {len(rows)} "
                         f"({', '.join(rows) or 'none'}): give --packs two or more, or --no-lopo")
    held_out = {}
    for pack in rows:
        groups = [r for name, r in rows.items() if name != pack]
        labels = {r["right"] for g in groups for r in g if not r["refused"]}
        if labels != {False, True}:
            raise ValueError(f"leave-one-pack-out without {pack}: the other packs' answers are all "
                             f"{'right' if True in labels else 'wrong'}; a model needs both to fit")
        model = fit_model(groups).model
        held_out[pack] = scored_rows(rows[pack], types[pack], lambda r, m=model: probability(m, r))
    return held_out


def measure(packs: dict[str, Path], methods: Sequence[str], *, lopo: bool = True, cache: Path = CACHE,
            workers: int = 2) -> dict:
    """Every figure (see the module docstring) of `methods` on `packs` ({name: folder})."""
    from engine.calibration.model import default_model

    started = time.monotonic()
    rows = {name: pack_rows(folder, methods, cache, workers) for name, folder in packs.items()}
    types = {name: question_types(folder) for name, folder in packs.items()}
    shipped = default_model()
    scored = {name: scored_rows(rows[name], types[name], lambda r: probability(shipped, r)) for name in packs}
    held = leave_one_pack_out(rows, types) if lopo else {}
    report: dict = {"methods": list(methods), "policies": list(POLICIES), "targets": TARGETS, "packs": {}}
    for name in packs:
        entry: dict = {"folder": str(packs[name]), "fingerprint": pack_fingerprint(packs[name]),
                       "questions": len(types[name]), "methods": {}}
        for method in methods:
            mine = [r for r in scored[name] if r.method == method]
            entry["methods"][method] = {
                "questions": len(mine),
                "policies": {str(t): asdict(policy_figures(mine, t)) for t in POLICIES},
                "auroc": ranking(mine),
                "lopo_auroc": ranking([r for r in held[name] if r.method == method]) if lopo else None,
                "lopo_policy": asdict(policy_figures([r for r in held[name] if r.method == method], POLICIES[0]))
                if lopo else None,
                "by_type": by_type(scored[name], method),
            }
        entry["lopo_auroc_pooled"] = ranking(held[name]) if lopo else None
        report["packs"][name] = entry
    if lopo:
        every = [r for rs in held.values() for r in rs]
        report["lopo"] = {"per_method": {m: ranking([r for r in every if r.method == m]) for m in methods},
                          "pooled": ranking(every)}
    report["target_check"] = target_check(report)
    report["calibration_targets"] = calibration_targets(report) if lopo else []
    report["code_version"] = code_version()
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


def target_check(report: dict) -> list[dict]:
    """Issue 27's target: every seed method's EM ≥ vanilla's on the types it targets, per pack and policy."""
    checks = []
    for pack, entry in report["packs"].items():
        for method, targets in TARGETS.items():
            if method not in entry["methods"] or "vanilla" not in entry["methods"]:
                continue
            for qtype in targets:
                cell = entry["methods"][method]["by_type"].get(qtype)
                if cell is None:
                    continue
                for t in POLICIES:
                    delta = cell[f"delta_vanilla@{t}"]
                    checks.append({"pack": pack, "method": method, "type": qtype, "min_confidence": t,
                                   "delta": delta, "met": delta is not None and delta >= 0})
    return checks


# Issue 27's calibration targets, each checked on held-out figures (the pack scored by a model fitted on
# the others) at the default policy: (name, the figure's path in a method's entry or the pack's, the bound).
LOPO_AUROC_MIN = 0.75
FACTOID_COVERAGE_MIN = 0.6
CRAG_MIN = 0.0


def calibration_targets(report: dict) -> list[dict]:
    """Issue 27's calibration targets on the leave-one-pack-out figures: AUROC ≥ 0.75 on every held-out
    pack (all methods pooled), and per method and pack at the default policy factoid coverage ≥ 60 % (on
    packs with factoid questions) and CRAG ≥ 0."""
    checks = []
    for pack, entry in report["packs"].items():
        checks.append({"target": f"LOPO AUROC >= {LOPO_AUROC_MIN}", "pack": pack, "method": "pooled",
                       "value": entry["lopo_auroc_pooled"],
                       "met": entry["lopo_auroc_pooled"] is not None and entry["lopo_auroc_pooled"] >= LOPO_AUROC_MIN})
        for method, m in entry["methods"].items():
            at = m["lopo_policy"]
            if at["factoid_coverage"] is not None:
                checks.append({"target": f"LOPO factoid coverage >= {FACTOID_COVERAGE_MIN}", "pack": pack,
                               "method": method, "value": at["factoid_coverage"],
                               "met": at["factoid_coverage"] >= FACTOID_COVERAGE_MIN})
            checks.append({"target": f"LOPO CRAG >= {CRAG_MIN}", "pack": pack, "method": method, "value": at["crag"],
                           "met": at["crag"] >= CRAG_MIN})
    return checks


# ---------------------------------------------------------------- output


def _f(value: float | None, sign: bool = False) -> str:
    return "—" if value is None else f"{value:+.2f}" if sign else f"{value:.2f}"


COLUMNS = ("method", *(f"{name} @{t:g}" for t in POLICIES for name in ("EM", "coverage", "CRAG", "factoid cov.")),
           "AUROC", "LOPO AUROC", *(f"LOPO {name} @{POLICIES[0]:g}" for name in ("coverage", "CRAG", "factoid cov.")))


def markdown(report: dict) -> str:
    lines = []
    for pack, entry in report["packs"].items():
        lines += [f"### {pack} ({entry['questions']} questions)", "",
                  "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        for method, m in entry["methods"].items():
            at = m["policies"]
            cells = [f"{_f(p['em'])} | {_f(p['coverage'])} | {_f(p['crag'], True)} | {_f(p['factoid_coverage'])}"
                     for p in (at[str(POLICIES[0])], at[str(POLICIES[1])])]
            held = m["lopo_policy"] or {}
            lopo = f"{_f(held.get('coverage'))} | {_f(held.get('crag'), True)} | {_f(held.get('factoid_coverage'))}"
            lines.append(f"| {method} | {' | '.join(cells)} | {_f(m['auroc'])} | {_f(m['lopo_auroc'])} | {lopo} |")
        lines += ["", f"LOPO AUROC, all methods pooled: {_f(entry['lopo_auroc_pooled'])}", ""]
        types = sorted({t for m in entry["methods"].values() for t in m["by_type"]})
        lines += ["EM per question type at min_confidence 0.5 / 0 (Δ vanilla on the same questions; * a type the "
                  "method targets)", "", "| method | " + " | ".join(types) + " |", "|" + "---|" * (len(types) + 1)]
        for method, m in entry["methods"].items():
            cells = []
            for t in types:
                c = m["by_type"].get(t)
                mark = "*" if t in TARGETS.get(method, ()) else ""
                cells.append("—" if c is None else
                             f"{mark}{_f(c['em@0.5'])} ({_f(c['delta_vanilla@0.5'], True)}) / "
                             f"{_f(c['em@0.0'])} ({_f(c['delta_vanilla@0.0'], True)})")
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    if "lopo" in report:
        per = ", ".join(f"{m} {_f(v)}" for m, v in report["lopo"]["per_method"].items())
        lines += [f"LOPO AUROC over every pack: {per}; pooled {_f(report['lopo']['pooled'])}", ""]
    missed = [c for c in report["target_check"] if not c["met"]]
    lines.append(f"Target (seed method ≥ vanilla EM on its types): {len(report['target_check']) - len(missed)} of "
                 f"{len(report['target_check'])} (pack, method, type, policy) met; missed: "
                 + ("; ".join(f"{c['pack']} {c['method']} {c['type']} @{c['min_confidence']} {_f(c['delta'], True)}"
                              for c in missed) or "none"))
    for target in dict.fromkeys(c["target"] for c in report["calibration_targets"]):
        checks = [c for c in report["calibration_targets"] if c["target"] == target]
        missed = [c for c in checks if not c["met"]]
        lines.append(f"Target {target} (held out, @{POLICIES[0]:g}): {'MET' if not missed else 'NOT MET'}, "
                     f"{len(checks) - len(missed)} of {len(checks)}; missed: "
                     + ("; ".join(f"{c['pack']} {c['method']} {_f(c['value'])}" for c in missed) or "none"))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packs", default="demo,geo,hotpot", help="comma-separated: demo, geo, hotpot or folders")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated built-in methods")
    parser.add_argument("--out", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-lopo", action="store_true", help="skip leave-one-pack-out (needs ≥ 2 packs)")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    try:
        packs = resolve_packs([p for p in args.packs.split(",") if p])
    except ValueError as error:
        parser.error(f"--packs: {error}")
    if not args.no_lopo and len(packs) < 2:
        parser.error(f"leave-one-pack-out AUROC needs at least 2 packs; got {len(packs)}: add a pack or --no-lopo")
    report = measure(packs, methods, lopo=not args.no_lopo, workers=args.workers)
    print(markdown(report))
    print(f"\n{len(packs)} packs × {len(methods)} methods in {report['seconds']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
