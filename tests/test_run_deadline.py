"""A run's wall-clock limit (issue 26 item 7): AnswerPolicy.timeout_s, `-p timeout_s=` / `--timeout`, the app's box;
a run past it ends with a time-limit error and a refusal, keeping its steps, and a method that never comes back
is left behind by whoever waits for it."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

import pytest

from engine import runner
from engine.cli import main
from engine.errors import RagscopeError, RunCancelled
from engine.methods.base import METHODS, Deadline, Method, RunContext, register
from engine.params import AnswerPolicy, param_specs, split_policy
from engine.trace import AnswerStep, DecisionStep, ErrorStep, Trace
from paths import MINI_PACK, ROOT
from plugin_home import write_plugin

QUESTION = "When was Grace Hopper born?"
RELEASE = threading.Event()  # lets the blocked method go on once its watcher has given up on it


@dataclass(frozen=True)
class NoParams:
    pass


class Forever(Method):
    id, label, description, Params = "forever", "Forever", "a step every 20 ms, never an answer", NoParams

    def run(self, question, ctx):
        for n in itertools.count(1):
            threading.Event().wait(0.02)
            yield DecisionStep(iteration=n, title=f"Round {n}", action="go")


class Blocked(Method):
    id, label, description, Params = "blocked", "Blocked", "one step, then a wait that ignores the limit", NoParams

    def run(self, question, ctx):
        yield DecisionStep(iteration=1, title="Begun", action="begin")
        RELEASE.wait(60)  # e.g. a call to a server that never answers
        yield DecisionStep(iteration=2, title="Late", action="go")


@pytest.fixture()
def registered():
    RELEASE.clear()
    before = dict(METHODS)
    register(Forever)
    register(Blocked)
    yield
    METHODS.clear()
    METHODS.update(before)


def test_a_run_past_its_time_limit_stops_with_an_error_and_a_refusal_keeping_its_steps(registered, mini_workbench):
    trace = mini_workbench.ask(QUESTION, "forever", policy=AnswerPolicy(timeout_s=0.2))
    *rounds, error, answer = trace.steps
    assert rounds and all(isinstance(s, DecisionStep) for s in rounds)
    assert isinstance(error, ErrorStep) and not error.recoverable and not error.backend_failure
    assert error.message == "stopped: time limit of 0.2 s reached; the steps so far are kept"
    assert isinstance(answer, AnswerStep) and answer.refused and trace.answer is answer
    assert Trace.from_json(trace.to_json()).policy == AnswerPolicy(timeout_s=0.2)


def test_cli_ask_with_a_time_limit_exits_non_zero_saying_so(registered, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "forever", "--timeout", "0.5", QUESTION]) == 2
    out, err = capsys.readouterr()
    assert "[1] decision      Round 1" in out and "Time limit reached: run stopped" in out
    assert "Refused: the run reached its time limit" in out
    assert err.endswith("error: the run failed: stopped: time limit of 0.5 s reached; the steps so far are kept\n")
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "forever", "-p", "timeout_s=0.5", QUESTION]) == 2


def test_a_watcher_gives_up_on_a_method_stuck_past_the_limit_and_its_late_steps_are_dropped(
        registered, mini_workbench, monkeypatch):
    monkeypatch.setattr(runner, "DEADLINE_GRACE_S", 0.1)
    saved: list[Trace] = []
    run = mini_workbench.start(QUESTION, "blocked", policy=AnswerPolicy(timeout_s=0.1))
    run.start(on_end=saved.append)
    try:
        steps = [s for s in run.live() if not isinstance(s, runner.Partial)]
    finally:
        RELEASE.set()
    worker = next(t for t in threading.enumerate() if t.name == f"run-{run.head.id}")
    worker.join(30)  # it came back, found the run ended, and stopped: no "Late" step, no second save
    assert [s.title for s in steps] == ["Begun", "Time limit reached: run stopped",
                                        "Refused: the run reached its time limit"]
    assert "did not stop (it neither yields a step nor calls ctx.check()" in steps[1].message
    assert run.finished and [t.steps for t in saved] == [tuple(steps)] and run.trace.steps == tuple(steps)
    assert run.ctx.cancel.is_set()


def test_ask_stops_waiting_for_a_method_that_never_yields_again(tmp_path):
    """In a subprocess: the stuck thread spins until the process exits (a safety timeout bounds the test)."""
    home = tmp_path / "home"
    (home / "methods").mkdir(parents=True)
    write_plugin(home, "spin.py", """
        from dataclasses import dataclass
        from engine.methods import Method, register
        from engine.trace import DecisionStep

        @dataclass(frozen=True)
        class Params:
            pass

        @register
        class Spin(Method):
            id, label, description, Params = "spin", "Spin", "one step, then a loop", Params

            def run(self, question, ctx):
                yield DecisionStep(iteration=1, title="Begun", action="begin")
                while True:
                    pass
    """)
    env = {**os.environ, "RAGSCOPE_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "engine", "ask", "--pack", str(MINI_PACK), "--method", "spin",
                           "--timeout", "1", QUESTION], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "[1] decision      Begun" in done.stdout
    assert "[1] error         Time limit reached: run stopped" in done.stdout
    assert done.stderr.splitlines()[-1] == (
        "error: the run failed: stopped: time limit of 1 s reached; the method did not stop (it neither yields a step "
        "nor calls ctx.check() while it works), so it was left running in the background; the steps so far are kept")


def test_a_methods_own_check_raises_once_the_limit_passed():
    ctx = RunContext(pack=None, retrieval=None, tools=None, params=None, deadline=Deadline(0))
    ctx.check()  # not started: a run set up but not yet going has used none of its time
    ctx.deadline.start()
    with pytest.raises(RunCancelled, match=r"^time limit of 0 s reached$"):
        ctx.check()
    RunContext(pack=None, retrieval=None, tools=None, params=None).check()  # no limit: never


def test_the_time_limit_is_part_of_the_runs_policy_and_older_traces_load():
    assert split_policy({"k": "3", "timeout_s": "2.5"}) == ({"k": "3"}, AnswerPolicy(timeout_s=2.5))
    assert split_policy({"timeout_s": "none"}) == ({}, AnswerPolicy())
    assert split_policy({"timeout_s": ""}) == ({}, AnswerPolicy())
    with pytest.raises(RagscopeError, match=r"^parameter timeout_s=0\.0 outside \[0\.1, 86400\.0\]; or none"):
        split_policy({"timeout_s": "0"})
    with pytest.raises(RagscopeError, match=r"^parameter timeout_s='soon' is not a number; allowed: .* or none$"):
        split_policy({"timeout_s": "soon"})
    old = Trace(id="t", question="q", method="vanilla", backend="offline", model="", pack="p").to_dict()
    old["policy"] = {"min_confidence": 0.3}  # saved before issue 26
    assert Trace.from_dict(old).policy == AnswerPolicy(min_confidence=0.3, timeout_s=None)
    assert [s.name for s in param_specs(AnswerPolicy)] == ["min_confidence", "timeout_s"]


def test_methods_lists_the_time_limit_with_every_method(capsys):
    main(["methods"])
    assert "-p k=5 retriever=hybrid min_confidence=0.5 timeout_s=none" in capsys.readouterr().out


def test_the_app_shows_the_time_limit_as_a_box_left_empty_for_none():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import streamlit as st

        from components.params import param_inputs
        from engine.params import AnswerPolicy, build_params, param_specs

        st.write(repr(build_params(AnswerPolicy, param_inputs(param_specs(AnswerPolicy), key="p"))))

    at = AppTest.from_function(page).run()
    assert not at.exception and at.markdown[0].value == "AnswerPolicy(min_confidence=0.5, timeout_s=None)"
    at.number_input(key="p.timeout_s").set_value(30.0).run()
    assert at.markdown[0].value == "AnswerPolicy(min_confidence=0.5, timeout_s=30.0)"


def test_a_recorded_policy_refills_the_box_none_included():
    from components.params import widget_values

    specs = param_specs(AnswerPolicy)
    assert widget_values(specs, {"min_confidence": 0.4, "timeout_s": None}, key="p") == {
        "p.min_confidence": 0.4, "p.timeout_s": None}
    assert widget_values(specs, {"timeout_s": 12}, key="p") == {"p.timeout_s": 12.0}
