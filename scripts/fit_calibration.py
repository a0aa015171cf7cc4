"""Fit the offline answers' calibration model (engine/calibration/model.json) on evaluation runs.

    python scripts/fit_calibration.py collect --pack assets/packs/demo --out rows/demo.jsonl
    python scripts/fit_calibration.py fit rows/demo.jsonl rows/hotpot.jsonl:half --test rows/geo.jsonl

`collect` asks every question of a pack with every built-in method on the offline backend with
calibration off, and writes one row per question and method (question, answer, raw confidence, the
retrieved documents' text, refused, right). `fit` fits a logistic regression on the answered rows given
(`FILE:half` fits on the questions whose id hashes even and holds the rest out), prints per method the
CRAG score before → after refusing below the threshold and the ECE of the answers kept, on every file
(fitted, held out, never fitted), and writes the model with those figures in it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.calibration.features import FEATURES, answer_features  # noqa: E402
from engine.calibration.model import MODEL_FILE, CalibrationModel  # noqa: E402

THRESHOLD = 0.5  # the methods' default min_confidence: answer only when right is likelier than wrong


def collect(pack_path: Path, out: Path, workers: int) -> None:
    from engine.calibration import graph_facts, retrieved_documents
    from engine.evaluation.runner import evaluate
    from engine.knowledge.loader import load_pack
    from engine.methods.base import METHODS
    from engine.runner import Workbench

    import engine.methods  # noqa: F401 — the built-ins, never a user's plugins

    pack = load_pack(pack_path)
    bench = Workbench(pack, calibrated=False)
    methods = [m for m, cls in METHODS.items() if cls.__module__.startswith("engine.methods.")]
    results, traces = evaluate(bench, methods, pack.questions, workers=workers,
                               progress=lambda r, t: print(f"\r{r.method} {r.question_id}   ", end="", file=sys.stderr))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink:
        for result, trace in zip(results, traces):
            answer = trace.answer
            sink.write(json.dumps({
                "pack": pack.info.name, "method": result.method, "question_id": result.question_id,
                "question": result.question, "answer": answer.text if answer else "",
                "raw": answer.confidence if answer else 0.0, "refused": result.refused,
                "right": result.outcome == "correct", "evidence": retrieved_documents(trace.steps),
                "facts": graph_facts(trace.steps)}) + "\n")
    print(f"\nwrote {out}", file=sys.stderr)


def _rows(spec: str) -> tuple[list[dict], list[dict]]:
    """(rows to fit on, rows held out) of FILE or FILE:half (half: the questions whose id hashes even)."""
    path, _, part = spec.partition(":")
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if part != "half":
        return rows, []
    even = {r["question_id"] for r in rows if int(hashlib.sha256(r["question_id"].encode()).hexdigest()[:8], 16) % 2 == 0}
    return [r for r in rows if r["question_id"] in even], [r for r in rows if r["question_id"] not in even]


def _features(row: dict) -> list[float]:
    values = answer_features(row["question"], row["answer"], row["raw"], row["evidence"], row.get("facts", ()))
    return [values[name] for name in FEATURES]


def figures(model: CalibrationModel, rows: Sequence[dict]) -> str:
    """Per method: ECE over the answers kept at p ≥ THRESHOLD, and the CRAG score before → after refusing."""
    from engine.evaluation.calibration import reliability

    parts = []
    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method]
        scored = []
        for r in mine:
            p = 0.0 if r["refused"] else model.probability(r["question"], r["answer"], r["raw"], r["evidence"], r.get("facts", ()))
            kept = not r["refused"] and p >= THRESHOLD
            scored.append(SimpleNamespace(refused=not kept, confidence=p, outcome="correct" if r["right"] else "x"))
        answered = [r for r in mine if not r["refused"]]
        before = (sum(r["right"] for r in answered) - sum(not r["right"] for r in answered)) / len(mine)
        kept = [s for s in scored if not s.refused]
        after = (sum(s.outcome == "correct" for s in kept) - sum(s.outcome != "correct" for s in kept)) / len(mine)
        ece = reliability(scored).ece
        parts.append(f"{method} CRAG {before:+.2f}→{after:+.2f} ECE {'—' if ece is None else f'{ece:.2f}'}")
    return "; ".join(parts)


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


def fit(specs: Sequence[str], tests: Sequence[str], out: Path | None) -> None:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    parts = {spec: _rows(spec) for spec in specs}
    answered = {spec: [r for r in fitted if not r["refused"]] for spec, (fitted, _) in parts.items()}
    train = [r for rows in answered.values() for r in rows]
    strength = _regularisation(list(answered.values()))
    regression = LogisticRegression(C=strength, max_iter=3000).fit(
        np.asarray([_features(r) for r in train]), np.asarray([float(r["right"]) for r in train]))
    model = CalibrationModel(weights=dict(zip(FEATURES, (round(float(w), 4) for w in regression.coef_[0]))),
                             intercept=round(float(regression.intercept_[0]), 4))
    print(f"C = {strength} (leave one rows file out)")
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
    two = commands.add_parser("fit", help="fit the model on rows files (FILE or FILE:half)")
    two.add_argument("rows", nargs="+")
    two.add_argument("--test", nargs="*", default=[], help="rows files reported but never fitted on")
    two.add_argument("--out", type=Path, default=MODEL_FILE, help="where the model goes (default: the shipped one)")
    two.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.pack, args.out, args.workers)
    else:
        fit(args.rows, args.test, None if args.dry_run else args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
