"""`eval` and `ask` do not pass silently when their backends fail (issue 26 item 4): exit 3, the failed runs
counted per method in metrics.json, results.csv and the table, and a resumed evaluation counts the failures of
the part asked before it was interrupted."""

from __future__ import annotations

import csv
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import BackendError
from fake_chat_server import MODEL, ChatServer, Reply, completion, serving
from paths import MINI_PACK, ROOT
from plugin_home import write_plugin
from test_cli import interrupt_after

QUESTION = "When was Grace Hopper born?"
WORKING = Reply(body=completion("1906", {"prompt_tokens": 50, "completion_tokens": 1}))
MALFORMED = Reply(body="{not json")
BROKEN = {"HTTP 500": (Reply(status=500, body={"error": {"message": "model crashed"}}), "HTTP 500: model crashed"),
          "malformed JSON": (MALFORMED, "not an OpenAI chat completion")}


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback traffic must never go through a proxy


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    """A model server that answers malformed JSON until a test sets its `replies` to something else."""
    with serving(MALFORMED) as running:
        yield running


def served(url: str, *argv: str) -> list[str]:
    return [*argv, "--pack", str(MINI_PACK), "--backend", "openai", "--base-url", url + "/v1", "--model", MODEL]


def metrics(out: Path) -> dict:
    return json.loads((out / "metrics.json").read_text(encoding="utf-8"))


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(("reply", "said"), BROKEN.values(), ids=list(BROKEN))
def test_eval_against_a_failing_model_server_exits_3_and_counts_the_run_failed(reply, said, ragscope_home, tmp_path,
                                                                              capsys):
    out = tmp_path / "eval"
    with serving(reply) as broken:
        assert main([*served(broken.url, "eval", "--limit", "1"), "--out", str(out)]) == 3
    overall = metrics(out)["vanilla"]["overall"]
    assert (overall["n"], overall["failed_runs"], overall["failed_share"], overall["em"]) == (1, 1, 1.0, 0.0)
    assert said in rows(out)[0]["backend_failure"]
    printed = capsys.readouterr()
    assert printed.out.splitlines()[1].split()[:3] == ["type", "n", "failed"]
    assert printed.out.splitlines()[2].split()[:3] == ["overall", "1", "1"]
    assert "error: 1 of 1 runs rest on a failed backend (vanilla: 1); first: reader model failed:" in printed.err
    assert said in printed.err


def test_eval_against_a_working_model_server_exits_0_with_no_failed_run(ragscope_home, tmp_path, server, capsys):
    server.replies[:] = [WORKING]
    out = tmp_path / "eval"
    assert main([*served(server.url, "eval", "--method", "vanilla,rulerag", "--limit", "2"), "--out", str(out)]) == 0
    assert [metrics(out)[m]["overall"]["failed_runs"] for m in ("vanilla", "rulerag")] == [0, 0]
    assert {row["backend_failure"] for row in rows(out)} == {""}
    assert "failed backend" not in capsys.readouterr().err


def test_ask_exits_3_when_its_answer_rests_on_a_failed_model_call_and_0_when_the_model_answers(ragscope_home, server,
                                                                                              capsys):
    assert main(served(server.url, "ask", QUESTION)) == 3
    printed = capsys.readouterr()
    assert "[1] answer" in printed.out  # the steps are still printed
    assert "error: the answer rests on a failed backend: reader model failed:" in printed.err
    server.replies[:] = [WORKING]
    assert main(served(server.url, "ask", "-p", "min_confidence=0", QUESTION)) == 0
    assert "answer: 1906" in capsys.readouterr().out


def test_ask_with_a_users_lcel_chain_exits_3_when_the_chains_model_call_failed(plugin_home, server, capsys):
    example = ROOT / "examples" / "lcel" / "lcel_stuff.py"  # the README's LCEL example: retriever | prompt | model
    write_plugin(plugin_home, example.name, example.read_text(encoding="utf-8"))
    assert main(served(server.url, "ask", "--method", "lcel_stuff", QUESTION)) == 3
    assert "error: the answer rests on a failed backend: BackendError: chat model model failed:" in \
        capsys.readouterr().err


def test_a_resumed_evaluation_counts_the_failures_of_its_first_part(ragscope_home, tmp_path, server, monkeypatch):
    argv, out = served(server.url, "eval", "--method", "vanilla,rulerag", "--limit", "3"), tmp_path / "eval"
    interrupt_after(monkeypatch, 2)
    assert main([*argv, "--out", str(out)]) == 130  # asked while the server answered malformed JSON
    journalled = (tmp_path / ".eval.journal" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    monkeypatch.undo()
    server.replies[:] = [WORKING]  # the rest is asked with the server working again
    assert main([*argv, "--out", str(out), "--resume"]) == 3
    report = metrics(out)
    assert sum(report[m]["overall"]["n"] for m in report) == 6
    assert sum(report[m]["overall"]["failed_runs"] for m in report) == len(journalled) >= 2
    assert sum(bool(row["backend_failure"]) for row in rows(out)) == len(journalled)


def test_a_vector_store_lost_mid_evaluation_is_counted_failed_not_read_as_i_dont_know(ragscope_home, tmp_path,
                                                                                      monkeypatch, capsys):
    """As when a Chroma server dies after a few answers: every later retrieval fails, and each such run ends on a
    BackendError (engine.runner marks it); the answers given before stay right."""
    from engine.retrieval.suite import Retrieval

    search, lock, searched = Retrieval.search, threading.Lock(), []

    def dies_after_two(self, *args, **kwargs):
        with lock:
            searched.append(args)
            if len(searched) > 2:
                raise BackendError("Chroma server http://127.0.0.1:8000 did not answer within 30 s")
        return search(self, *args, **kwargs)

    monkeypatch.setattr(Retrieval, "search", dies_after_two)
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--limit", "4", "-p", "min_confidence=0", "--out", str(out)]) == 3
    results = rows(out)
    assert [bool(row["backend_failure"]) for row in results] == [False, False, True, True]
    assert [row["outcome"] for row in results[:2]] == ["correct", "correct"]
    assert metrics(out)["vanilla"]["overall"]["failed_runs"] == 2
    assert ("2 of 4 runs rest on a failed backend (vanilla: 2); first: BackendError: Chroma server "
            "http://127.0.0.1:8000 did not answer") in capsys.readouterr().err


def test_eval_with_a_model_that_cannot_open_exits_2_before_asking_anything(ragscope_home, tmp_path, capsys):
    assert main(["eval", "--pack", str(MINI_PACK), "--backend", "hf", "--out", str(tmp_path / "eval")]) == 2
    assert "the hf backend needs 'model'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no journal to --resume, no report


class _JudgeDown:
    """Answers the method's reader (wrongly, so the answer goes to the judge) and fails every judge call."""

    def reply(self, body: dict | None) -> Reply:
        if body is None:
            return Reply(body={"object": "list", "data": [{"id": MODEL}]})
        if "Ground truth" in json.dumps(body["messages"]):
            return Reply(status=500, body={"error": {"message": "judge crashed"}})
        return Reply(body=completion("Answer: Atlantis\nEvidence: 1", {"prompt_tokens": 50, "completion_tokens": 5}))


def test_eval_with_a_judge_whose_calls_fail_says_so_and_exits_3(ragscope_home, tmp_path, capsys):
    """A judge that is down left every answer with its rule grade and eval exited 0, as if it had judged."""
    with serving() as server:
        server.answerer = _JudgeDown()
        assert main([*served(server.url, "eval", "--limit", "1", "--judge"), "--out", str(tmp_path / "e")]) == 3
    err = capsys.readouterr().err
    said = "error: 1 of 1 judge calls failed; those answers keep their rule-matching grade (first: judge model failed:"
    assert said in err and "judge crashed" in err
    assert metrics(tmp_path / "e")["vanilla"]["overall"]["failed_runs"] == 0  # the runs themselves worked
