"""A private RAGSCOPE_HOME whose plugins load afresh, and a registry put back as it was afterwards."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from paths import ROOT

EXAMPLE = ROOT / "examples" / "methods" / "keyword_rerank"  # the README's example folder, loaded as it is


@pytest.fixture()
def plugin_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home with an empty methods/ folder; the loader forgets what it loaded before this test."""
    from engine.methods import base, plugins

    home = tmp_path / "home"
    (home / "methods").mkdir(parents=True)
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    monkeypatch.setattr(plugins, "_loaded", None)
    registered = dict(base.METHODS)
    modules = set(sys.modules)
    yield home
    base.METHODS.clear()
    base.METHODS.update(registered)
    for name in set(sys.modules) - modules:
        if name.startswith(plugins.MODULE_PREFIX):
            del sys.modules[name]


def write_plugin(home: Path, name: str, code: str) -> Path:
    path = home / "methods" / name
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    _forget_loaded()
    return path


def add_example(home: Path) -> Path:
    path = Path(shutil.copytree(EXAMPLE, home / "methods" / EXAMPLE.name, ignore=shutil.ignore_patterns("__pycache__")))
    _forget_loaded()
    return path


def _forget_loaded() -> None:
    """A plugin added after the fixture set up is seen by the next listing: a thread an earlier test left running
    (an app's warm-up lists the methods) may have loaded this home's methods/ while it was still empty. Taken under
    the loader's lock, so a load in progress finishes first."""
    from engine.methods import plugins

    with plugins._lock:
        plugins._loaded = None
