"""Attribute predictor (spec §2.3): question type over CRAG's 8 types and dynamism over its 4 classes.

Offline: logistic regression on MiniLM embeddings (the paper's SVM alternative, §2.3), trained on
engine/methods/hybrid/data/attribute_examples.jsonl — general questions across domains written for this
project — once per process. LLM: few-shot with demonstrations drawn from the same file and a
majority vote over samples (self-consistency). Decisions on spec §8.3: 5 demonstrations per call (the
paper's count), drawn with a seed taken from the question's content hash (reproducible); 3 samples by
default ([C] draws 5: each HF sample is a full generate call); a tie goes to the label voted first;
labels parse by substring, else the closest label by difflib ratio; a reply without the two lines votes
with the labels it names (a small model's bare "static"), and one that names no dynamism label is an
`error` step quoting it and casts no vote. For small models (issue 23), each demonstration is a user turn
answered by an assistant turn — in one prompt a 135M model went on writing demonstration questions —
and sampling stops at the first repeated reply (llm.draw).
Deliberate deviations from the paper (spec §2.3), for the explorer: the prompt also asks for the
question type (the paper predicts only static/dynamic) and for all 4 dynamism classes, which the gate
collapses to 2 at a configurable threshold (policy.py; [C]'s mapping by default). The demonstrations
are this project's own questions, not CRAG's, and none is an item of a pack we evaluate on.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.cache import Registry
from engine.codec import loads_bounded
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.prompting import question_pieces
from engine.retrieval.embedder import Embedder
from engine.tools.llm_call import fill_with_segments
from engine.tools.prompts import PromptFolder, fill
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)

QUESTION_TYPES = ("simple", "simple_w_condition", "comparison", "aggregation", "set", "multi-hop",
                  "post-processing", "false_premise")
DYNAMISM = ("static", "slow-changing", "fast-changing", "real-time")  # slowest to fastest
EXAMPLES_PATH = Path(__file__).resolve().parent / "data" / "attribute_examples.jsonl"
DEMOS = 5
ICL_SETTINGS = GenerationSettings(max_new_tokens=24, temperature=0.1)
_LINE = re.compile(r"(question[\s_-]*type|dynamism)\s*[:=][ \t]*([\w -]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Example:
    question: str
    question_type: str
    dynamism: str
    domain: str = ""


@dataclass(frozen=True)
class Attributes:
    question_type: str
    type_confidence: float
    dynamism: str
    dynamism_confidence: float
    method: str  # logreg | icl | logreg (icl fallback)
    votes: tuple[str, ...] = ()  # one "type / dynamism" per LLM sample
    steps: tuple[Step, ...] = ()
    second_dynamism: str = ""  # icl: the embedding classifier's label, a second opinion for the gate (policy.py)
    second_confidence: float = 0.0


@functools.cache
def load_examples(path: Path = EXAMPLES_PATH) -> tuple[Example, ...]:
    """Read once per process: the LLM's demonstrations and the offline classifier's training set."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [loads_bounded(line, str(path), n) for n, line in enumerate(lines, start=1) if line.strip()]
    return tuple(Example(r["question"], r["question_type"], r["dynamism"], r.get("domain", "")) for r in rows)


# ---- offline: logistic regression on MiniLM -----------------------------------------------------------


class AttributeModel:
    """Two multinomial logistic regressions over the same question embeddings."""

    def __init__(self, embedder: Embedder, examples: Sequence[Example]):
        from sklearn.linear_model import LogisticRegression

        self.embedder = embedder
        vectors = embedder.encode([e.question for e in examples])  # (n, 384)
        self.type_model = LogisticRegression(max_iter=2000, C=4.0).fit(vectors, [e.question_type for e in examples])
        self.dynamism_model = LogisticRegression(max_iter=2000, C=4.0).fit(vectors, [e.dynamism for e in examples])

    def predict(self, question: str) -> Attributes:
        vector = self.embedder.encode_queries([question])  # (1, 384)
        qtype, qconf = _best(self.type_model, vector)
        dyn, dconf = _best(self.dynamism_model, vector)
        return Attributes(qtype, qconf, dyn, dconf, "logreg")


def _best(model, vector: np.ndarray) -> tuple[str, float]:  # noqa: ANN001 (sklearn estimator)
    probs = model.predict_proba(vector)[0]
    best = int(np.argmax(probs))
    return str(model.classes_[best]), round(float(probs[best]), 4)


_MODELS: Registry[str, AttributeModel] = Registry()


def attribute_model(embedder: Embedder) -> AttributeModel:
    """Trained once per process and embedder (about a second on 2 cores), shared by every run."""
    return _MODELS.get(embedder.id, lambda: AttributeModel(embedder, load_examples()))


def cross_validated_accuracy(embedder: Embedder, folds: int = 5, seed: int = 0) -> dict[str, float]:
    """Stratified k-fold accuracy of both classifiers, plus the static/dynamic gate it implies."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    examples = load_examples()
    vectors = embedder.encode([e.question for e in examples])
    result = {}
    for name, labels in (("question_type", [e.question_type for e in examples]),
                         ("dynamism", [e.dynamism for e in examples])):
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        predicted = cross_val_predict(LogisticRegression(max_iter=2000, C=4.0), vectors, labels, cv=splitter)
        result[name] = round(float(np.mean(np.array(predicted) == np.array(labels))), 4)
        if name == "dynamism":
            gate = [is_dynamic(p, "fast-changing") == is_dynamic(t, "fast-changing") for p, t in zip(predicted, labels)]
            result["static_or_dynamic"] = round(float(np.mean(gate)), 4)
    return result


def is_dynamic(dynamism: str, threshold: str) -> bool:
    """Dynamic when at least as fast-changing as `threshold` (spec §2.3: {fast, real-time} by default)."""
    if threshold not in DYNAMISM or dynamism not in DYNAMISM:
        return False
    return DYNAMISM.index(dynamism) >= DYNAMISM.index(threshold)


# ---- LLM: the few-shot prompt, its parser and the vote (llm.LlmAttributePredictor calls them) ----------


def attribute_messages(question: str, examples: Sequence[Example], demos: int = DEMOS,
                       ) -> tuple[tuple[Message, ...], tuple[PromptSegment, ...]]:
    """The ICL chat: the instruction, each demonstration (drawn by the question's hash) as a user turn
    answered by an assistant turn, then the query; the query's segments."""
    seed = int(hashlib.sha256(question.encode("utf-8")).hexdigest()[:8], 16)
    chosen = random.Random(seed).sample(list(examples), min(demos, len(examples)))
    shots = [m for e in chosen for m in (Message("user", f"Question: {e.question}"),
                                         Message("assistant", _labels(e.question_type, e.dynamism)))]
    user, segments = fill_with_segments("Question: {question}", {"question": question_pieces(question)},
                                        question=question)
    system = Message("system", fill(PROMPTS.load("attributes"), types=", ".join(QUESTION_TYPES)).strip())
    return (system, *shots, Message("user", user)), segments


def _labels(question_type: str, dynamism: str) -> str:
    return f"question_type: {question_type}\ndynamism: {dynamism}"


def parse_attributes(text: str) -> tuple[str, str] | None:
    """('type', 'dynamism') from 'question_type: … / dynamism: …' lines, else from the labels the reply names
    ("static", "It is a simple question that never changes: static"); the type is '' when none is named,
    and None when no dynamism label is: the gate needs that one."""
    found: dict[str, str] = {}
    for key, value in _LINE.findall(text or ""):
        name = "dynamism" if key.lower().startswith("dyn") else "type"
        found.setdefault(name, value.strip())
    dyn = closest_label(found["dynamism"], DYNAMISM) if "dynamism" in found else _named(text, DYNAMISM)
    qtype = closest_label(found["type"], QUESTION_TYPES) if "type" in found else _named(text, QUESTION_TYPES)
    return (qtype, dyn) if dyn else None


def _named(text: str, labels: Sequence[str]) -> str:
    """The one label the text names as a word ('' when it names none or several)."""
    low = (text or "").lower().replace("_", " ").replace("-", " ")
    named = {label for label in labels if re.search(rf"\b{label.replace('_', ' ').replace('-', ' ')}\b", low)}
    named -= {a for a in named for b in named if a != b and a in b}  # "simple" inside "simple w condition"
    return named.pop() if len(named) == 1 else ""


def closest_label(text: str, labels: Sequence[str]) -> str:
    """A label the text contains (longest first), else the nearest one by difflib ratio ≥ 0.6, else ''."""
    low = text.strip().lower().replace(" ", "_")
    for label in sorted(labels, key=len, reverse=True):
        if label.replace("-", "_") in low.replace("-", "_"):
            return label
    close = difflib.get_close_matches(low, list(labels), n=1, cutoff=0.6)
    return close[0] if close else ""


def majority(labels: Sequence[str]) -> tuple[str, float]:
    counts = Counter(labels)
    top = max(counts.values())
    winner = next(label for label in labels if counts[label] == top)  # ties: the one voted first
    return winner, round(top / len(labels), 4)


def describe(attributes: Attributes) -> str:
    votes = f"; votes: {', '.join(attributes.votes)}" if attributes.votes else ""
    return (f"{attributes.method}: {attributes.question_type} ({attributes.type_confidence:.2f}), "
            f"{attributes.dynamism} ({attributes.dynamism_confidence:.2f}){votes}")
