"""run_card.json: every field present and right for a mini-pack evaluation, the api key never written, and the
card round-trips; engine.version reads a checkout's commit from the .git files alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import RagscopeError
from engine.evaluation.run_card import RunCard, make_run_card, read_run_card, resolved_params
from engine.evaluation.shards import Shard, question_list_fingerprint
from engine.llm.decoding import SAMPLING_SEED
from engine.version import VERSION, git_commit
from paths import MINI_PACK, ROOT

SECRET = "sk-do-not-write-me"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, ragscope_home) -> Path:
    out = tmp_path_factory.mktemp("card") / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,ras", "-p", "k=3", "-p", "min_confidence=0.4",
                 "--type", "factoid,numeric,comparison,multi_hop", "--api-key", SECRET, "--out", str(out)]) == 0
    return out


def test_eval_writes_a_run_card_beside_the_metrics_with_every_field(evaluated, mini_pack):
    card = json.loads((evaluated / "run_card.json").read_text(encoding="utf-8"))
    assert set(card) == {f for f in RunCard.__dataclass_fields__}
    asked = [q.id for q in mini_pack.questions if q.type in {"factoid", "numeric", "comparison", "multi_hop"}]
    assert card["version"] == VERSION and card["commit"] == git_commit()
    assert card["pack"] == "mini" and Path(card["pack_path"]) == MINI_PACK
    assert card["pack_fingerprint"] == mini_pack.fingerprint and card["pack_questions"] == len(mini_pack.questions)
    assert card["methods"] == ["vanilla", "ras"]
    assert card["params"]["vanilla"] == {"k": 3, "retriever": "hybrid"}
    assert card["params"]["ras"]["k"] == 3 and card["params"]["ras"]["max_iterations"] == 5  # a default, resolved
    assert card["policy"] == {"min_confidence": 0.4, "timeout_s": None}
    assert card["backend"] == "offline" and card["model"] == ""
    assert card["backend_options"] == {"base_url": "", "device": "auto", "dtype": "auto", "quantization": "auto"}
    assert card["seed"] == SAMPLING_SEED and card["judge"] is False
    assert card["questions"] == asked and len(asked) < len(mini_pack.questions)
    assert card["question_list"] == question_list_fingerprint(asked) and card["question_total"] == len(asked)
    assert card["shard"] == "1/1" and card["missing_shards"] == []
    assert card["command"][:4] == ["python", "-m", "engine", "eval"]
    assert card["command"][-4:] == ["-p", "k=3", "-p", "min_confidence=0.4"]
    assert "--type" in card["command"] and "--api-key" not in card["command"]
    assert card["started"] <= card["finished"] and card["started"].endswith("+00:00")
    assert card["libraries"]["python"] == f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"


def test_the_api_key_is_never_written(evaluated):
    for path in evaluated.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8"), path.name


def test_make_run_card_leaves_the_api_key_out_and_records_the_model(mini_pack):
    card = make_run_card(pack=mini_pack, backend="openai", embedder="e5",
                         backend_options={"model": "Qwen2.5-7B", "api_key": SECRET, "base_url": "http://h:8000/v1"},
                         methods=["vanilla"], params={}, judge=True, all_question_ids=["a", "b", "c"],
                         shard=Shard(2, 2))
    assert SECRET not in card.to_json()
    assert card.model == "Qwen2.5-7B" and card.backend_options == {"base_url": "http://h:8000/v1"}
    assert card.questions == ("b",) and card.question_total == 3 and card.shard == "2/2" and card.judge


def test_a_run_card_round_trips_and_ignores_unknown_keys(evaluated):
    data = json.loads((evaluated / "run_card.json").read_text(encoding="utf-8"))
    card = RunCard.from_dict(data)
    assert card.to_dict() == data
    assert RunCard.from_dict({**data, "from_a_newer_version": 1}) == card


def test_a_card_missing_a_field_or_absent_is_a_clear_error(evaluated):
    data = json.loads((evaluated / "run_card.json").read_text(encoding="utf-8"))
    del data["pack_fingerprint"]
    with pytest.raises(RagscopeError, match="no 'pack_fingerprint'"):
        RunCard.from_dict(data)
    with pytest.raises(RagscopeError, match="no run_card.json"):
        read_run_card(None, "old-report")
    with pytest.raises(RagscopeError, match="not a JSON object"):
        read_run_card([1, 2], "odd-report")  # type: ignore[arg-type]


def test_resolved_params_are_the_defaults_with_the_given_values_over_them():
    params, policy = resolved_params(["vanilla", "tog2"], {"vanilla": {"k": 7}, "tog2": {"width": 2}})
    assert params["vanilla"] == {"k": 7, "retriever": "hybrid"}
    assert params["tog2"]["width"] == 2 and params["tog2"]["depth"] == 3
    assert policy == {"min_confidence": 0.5, "timeout_s": None}


def test_writing_a_card_never_imports_torch():
    code = ("import sys; from engine.evaluation.run_card import library_versions; v = library_versions(); "
            "assert 'torch' not in sys.modules and 'torch' not in v and 'python' in v, v")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def _repo(root: Path, head: str) -> Path:
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(head)
    return root


def test_git_commit_reads_a_loose_ref_packed_refs_a_detached_head_and_a_worktree(tmp_path):
    sha, other = "a" * 40, "b" * 40
    loose = _repo(tmp_path / "loose", "ref: refs/heads/main\n")
    (loose / ".git" / "refs" / "heads" / "main").write_text(sha + "\n")
    assert git_commit(loose) == sha
    packed = _repo(tmp_path / "packed", "ref: refs/heads/main\n")
    (packed / ".git" / "packed-refs").write_text(f"# pack-refs with: peeled\n{other} refs/heads/dev\n"
                                                 f"{sha} refs/heads/main\n")
    assert git_commit(packed) == sha
    assert git_commit(_repo(tmp_path / "detached", other + "\n")) == other
    worktree = tmp_path / "wt"
    (loose / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (loose / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/main\n")
    (loose / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {loose / '.git' / 'worktrees' / 'wt'}\n")
    assert git_commit(worktree) == sha


def test_git_commit_is_empty_outside_a_checkout_or_for_a_broken_one(tmp_path):
    assert git_commit(tmp_path) == ""
    assert git_commit(_repo(tmp_path / "nohead", "ref: refs/heads/gone\n")) == ""
    assert git_commit(_repo(tmp_path / "junk", "not a ref\n")) == ""


@pytest.mark.parametrize("field, value, message", [("methods", 5, "methods is 5, not a list"),
                                                   ("pack_questions", True, "not a whole number"),
                                                   ("params", [], "params is \\[\\], not an object"),
                                                   ("judge", 1, "judge is 1, not true or false")])
def test_a_card_field_of_the_wrong_type_is_named(evaluated, field, value, message):
    data = json.loads((evaluated / "run_card.json").read_text(encoding="utf-8"))
    with pytest.raises(RagscopeError, match=message):
        RunCard.from_dict({**data, field: value})
