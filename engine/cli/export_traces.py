"""`export-traces`: saved traces → OpenInference spans, to a file or over OTLP (Phoenix)."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command
from engine.errors import RagscopeError


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", type=Path, help="eval --out's traces.jsonl, a History export, or ask --json's output")
    parser.add_argument("--format", choices=("openinference",), default="openinference", help="span format")
    parser.add_argument("--out", type=Path, default=None, help="spans.jsonl to write, one JSON span per line")
    parser.add_argument("--otlp-endpoint", default="", metavar="URL",
                        help="send the spans over OTLP/HTTP, e.g. http://127.0.0.1:6006/v1/traces (Phoenix)")
    parser.add_argument("--project", default="ragscope", help="project Phoenix files them under (default ragscope)")
    parser.add_argument("--session", default="", help="session.id for every exported run, to group them")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to keep trying to send (default 10)")


def _run(args: argparse.Namespace) -> int:
    from engine.export.openinference import spans_jsonl, trace_spans
    from engine.export.otlp import endpoint_url, send_spans
    from engine.export.traces_file import read_traces
    from engine.files import write_text_atomic
    from engine.knowledge.writer import check_target

    if not (args.out or args.otlp_endpoint):
        raise RagscopeError("export-traces needs --out FILE, --otlp-endpoint URL, or both")
    if not 0 < args.timeout <= 600:  # also refuses nan
        raise RagscopeError(f"--timeout {args.timeout}: give the seconds to keep trying, more than 0 and at most 600")
    if not args.project.strip():
        raise RagscopeError("--project is empty; name the project the traces go to (default ragscope)")
    if args.out:
        check_target(args.out, folder=False)  # a bad target or URL fails before the file is read
    if args.otlp_endpoint:
        endpoint_url(args.otlp_endpoint)
    traces = read_traces(args.traces)
    spans = [span for trace in traces for span in trace_spans(trace, args.session)]
    if args.out:
        write_text_atomic(args.out, spans_jsonl(spans))
        print(f"wrote {len(spans)} spans of {len(traces)} traces to {args.out}")
    if args.otlp_endpoint:
        send_spans(spans, args.otlp_endpoint, project=args.project, timeout_s=args.timeout)
        print(f"sent {len(spans)} spans of {len(traces)} traces to {endpoint_url(args.otlp_endpoint)}")
    return 0


COMMAND = Command("export-traces", "traces (eval --out's traces.jsonl, a History export, ask --json) → OpenInference "
                                   "spans for Phoenix or any OpenTelemetry backend", _arguments, _run)
