"""Export into a real Arize Phoenix on loopback, when one is installed (set RAGSCOPE_PHOENIX to its `phoenix`).

Phoenix is not in requirements.txt (about 70 more packages, and it downgrades python-dateutil and
tenacity), so this runs where someone has installed it in a venv of its own, e.g.
`python -m venv /tmp/phoenix && /tmp/phoenix/bin/pip install arize-phoenix`, then
`RAGSCOPE_PHOENIX=/tmp/phoenix/bin/phoenix pytest tests/export/test_phoenix.py`. The loopback OTLP
receiver in test_otlp.py checks the same spans in every run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from engine.cli import main
from engine.export.openinference import trace_spans

PHOENIX = os.environ.get("RAGSCOPE_PHOENIX", "")
pytestmark = pytest.mark.skipif(not PHOENIX, reason="set RAGSCOPE_PHOENIX to a `phoenix` executable to run")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.read()


@pytest.fixture()
def phoenix(tmp_path: Path):
    """`phoenix serve` on 127.0.0.1 with its own data folder, nothing fetched from outside; yields its URL."""
    port = _free_port()
    env = {**os.environ, "HOME": str(tmp_path), "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}
    log = (tmp_path / "phoenix.log").open("w")
    server = subprocess.Popen([PHOENIX, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(url + "/healthz")
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "phoenix.log").read_text()
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_phoenix_receives_every_span_with_its_kind_parent_and_documents(phoenix, method_traces, tmp_path, capsys):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in method_traces), encoding="utf-8")
    assert main(["export-traces", str(path), "--otlp-endpoint", phoenix, "--session", "phoenix-test"]) == 0
    expected = {s.span_id: s for t in method_traces for s in trace_spans(t, "phoenix-test")}
    deadline, stored = time.monotonic() + 30, {}
    while len(stored) < len(expected) and time.monotonic() < deadline:  # Phoenix writes spans in batches
        time.sleep(0.5)
        answer = json.loads(_get(f"{phoenix}/v1/projects/ragscope/spans?limit=1000"))
        stored = {s["context"]["span_id"]: s for s in answer["data"]}
    assert set(stored) == set(expected)
    for span_id, span in expected.items():
        got = stored[span_id]
        assert (got["name"], got["span_kind"], got["parent_id"]) == (span.name, span.kind, span.parent_id)
        assert got["context"]["trace_id"] == span.trace_id and got["status_code"] == span.status
        documents = [k for k in span.attributes if k.startswith("retrieval.documents.") and k.endswith(".content")]
        assert all(got["attributes"][k] == span.attributes[k] for k in documents)
    roots = [s for s in stored.values() if s["parent_id"] is None]
    assert len(roots) == len(method_traces) and {r["attributes"]["session.id"] for r in roots} == {"phoenix-test"}


def test_phoenix_reads_the_spans_jsonl_back(method_traces, tmp_path):
    """The file shape is Phoenix's own span JSON: its decoder (in Phoenix's venv, beside `phoenix`) loads every line."""
    traces, spans = tmp_path / "traces.jsonl", tmp_path / "spans.jsonl"
    traces.write_text("".join(t.to_json() + "\n" for t in method_traces), encoding="utf-8")
    assert main(["export-traces", str(traces), "--out", str(spans)]) == 0
    decode = ("import sys; from phoenix.trace.span_json_decoder import json_string_to_span as load; "
              "print(*(f'{s.context.span_id} {s.span_kind.value} {s.parent_id}' for s in map(load, open(sys.argv[1]))),"
              " sep='\\n')")
    python = Path(PHOENIX).with_name("python")
    out = subprocess.run([str(python), "-c", decode, str(spans)], capture_output=True, text=True, check=True).stdout
    expected = [f"{s.span_id} {s.kind} {s.parent_id}" for t in method_traces for s in trace_spans(t)]
    assert out.splitlines() == expected
