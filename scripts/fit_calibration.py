"""Fit the offline answers' calibration model (engine/calibration/model.json) on evaluation runs.

    python scripts/fit_calibration.py refit            # the shipped model: four packs, rows cached
    python scripts/fit_calibration.py refit --packs demo,geo,hotpot,assets/packs/spaceflight --dry-run
    python scripts/fit_calibration.py collect --pack assets/packs/demo --out rows/demo.jsonl
    python scripts/fit_calibration.py collect --pack assets/packs/demo --out rows/demo.jsonl --methods hybrid
    python scripts/fit_calibration.py fit rows/demo.jsonl rows/hotpot.jsonl:half --test rows/geo.jsonl

`collect` asks every question of a pack with every built-in method on the offline backend with
calibration off, and writes one row per question and method (question, answer, raw confidence, the
retrieved documents' text, the run's graph facts and what it derived itself — features.Derived —,
refused, right, exact match); `--methods` asks only those and replaces only their rows in an existing
OUT. `fit` fits a logistic regression on the answered rows given (`FILE:half` fits on the questions
whose id hashes even and holds the rest out), within sign bounds (model.SIGNS, and a feature whose
weight flips between the files fitted alone is left out: stable_bounds), sets the bounds of the model's
two rules from the same rows (CalibrationModel), prints per method the AUROC of the calibrated
confidence over every answer, the share answered, EM, the CRAG score before → after refusing below
the threshold and the ECE of the answers kept, on every file (fitted, held out, never fitted), and
writes the model with those figures in it. `refit` is collect + fit in one command on packs, the rows
cached by bench/offline_quality.py (rerun it after the answers change: only changed code asks again),
each pack also reported left out (scored by a model fitted on the other packs).
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.calibration.features import FEATURES, Derived, answer_features, derived_support, statement  # noqa: E402
from engine.calibration.model import MODEL_FILE, SIGNS, CalibrationModel  # noqa: E402

THRESHOLD = 0.5  # the methods' default min_confidence: answer only when right is likelier than wrong
REFIT_PACKS = "demo,geo,hotpot,assets/packs/spaceflight"  # the shipped model's: two domains of ours, an imported
# dataset's slice and a pack written without reading the engine


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
    values = answer_features(row["question"], row["answer"], row["raw"], row["evidence"], row.get("facts", ()),
                             _derived(row))
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
TOLERANCE = 0.25  # a weight smaller than this on one pack is no evidence of either sign
Bounds = tuple[float | None, float | None]


@dataclass(frozen=True)
class Fit:
    """A fitted model and how it was chosen: C, the bounds each feature was fitted under (SIGNS, or the
    one sign every pack gave it, or (0, 0) for a feature left out) and, for each feature left out, its
    weight fitted on each group alone — the flip that put it out."""

    model: CalibrationModel
    strength: float
    bounds: dict[str, Bounds]
    flipped: dict[str, list[float]]


def _matrix(rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(features, right) of the rows: (n, len(FEATURES)) and (n,)."""
    return np.asarray([_features(r) for r in rows], dtype=float).reshape(-1, len(FEATURES)), \
        np.asarray([float(r["right"]) for r in rows])


def logistic(x: np.ndarray, y: np.ndarray, strength: float, bounds: Sequence[Bounds]) -> np.ndarray:
    """Weights (one per column of `x`, then the intercept) of an L2-regularised logistic regression,
    each weight within its bounds (the intercept free): bounded L-BFGS on the log loss plus |w|² / 2C,
    the objective scikit-learn's LogisticRegression minimises, so C means what it meant there."""
    from scipy.optimize import minimize

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[:-1] + theta[-1]                      # (n,)
        error = 1.0 / (1.0 + np.exp(-z)) - y                # (n,) dloss/dz
        value = float(np.sum(np.logaddexp(0.0, z) - y * z) + theta[:-1] @ theta[:-1] / (2 * strength))
        return value, np.append(x.T @ error + theta[:-1] / strength, error.sum())

    start = np.zeros(x.shape[1] + 1)
    return minimize(loss, start, jac=True, method="L-BFGS-B", bounds=[*bounds, (None, None)]).x


def _prior(name: str) -> Bounds:
    sign = SIGNS.get(name, 0)
    return (0.0, None) if sign > 0 else (None, 0.0) if sign < 0 else (None, None)


def stable_bounds(groups: Sequence[tuple[np.ndarray, np.ndarray]],
                  strength: float = 1.0) -> tuple[dict[str, Bounds], dict[str, list[float]]]:
    """(bounds per feature, the per-group weights of each feature left out). Each group (a pack) is fitted
    alone under SIGNS; a feature that weighs more than TOLERANCE one way on one group and the other way on
    another helps one pack and misleads the other (issue 27: a feature that flips between packs is out),
    so the widest flip is left out and the rest refitted until none flips. A kept feature is then bounded
    to the sign its weights share, so the pooled fit cannot flip it either. With one group nothing is
    seen to flip and only SIGNS bound."""
    active = list(FEATURES)
    flipped: dict[str, list[float]] = {}
    while True:
        columns = [FEATURES.index(n) for n in active]
        weights = np.asarray([logistic(x[:, columns], y, strength, [_prior(n) for n in active])[:-1]
                              for x, y in groups]).reshape(len(groups), len(active))  # (groups, active)
        spread = {n: (float(weights[:, i].min()), float(weights[:, i].max())) for i, n in enumerate(active)}
        flips = {n: hi - lo for n, (lo, hi) in spread.items() if lo < -TOLERANCE and hi > TOLERANCE}
        if len(groups) < 2 or not flips:
            break
        worst = max(flips, key=flips.get)
        flipped[worst] = [round(float(w), 2) for w in weights[:, active.index(worst)]]
        active.remove(worst)
    bounds: dict[str, Bounds] = {n: (0.0, 0.0) for n in FEATURES}
    for i, name in enumerate(active):
        agreed = float(weights[:, i].sum()) if len(groups) > 1 and name not in SIGNS else 0.0
        bounds[name] = (0.0, None) if agreed > 0 else (None, 0.0) if agreed < 0 else _prior(name)
    return bounds, flipped


def _regularisation(groups: Sequence[tuple[np.ndarray, np.ndarray]], bounds: Sequence[Bounds]) -> float:
    """The inverse regularisation strength C whose model, fitted on all groups but one, predicts the one
    left out best (log loss, summed over the groups): calibration must carry over to data it was not
    fitted on, so C is chosen by exactly that and never by the packs reported as never fitted."""
    if len(groups) < 2:
        return 1.0
    losses = {}
    for c in STRENGTHS:
        total = 0.0
        for i, (x_held, y_held) in enumerate(groups):
            theta = logistic(np.vstack([g[0] for j, g in enumerate(groups) if j != i]),
                             np.concatenate([g[1] for j, g in enumerate(groups) if j != i]), c, bounds)
            p = np.clip(1.0 / (1.0 + np.exp(-(x_held @ theta[:-1] + theta[-1]))), 1e-12, 1 - 1e-12)
            total += float(-np.sum(y_held * np.log(p) + (1 - y_held) * np.log(1 - p)))
        losses[c] = total
    return min(losses, key=losses.get)


def _succession(rows: Sequence[dict]) -> float:
    """(right + 1) / (n + 2) over the rows' distinct (question, answer) pairs: what such an answer is
    worth, by Laplace's rule of succession — the six methods giving one answer to one question are one
    observation, not six, and a handful of them must not make a bound of 0 or 1."""
    pairs = {(r["pack"], r["question_id"], r["answer"]): r["right"] for r in rows}
    return round((sum(pairs.values()) + 1) / (len(pairs) + 2), 4)


def fit_model(groups: Sequence[Sequence[dict]]) -> Fit:
    """The model fitted on the answered rows of `groups`, one group per pack or rows file: the bounds by
    fitting each group alone (stable_bounds), C by leaving one group out (_regularisation), the weights on
    every group's answered rows within those bounds, the two rules' bounds from the same rows."""
    answered = [[r for r in rows if not r["refused"]] for rows in groups]
    matrices = [_matrix(rows) for rows in answered if rows]
    bounds, flipped = stable_bounds(matrices)
    order = [bounds[n] for n in FEATURES]
    strength = _regularisation(matrices, order)
    theta = logistic(np.vstack([x for x, _ in matrices]), np.concatenate([y for _, y in matrices]), strength, order)
    train = [r for rows in answered for r in rows]
    model = CalibrationModel(weights={n: round(float(w), 4) + 0.0 for n, w in zip(FEATURES, theta[:-1])},
                             intercept=round(float(theta[-1]), 4),
                             plain_floor=_succession([r for r in train
                                                      if statement(r["question"], r["answer"], r["evidence"]).plain]),
                             unsupported_ceiling=_succession([r for r in train if not _supported(r)]))
    return Fit(model, strength, bounds, flipped)


def fit(specs: Sequence[str], tests: Sequence[str], out: Path | None) -> None:
    parts = {spec: _rows(spec) for spec in specs}
    others = {f"{spec} (held out)": (None, held) for spec, (_, held) in parts.items() if held}
    others |= {f"{spec} (never fitted)": (None, _rows(spec)[0]) for spec in tests}
    _write(fit_model([fitted for fitted, _ in parts.values()]), {spec: fitted for spec, (fitted, _) in parts.items()},
           others, {"rows": list(specs)}, out)


def refit(packs: Sequence[str], out: Path | None, workers: int = 2) -> None:
    """Fit on every built-in method's answers on `packs` (bench/offline_quality's cached rows, asked again
    only where the answering code or a pack changed) and report each pack twice: fitted, and left out — by
    a model fitted on the other packs, the figure that says whether calibration carries over."""
    from bench.offline_quality import METHODS, pack_rows, resolve_packs

    rows = {name: pack_rows(folder, METHODS, workers=workers) for name, folder in resolve_packs(packs).items()}
    left_out = {f"{name} (left out)": (fit_model([r for other, r in rows.items() if other != name]).model, rows[name])
                for name in rows} if len(rows) > 1 else {}
    _write(fit_model(list(rows.values())), rows, left_out, {"packs": list(packs)}, out)


def _write(fitted: Fit, groups: dict[str, list[dict]], others: dict[str, tuple[CalibrationModel | None, list[dict]]],
           source: dict, out: Path | None) -> None:
    """Print the fit and its figures on the groups it was fitted on and on `others` ((model, rows): rows
    scored by their own model, or by the fitted one where None), and write the model with them to `out`."""
    model = fitted.model
    kept = {n: ("≥ 0" if lo == 0 else "≤ 0" if hi == 0 else "free") for n, (lo, hi) in fitted.bounds.items()
            if (lo, hi) != (0.0, 0.0)}
    print(f"C = {fitted.strength} (leave one group out); plain statements at least {model.plain_floor}, "
          f"unsupported answers at most {model.unsupported_ceiling}\nkept: {kept}\nleft out (weight per group "
          f"fitted alone): {fitted.flipped}")
    report = {f"{name} (fitted)": figures(model, rows) for name, rows in groups.items()}
    for name, entry in others.items():
        report[name] = figures(entry[0] or model, entry[1])
    for name, line in report.items():
        print(f"{name}\n    {line}")
    train = sum(not r["refused"] for rows in groups.values() for r in rows)
    model = replace(model, fitted_on={**source, "answers": train, "threshold": THRESHOLD, "C": fitted.strength,
                                      "signs": kept, "flipped": fitted.flipped, "report": report})
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
    three = commands.add_parser("refit", help="collect (cached) and fit on packs, each also reported left out")
    three.add_argument("--packs", default=REFIT_PACKS, help=f"comma-separated (default: {REFIT_PACKS})")
    three.add_argument("--workers", type=int, default=2)
    for command in (two, three):
        command.add_argument("--out", type=Path, default=MODEL_FILE, help="where the model goes (default: shipped)")
        command.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.pack, args.out, args.workers, args.methods)
    elif args.command == "fit":
        fit(args.rows, args.test, None if args.dry_run else args.out)
    else:
        refit([p for p in args.packs.split(",") if p], None if args.dry_run else args.out, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
