"""`python -m engine export-traces`: eval's traces.jsonl → spans.jsonl and/or an OTLP receiver; bad input exits 2."""

from __future__ import annotations

import json
import socket

import pytest

from engine.cli import main
from otlp_receiver import receiving
from paths import MINI_PACK


@pytest.fixture(scope="module")
def eval_traces(ragscope_home, tmp_path_factory):
    """traces.jsonl exactly as `eval --out` writes it: two questions, two methods."""
    out = tmp_path_factory.mktemp("eval") / "report"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,rulerag", "--limit", "2",
                 "--out", str(out)]) == 0
    return out / "traces.jsonl"


def test_export_writes_one_span_per_line_and_the_same_file_every_time(eval_traces, tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (first, second):
        assert main(["export-traces", str(eval_traces), "--format", "openinference", "--out", str(out)]) == 0
    spans = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    roots = [s for s in spans if s["parent_id"] is None]
    assert len(roots) == 4 and {r["attributes"]["openinference.span.kind"] for r in roots} == {"CHAIN"}
    assert {s["parent_id"] for s in spans} - {None} == {r["context"]["span_id"] for r in roots}
    assert f"wrote {len(spans)} spans of 4 traces" in capsys.readouterr().out
    assert first.read_bytes() == second.read_bytes()


def test_export_sends_to_an_otlp_receiver(eval_traces, tmp_path, capsys):
    with receiving() as receiver:
        assert main(["export-traces", str(eval_traces), "--out", str(tmp_path / "s.jsonl"),
                     "--otlp-endpoint", receiver.url, "--project", "eval-run", "--session", "s9"]) == 0
    written = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [s.span_id for s in receiver.spans] == [s["context"]["span_id"] for s in written]
    assert {s.resource["openinference.project.name"] for s in receiver.spans} == {"eval-run"}
    assert {s.attributes.get("session.id") for s in receiver.spans if s.parent_id is None} == {"s9"}
    assert f"sent {len(written)} spans of 4 traces to {receiver.url}/v1/traces" in capsys.readouterr().out


def test_a_malformed_line_exits_2_naming_it_and_writes_nothing(eval_traces, tmp_path, capsys):
    lines = eval_traces.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "traces.jsonl"
    broken.write_text("\n".join([lines[0], lines[1][:-1], *lines[2:]]) + "\n", encoding="utf-8")
    assert main(["export-traces", str(broken), "--out", str(tmp_path / "spans.jsonl")]) == 2
    assert f"error: {broken}:2: not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "spans.jsonl").exists()


def test_an_unreachable_endpoint_exits_2_with_the_reason(eval_traces, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["export-traces", str(eval_traces), "--otlp-endpoint", f"http://127.0.0.1:{port}",
                 "--timeout", "1"]) == 2
    err = capsys.readouterr().err
    assert f"error: could not send spans to http://127.0.0.1:{port}/v1/traces" in err and "Connection refused" in err


@pytest.mark.parametrize("argv, message", [
    (["missing.jsonl"], "needs --out FILE, --otlp-endpoint URL, or both"),
    (["missing.jsonl", "--otlp-endpoint", "localhost:6006"], "must start with http:// or https://"),
    (["missing.jsonl", "--otlp-endpoint", "http://127.0.0.1:6006", "--timeout", "0"], "--timeout 0.0"),
    (["missing.jsonl", "--otlp-endpoint", "http://127.0.0.1:6006", "--timeout", "nan"], "--timeout nan"),
    (["missing.jsonl", "--otlp-endpoint", "http://[::1"], "is not a URL (Invalid IPv6 URL)"),
    (["missing.jsonl", "--otlp-endpoint", "http://127.0.0.1:99999"], "is not a URL (Port out of range"),
    (["missing.jsonl", "--out", "spans.jsonl", "--project", " "], "--project is empty"),
    (["missing.jsonl", "--out", "."], "is a folder, not a file"),
    ([".", "--out", "spans.jsonl"], "Is a directory"),
    (["missing.jsonl", "--out", "spans.jsonl"], "No such file or directory"),
])
def test_careless_arguments_exit_2_before_anything_is_read_or_sent(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["export-traces", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "spans.jsonl").exists()


def test_a_redirecting_endpoint_exits_2_and_says_nothing_was_sent(eval_traces, capsys):
    with receiving() as other, receiving(status=307, location=other.url + "/v1/traces") as receiver:
        assert main(["export-traces", str(eval_traces), "--otlp-endpoint", receiver.url, "--timeout", "1"]) == 2
    out, err = capsys.readouterr()
    assert "sent" not in out and other.paths == []
    assert f"redirected to {other.url}/v1/traces (HTTP 307); ragscope does not follow redirects" in err
