"""run_card.json: what produced an evaluation report, so any number in a results table can be traced back.

`eval --out DIR` writes it beside metrics.json; `merge-evals` checks shards against each other with it. Parameters
are recorded as resolved (each method's Params defaults plus the -p given), so the card says the k actually used,
not only the k someone typed. The api key is never written. Library versions are those already imported: a card
never imports torch to name its version (an offline evaluation never loads it).
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import RagscopeError
from engine.evaluation.shards import WHOLE, Shard, question_list_fingerprint
from engine.files import write_text_atomic
from engine.knowledge.records import Pack
from engine.llm.decoding import SAMPLING_SEED
from engine.version import VERSION, git_commit

RUN_CARD = "run_card.json"
_KINDS: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "bool": (bool,), "tuple": (list, tuple),
                                       "dict": (dict,)}
_JSON_NAMES = {str: "text", int: "a whole number", bool: "true or false", list: "a list", dict: "an object"}
SECRET_OPTIONS = frozenset({"api_key"})  # backend options a card never holds
LIBRARIES = ("torch", "transformers", "numpy", "chromadb", "langchain_core", "openai", "llama_cpp")


@dataclass(frozen=True)
class RunCard:
    """One evaluation (or one shard of it, or shards merged): code, data, methods, model and questions."""

    version: str  # ragscope's (engine.version.VERSION)
    commit: str  # the git commit of the checkout; "" when not run from one
    pack: str  # the pack's name
    pack_path: str
    pack_fingerprint: str  # Pack.fingerprint: a hash of the documents
    pack_questions: int  # how many questions the pack has (all, before --type/--limit)
    methods: tuple[str, ...]
    params: dict[str, dict[str, Any]]  # method → every Params field as used (defaults + -p)
    policy: dict[str, Any]  # the answer policy (engine.params.AnswerPolicy) as used
    backend: str
    model: str
    backend_options: dict[str, str]  # quantization, device, dtype, base_url … (never the api key)
    embedder: str  # the dense retriever's encoder (Settings.embedder; "" = the default)
    seed: int  # the seed of sampled decoding (engine.llm.decoding); greedy decoding does not sample
    judge: bool  # whether an LLM judge re-graded answers (eval --judge)
    questions: tuple[str, ...]  # the question ids asked, in order (this shard's, or all merged)
    question_list: str  # fingerprint of the ordered ids before sharding (engine.evaluation.shards)
    question_total: int  # how many questions before sharding
    shard: str  # "2/3"; "1/1" for a whole run; "merged from 1/3, 2/3, 3/3" for a merge-evals report
    missing_shards: tuple[str, ...] = ()  # merge-evals --partial: the shards left out
    # the command line as parsed (no api key); for a merged report, the one whole run that would write it
    command: tuple[str, ...] = ()
    started: str = ""  # UTC, ISO 8601
    finished: str = ""
    libraries: dict[str, str] = field(default_factory=dict)  # python, and those already imported

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = RUN_CARD) -> RunCard:
        """A card read back; unknown keys (a newer ragscope's) are ignored, a missing required one is named."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in data:
                value, kind = data[f.name], _KINDS[f.type.partition("[")[0]]
                if not isinstance(value, kind) or isinstance(value, bool) and bool not in kind:
                    raise RagscopeError(f"{where}: {f.name} is {json.dumps(value)[:60]}, not {_JSON_NAMES[kind[0]]}; "
                                        "not a run card ragscope wrote")
                values[f.name] = tuple(value) if isinstance(value, list) else value
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RagscopeError(f"{where}: no {f.name!r}; not a run card ragscope wrote")
        return cls(**values)

    def write(self, folder: Path) -> Path:
        path = folder / RUN_CARD
        write_text_atomic(path, self.to_json())
        return path


def read_run_card(data: Mapping[str, Any] | None, where: str) -> RunCard:
    """SavedEvaluation.card as a RunCard; a report without one (written before run cards) is an error here."""
    if data is None:
        raise RagscopeError(f"{where}: no {RUN_CARD}; the report predates run cards, so what produced it is "
                            "unknown: evaluate again with this version")
    if not isinstance(data, Mapping):
        raise RagscopeError(f"{where}/{RUN_CARD}: not a JSON object")
    return RunCard.from_dict(data, f"{where}/{RUN_CARD}")


def resolved_params(methods: Sequence[str], given: Mapping[str, Mapping[str, Any]]
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(method → all its Params fields, the answer policy): engine.app.evaluations.method_params' choice (only
    the names given, already checked) laid over the defaults."""
    from engine.methods.base import get_method
    from engine.params import AnswerPolicy, param_specs

    policy_names = {s.name for s in param_specs(AnswerPolicy)}
    params, policy = {}, AnswerPolicy()
    for method in methods:
        mine = dict(given.get(method, {}))
        own = {n: v for n, v in mine.items() if n not in policy_names}
        params[method] = _plain(dataclasses.asdict(dataclasses.replace(get_method(method).Params(), **own)))
        policy = dataclasses.replace(AnswerPolicy(), **{n: v for n, v in mine.items() if n in policy_names}) \
            if any(n in policy_names for n in mine) else policy
    return params, _plain(dataclasses.asdict(policy))


def make_run_card(*, pack: Pack, backend: str, backend_options: Mapping[str, Any], embedder: str,
                  methods: Sequence[str], params: Mapping[str, Mapping[str, Any]], judge: bool,
                  all_question_ids: Sequence[str], shard: Shard = WHOLE, command: Sequence[str] = (),
                  started: str = "", finished: str = "") -> RunCard:
    """The card of an evaluation asking `shard`'s share of `all_question_ids` (the list after --type/--limit)."""
    options = {k: str(v) for k, v in sorted(backend_options.items()) if k not in SECRET_OPTIONS and k != "model"}
    resolved, policy = resolved_params(methods, params)
    return RunCard(
        version=VERSION, commit=git_commit(), pack=pack.info.name, pack_path=str(pack.path or ""),
        pack_fingerprint=pack.fingerprint, pack_questions=len(pack.questions), methods=tuple(methods),
        params=resolved, policy=policy, backend=backend, model=str(backend_options.get("model", "")),
        backend_options=options, embedder=embedder, seed=SAMPLING_SEED, judge=judge,
        questions=tuple(shard.take(list(all_question_ids))), question_list=question_list_fingerprint(all_question_ids),
        question_total=len(all_question_ids), shard=str(shard), command=tuple(command), started=started,
        finished=finished, libraries=library_versions())


def library_versions() -> dict[str, str]:
    """Python's version and those of the libraries this process has already imported (never imports one)."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None) if module is not None else None
        if isinstance(version, str):
            found[name] = version
    return found


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _plain(value: Any) -> Any:
    """JSON's own types, as the card reads back (tuples become lists), so a written card equals a read one."""
    return json.loads(json.dumps(value, default=str))
