"""Fit the offline answers' calibration model (engine/calibration/model.json) on evaluation runs.

    python scripts/fit_calibration.py collect --pack assets/packs/demo --out rows/demo.jsonl
    python scripts/fit_calibration.py collect --pack assets/packs/demo --out rows/demo.jsonl --methods hybrid
    python scripts/fit_calibration.py fit rows/demo.jsonl rows/hotpot.jsonl:half --test rows/geo.jsonl

`collect` asks every question of a pack with every built-in method on the offline backend with
calibration off, and writes one row per question and method (question, answer, raw confidence, the
retrieved documents' text, the run's graph facts and what it derived itself — features.Derived —,
refused, right, exact match); `--methods` asks only those and replaces only their rows in an existing
OUT. `fit` fits a logistic regression on the answered rows given (`FILE:half` fits on the questions
whose id hashes even and holds the rest out), sets the bounds of the model's two rules from the same
rows (CalibrationModel), prints per method the
AUROC of the calibrated confidence over every answer, the share answered, EM, the CRAG score before →
after refusing below the threshold and the ECE of the answers kept, on every file (fitted, held out,
never fitted), and writes the model with those figures in it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.calibration.features import FEATURES, Derived, answer_features, derived_support, statement  # noqa: E402
from engine.calibration.model import MODEL_FILE, CalibrationModel  # noqa: E402

THRESHOLD = 0.5  # the methods' default min_confidence: answer only when right is likelier than wrong


def collect(pack_path: Path, out: Path, workers: int, only: Sequence[str] = ()) -> None:
    import engine.methods  # noqa: F401 — the built-ins, never a user's plugins
    from engine.calibration import derivations, graph_facts, retrieved_documents
    from engine.evaluation.runner import evaluate
    from engine.knowledge.loader import load_pack
    from engine.methods.base import METHODS
    from engine.runner import Workbench

    pack = load_pack(pack_path)
    bench = Workbench(pack, calibrated=False)
    methods = [m for m, cls in METHODS.items() if cls.__module__.startswith("engine.methods.")
               and (not only or m in only)]
    kept = [line for line in out.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["method"] not in methods] if only and out.exists() else []
    results, traces = evaluate(bench, methods, pack.questions, workers=workers,
                               progress=lambda r, t: print(f"\r{r.method} {r.question_id}   ", end="", file=sys.stderr))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink:
        sink.writelines(line + "\n" for line in kept)
        for result, trace in zip(results, traces):
            answer = trace.answer
            sink.write(json.dumps({
                "pack": pack.info.name, "method": result.method, "question_id": result.question_id,
                "question": result.question, "answer": answer.text if answer else "",
                "raw": answer.confidence if answer else 0.0, "refused": result.refused,
                "right": result.outcome == "correct", "em": result.em, "evidence": retrieved_documents(trace.steps),
                "facts": graph_facts(trace.steps), "derived": derivations(trace.steps).to_dict()}) + "\n")
    print(f"\nwrote {out}", file=sys.stderr)


def _rows(spec: str) -> tuple[list[dict], list[dict]]:
    """(rows to fit on, rows held out) of FILE or FILE:half (half: the questions whose id hashes even)."""
    path, _, part = spec.partition(":")
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if part != "half":
        return rows, []
    even = {r["question_id"] for r in rows
            if int(hashlib.sha256(r["question_id"].encode()).hexdigest()[:8], 16) % 2 == 0}
    return [r for r in rows if r["question_id"] in even], [r for r in rows if r["question_id"] not in even]


def probability(model: CalibrationModel, row: dict) -> float:
    """The calibrated confidence `model` gives a row's answer, as engine.calibration.settle computes it."""
    return model.probability(row["question"], row["answer"], row["raw"], row["evidence"], row.get("facts", ()),
                             _derived(row))


def _supported(row: dict) -> bool:
    """What the model's ceiling spares: a retrieved sentence or the run's own derivation supports the answer."""
    return statement(row["question"], row["answer"], row["evidence"]).supported or derived_support(
        row["question"], row["answer"], row["evidence"], row.get("facts", ()), _derived(row))


def _derived(row: dict) -> Derived:
    return Derived.from_dict(row.get("derived", {}))


def _features(row: dict) -> list[float]:
    values = answer_features(row["question"], row["answer"], row["raw"], row["evidence"], row.get("facts", ()))
    return [values[name] for name in FEATURES]


@dataclass(frozen=True)
class Figures:
    """One method on one rows file, with answers refused below THRESHOLD. AUROC ranks every answer the
    method gave (kept or refused, by its calibrated confidence) against its being right; coverage, EM
    and the CRAG score count the kept ones over all questions; ECE is over the kept ones."""

    method: str
    questions: int
    auroc: float | None
    coverage: float
    em: float
    crag_unrefused: float  # every answer kept, i.e. no calibration
    crag: float
    ece: float | None

    def __str__(self) -> str:
        auroc = "—" if self.auroc is None else f"{self.auroc:.2f}"
        ece = "—" if self.ece is None else f"{self.ece:.2f}"
        return (f"{self.method} AUROC {auroc} answered {self.coverage:.0%} EM {self.em:.2f} "
                f"CRAG {self.crag_unrefused:+.2f}→{self.crag:+.2f} ECE {ece}")


def method_figures(model: CalibrationModel, rows: Sequence[dict]) -> list[Figures]:
    """Figures per method, methods in name order (see Figures)."""
    from engine.evaluation.calibration import reliability
    from engine.evaluation.metrics import auroc

    table = []
    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method]
        answered = [r for r in mine if not r["refused"]]  # the method's own refusals name no guess
        probs = [probability(model, r) for r in answered]
        kept = [r for r, p in zip(answered, probs) if p >= THRESHOLD]
        scored = [SimpleNamespace(refused=p < THRESHOLD, confidence=p, outcome="correct" if r["right"] else "x")
                  for r, p in zip(answered, probs)]
        table.append(Figures(
            method=method, questions=len(mine), auroc=auroc(probs, [r["right"] for r in answered]),
            coverage=len(kept) / len(mine), em=sum(r["em"] for r in kept) / len(mine),
            crag_unrefused=_crag(answered, len(mine)), crag=_crag(kept, len(mine)), ece=reliability(scored).ece))
    return table


def _crag(kept: Sequence[dict], questions: int) -> float:
    return (sum(r["right"] for r in kept) - sum(not r["right"] for r in kept)) / questions


def figures(model: CalibrationModel, rows: Sequence[dict]) -> str:
    """One line: every method's figures."""
    return "; ".join(str(f) for f in method_figures(model, rows))


STRENGTHS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def _regularisation(groups: Sequence[Sequence[dict]]) -> float:
    """The inverse regularisation strength C whose model, fitted on all rows files but one, predicts the
    one left out best (log loss, summed over the files): calibration must carry over to data it was not
    fitted on, so C is chosen by exactly that and never by the packs reported as never fitted."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    if len(groups) < 2:
        return 1.0
    losses = {}
    for c in STRENGTHS:
        total = 0.0
        for i, held in enumerate(groups):
            rest = [r for j, g in enumerate(groups) if j != i for r in g]
            model = LogisticRegression(C=c, max_iter=3000).fit(
                np.asarray([_features(r) for r in rest]), np.asarray([float(r["right"]) for r in rest]))
            probs = model.predict_proba(np.asarray([_features(r) for r in held]))[:, 1]
            total += log_loss([float(r["right"]) for r in held], probs, labels=[0.0, 1.0])
        losses[c] = total
    return min(losses, key=losses.get)


def _succession(rows: Sequence[dict]) -> float:
    """(right + 1) / (n + 2) over the rows' distinct (question, answer) pairs: what such an answer is
    worth, by Laplace's rule of succession — the six methods giving one answer to one question are one
    observation, not six, and a handful of them must not make a bound of 0 or 1."""
    pairs = {(r["pack"], r["question_id"], r["answer"]): r["right"] for r in rows}
    return round((sum(pairs.values()) + 1) / (len(pairs) + 2), 4)


def fit_model(groups: Sequence[Sequence[dict]]) -> tuple[CalibrationModel, float]:
    """(the model, its C) fitted on the answered rows of `groups`, one group per rows file: C by leaving one
    group out (_regularisation), the weights on every group's answered rows, the two rules' bounds from them."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    answered = [[r for r in rows if not r["refused"]] for rows in groups]
    train = [r for rows in answered for r in rows]
    strength = _regularisation(answered)
    regression = LogisticRegression(C=strength, max_iter=3000).fit(
        np.asarray([_features(r) for r in train]), np.asarray([float(r["right"]) for r in train]))
    model = CalibrationModel(weights=dict(zip(FEATURES, (round(float(w), 4) for w in regression.coef_[0]))),
                             intercept=round(float(regression.intercept_[0]), 4),
                             plain_floor=_succession([r for r in train
                                                      if statement(r["question"], r["answer"], r["evidence"]).plain]),
                             unsupported_ceiling=_succession([r for r in train if not _supported(r)]))
    return model, strength


def fit(specs: Sequence[str], tests: Sequence[str], out: Path | None) -> None:
    parts = {spec: _rows(spec) for spec in specs}
    model, strength = fit_model([fitted for fitted, _ in parts.values()])
    train = [r for fitted, _ in parts.values() for r in fitted if not r["refused"]]
    print(f"C = {strength} (leave one rows file out); plain statements at least {model.plain_floor}, "
          f"unsupported answers at most {model.unsupported_ceiling}")
    report: dict[str, str] = {}
    for spec, (fitted, held) in parts.items():
        report[f"{spec} (fitted)"] = figures(model, fitted)
        if held:
            report[f"{spec} (held out)"] = figures(model, held)
    for spec in tests:
        report[f"{spec} (never fitted)"] = figures(model, _rows(spec)[0])
    for name, line in report.items():
        print(f"{name}\n    {line}")
    model = replace(model, fitted_on={"rows": list(specs), "answers": len(train), "threshold": THRESHOLD, "C": strength,
                                      "report": report})
    if out is not None:
        out.write_text(json.dumps(model.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("collect", help="answer a pack's questions with raw confidences")
    one.add_argument("--pack", type=Path, required=True)
    one.add_argument("--out", type=Path, required=True)
    one.add_argument("--workers", type=int, default=2)
    one.add_argument("--methods", nargs="*", default=[], help="ask only these methods (default: every built-in)")
    two = commands.add_parser("fit", help="fit the model on rows files (FILE or FILE:half)")
    two.add_argument("rows", nargs="+")
    two.add_argument("--test", nargs="*", default=[], help="rows files reported but never fitted on")
    two.add_argument("--out", type=Path, default=MODEL_FILE, help="where the model goes (default: the shipped one)")
    two.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.pack, args.out, args.workers, args.methods)
    else:
        fit(args.rows, args.test, None if args.dry_run else args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
