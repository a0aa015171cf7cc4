"""Rooms and doors (DESIGN §1, issue 24): components know only the trace and the parameter schema, and the UI as a
whole reaches the engine through a few doors — the engine/app services, the trace, parameters, errors, settings.

Imports are read from the source (ast), so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from paths import ROOT

# The trace and what is read from a trace alone (issue 28): its graph as of a round and its diff against another
# trace are pure functions of saved traces, as the trace's own properties are — no service stands behind them.
COMPONENT_ALLOWED = {"engine.trace", "engine.trace_graph", "engine.trace_diff", "engine.params"}
# Distinct engine modules app.py, ui_state.py, views/ and components/ import together: 34 before issue 24, 8 after
# (the four engine/app services, trace, params, errors, settings), 10 with issue 28's trace graph and trace diff.
# Raise it only for a module the UI truly needs that no engine/app service can offer.
UI_ENGINE_MODULES_AT_MOST = 10


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def engine_imports(path: Path) -> set[str]:
    """The engine modules a file imports; `from engine.app import runs` counts as engine.app.runs."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "engine"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "engine":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if _is_module(submodule) else node.module)
    return found


def ui_files() -> list[Path]:
    return [ROOT / "app.py", ROOT / "ui_state.py", *sorted((ROOT / "views").glob("*.py")),
            *sorted((ROOT / "components").glob("*.py"))]


def test_engine_imports_reads_every_form_of_import(tmp_path):
    source = tmp_path / "page.py"
    source.write_text("import engine.trace\nfrom engine.app import runs\nfrom engine.params import ParamSpec\n"
                      "import json\n\ndef late():\n    from engine.errors import RagscopeError\n")
    assert engine_imports(source) == {"engine.trace", "engine.app.runs", "engine.params", "engine.errors"}


def test_components_import_only_the_trace_and_the_parameter_schema():
    wrong = {f"{path.name}: {module}" for path in sorted((ROOT / "components").glob("*.py"))
             for module in engine_imports(path) - COMPONENT_ALLOWED}
    assert not wrong, f"components may import only {sorted(COMPONENT_ALLOWED)}; move the rest to engine/app " \
                      f"or pass plain data in from the page: {sorted(wrong)}"


def test_the_ui_reaches_the_engine_through_a_few_modules():
    modules = set().union(*(engine_imports(path) for path in ui_files()))
    assert len(modules) <= UI_ENGINE_MODULES_AT_MOST, sorted(modules)


def test_no_page_or_component_imports_an_engine_internal_the_app_layer_wraps():
    wrapped = ("engine.runner", "engine.runs", "engine.methods", "engine.retrieval", "engine.llm", "engine.knowledge",
               "engine.rules", "engine.graph", "engine.warmup", "engine.live", "engine.tour")
    found = {f"{path.relative_to(ROOT)}: {module}" for path in ui_files() for module in engine_imports(path)
             if module.startswith(wrapped)}
    assert not found, sorted(found)
