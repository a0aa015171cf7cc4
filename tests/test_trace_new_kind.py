"""A new step kind is its dataclass and nothing else: the text view, the tour's story, the OpenInference export,
the JSON round-trip and the UI's dispatch all fall back on its fields (DESIGN §1, issue 24)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from streamlit.testing.v1 import AppTest

from components.captions import STEP_CAPTIONS, round_story
from engine.export.openinference import trace_spans
from engine.textview import format_step
from engine.trace import STEP_TYPES, Hit, Step, Trace, UnknownStep


@dataclass(frozen=True, kw_only=True)
class ProbeStep(Step):
    """A kind no front end has heard of: what a method's new step looks like before anyone draws it."""

    kind: ClassVar[str] = "probe_reading"
    reading: float
    note: str = ""
    hits: tuple[Hit, ...] = ()
    labels: tuple[str, ...] = ()


HIT = Hit(doc_id="d1", chunk_id="d1#0", title="Doc <1>", text="some text", score=0.5, rank=1)
PROBE = ProbeStep(iteration=2, title="Probe **read**", elapsed_ms=3.0, reading=0.75, note="from   the\nsensor",
                  hits=(HIT,), labels=("a", "b"))


def _trace(*steps: Step) -> Trace:
    return Trace(id="t1", question="q?", method="m", backend="offline", model="", pack="p",
                 started="2026-01-02T03:04:05+00:00").with_steps(steps, 3.0)


def test_the_text_view_prints_a_new_kinds_fields_one_per_line():
    assert format_step(PROBE).splitlines() == [
        "[2] probe_reading Probe **read**  (3 ms)",
        "    reading: 0.75",
        "    note: from the sensor",
        '    hits: [{"doc_id": "d1", "chunk_id": "d1#0", "title": "Doc <1>", "text": "some text", "score": 0.5, '
        '"rank"…',  # clipped to 100 characters like every other line
        '    labels: ["a", "b"]',
    ]


def test_the_tour_story_names_a_new_kind_by_its_title_escaped_and_once_per_round():
    plain = ProbeStep(reading=0.1)
    story = round_story([PROBE, plain, ProbeStep(reading=0.2, title="second")])
    assert story == ["The method also recorded “Probe \\*\\*read\\*\\*”; the details show what it holds."]
    assert round_story([plain]) == ["The method also recorded “probe reading”; the details show what it holds."]
    assert not set(story) & set(STEP_CAPTIONS.values())


def test_the_openinference_export_gives_a_new_kind_a_chain_span_with_its_payload():
    _, span = trace_spans(_trace(PROBE))
    assert (span.name, span.kind, span.status) == ("Probe **read**", "CHAIN", "OK")
    payload = json.loads(span.attributes["output.value"])
    assert payload == {"reading": 0.75, "note": "from   the\nsensor", "labels": ["a", "b"],
                       "hits": [{"doc_id": "d1", "chunk_id": "d1#0", "title": "Doc <1>", "text": "some text",
                                 "score": 0.5, "rank": 1, "retriever": "", "provenance": ""}]}
    assert json.loads(span.attributes["metadata"]) == {"kind": "probe_reading", "iteration": 2, "elapsed_ms": 3.0}


def test_a_new_kind_round_trips_through_json_once_listed_in_step_types(monkeypatch):
    monkeypatch.setitem(STEP_TYPES, ProbeStep.kind, ProbeStep)  # what adding it to engine.trace amounts to
    trace = _trace(PROBE)
    again = Trace.from_json(trace.to_json())
    assert again == trace and again.steps[0] == PROBE
    assert again.to_json() == trace.to_json()


def test_a_new_kind_read_by_a_version_without_it_keeps_its_name_in_every_view():
    (saved,) = Trace.from_json(_trace(PROBE).to_json()).steps
    assert isinstance(saved, UnknownStep) and saved.original_kind == "probe_reading"
    assert format_step(saved) == format_step(PROBE)
    assert round_story([saved]) == round_story([PROBE])
    assert trace_spans(_trace(saved))[1].attributes == trace_spans(_trace(PROBE))[1].attributes


def _page() -> None:
    """Run by AppTest as a script: the new kind, the same step as a version without the kind reads it, and
    fields the generic view shows as a line, a table and JSON."""
    from dataclasses import replace

    from components.steps import render_step
    from engine.trace import Trace
    from test_trace_new_kind import PROBE  # a script sees no names of this module: it imports them

    probe = replace(PROBE, note="<script>x</script>")
    render_step(probe, key="new")
    trace = Trace(id="t", question="q", method="m", backend="b", model="", pack="p", steps=(probe,))
    render_step(Trace.from_json(trace.to_json()).steps[0], key="saved")


def test_the_ui_draws_a_new_kind_from_its_fields_and_as_saved():
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    assert [e.label for e in at.expander] == [
        "probe\\_reading: Probe \\*\\*read\\*\\*",
        "probe\\_reading: Probe \\*\\*read\\*\\* (shown as saved: this version cannot draw it)"]
    for expander in at.expander:
        assert [m.value for m in expander.markdown] == [
            "**reading:** 0\\.75", "**note:** &lt;script&gt;x&lt;/script&gt;", "**hits**", "**labels**"]
        (table,) = expander.dataframe
        assert table.value.to_dict("records") == [{"doc_id": "d1", "chunk_id": "d1#0", "title": "Doc <1>",
                                                   "text": "some text", "score": 0.5, "rank": 1, "retriever": "",
                                                   "provenance": ""}]
        assert [json.loads(j.value) for j in expander.json] == [["a", "b"]]
