"""The runs service: methods on offer, starting, saving and replaying runs the way the CLI and the pages share."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.app import runs
from engine.errors import RagscopeError
from engine.params import AnswerPolicy
from engine.trace import AnswerStep, Trace


def test_method_info_carries_the_registry_labels_and_the_params_schema():
    info = runs.method_info("vanilla")
    assert info.id == "vanilla" and info.label and info.description
    assert "k" in {spec.name for spec in info.params}
    assert "min_confidence" not in {spec.name for spec in info.params}  # the run's, in POLICY_PARAMS
    assert [spec.name for spec in runs.POLICY_PARAMS] == ["min_confidence", "timeout_s"]
    assert runs.label("not-a-method") == "not-a-method"  # a saved run of a plugin this process lacks
    with pytest.raises(RagscopeError, match="unknown method .not-a-method.; known: .*vanilla"):
        runs.method_info("not-a-method")


def test_a_pack_question_is_found_by_its_text_with_spaces_normalised(mini_pack):
    question = mini_pack.questions[0]
    assert runs.pack_question_id(mini_pack, f"  {question.question}  ".replace(" ", "  ")) == question.id
    assert runs.pack_question_id(mini_pack, "a question of my own?") == ""


def test_a_started_run_takes_the_policy_and_is_saved_when_finished(mini_workbench, tmp_path):
    store = runs.open_store(replace(mini_workbench.settings, home=tmp_path))
    run = runs.start(mini_workbench, "When was Grace Hopper born?", "vanilla", {"k": 2},
                     policy=runs.answer_policy({"min_confidence": 0.0}))
    trace = runs.finish(run, store)
    assert trace.policy == AnswerPolicy(min_confidence=0.0) and trace.params["k"] == 2
    assert store.get(trace.id) == trace


def test_an_unaskable_question_is_refused_before_any_work(mini_workbench):
    with pytest.raises(RagscopeError, match="empty"):
        runs.start(mini_workbench, "   ", "vanilla")


def test_live_runs_save_a_run_when_it_ends_and_forget_it_then(mini_workbench, tmp_path):
    live = runs.LiveRuns(runs.open_store(replace(mini_workbench.settings, home=tmp_path)))
    run = runs.start(mini_workbench, "When was Grace Hopper born?", "vanilla")
    live.launch(run)
    assert run.wait(timeout=120)
    assert live.get(run.head.id) is None and live.store.has(run.head.id)


def _traced(params: dict, policy: AnswerPolicy | None) -> Trace:
    head = Trace(id="t1", question="q?", method="vanilla", backend="offline", model="", pack="mini",
                 params=params, policy=policy)
    return head.with_steps((AnswerStep(text="a"),), 1.0)


def test_a_traces_settings_join_params_and_policy_also_for_a_trace_saved_before_the_policy():
    assert _traced({"k": 3}, AnswerPolicy(0.2)).settings() == {"k": 3, "min_confidence": 0.2, "timeout_s": None}
    assert _traced({"k": 3, "min_confidence": 0.1}, None).settings() == {"k": 3, "min_confidence": 0.1,
                                                                         "timeout_s": None}


def test_a_replayed_file_that_is_not_a_trace_names_the_file():
    with pytest.raises(RagscopeError, match="mine.json"):
        runs.replay("{not json", "mine.json")
