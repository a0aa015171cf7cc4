"""LANGSMITH_TRACING in the environment switches on no tracing of ragscope's own LangChain calls: a run of a
built-in method (its retrievers are LangChain retrievers) starts no LangSmith run, so nothing is sent."""

from __future__ import annotations

from engine.methods.base import method_ids

QUESTION = "When was Grace Hopper born?"


def test_no_method_run_is_traced_to_langsmith_whatever_the_environment_says(mini_workbench, tracing_asked):
    for method in method_ids():
        mini_workbench.ask(QUESTION, method)
    assert tracing_asked == []
