"""Plugins that hang, end the process, raise KeyboardInterrupt or patch ragscope at import (issue 26 item 7): each
is tried in a child process first, named with its reason, and never imported here; the built-ins keep working.

The commands run in a subprocess with a safety timeout: a regression would hang or end pytest itself otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import plugin_probe
from engine.cli import main
from engine.methods import plugins
from engine.methods.base import get_method, method_ids
from engine.methods.plugins import load_plugins
from paths import MINI_PACK, ROOT
from plugin_home import add_example, write_plugin

BUILT_INS = ("hybrid", "r2ag", "ras", "rulerag", "tog2", "vanilla")
BAD = {  # file → what it does at import, and the reason `methods` must give
    "a_loop.py": ("while True:\n    pass\n", "did not finish importing within 1 s"),
    "b_sleep.py": ("import time\ntime.sleep(1e6)\n", "did not finish importing within 1 s"),
    "c_exit.py": ("import os\nos._exit(0)\n", "exited the process with code 0 while importing"),
    "d_interrupt.py": ("raise KeyboardInterrupt\n", "KeyboardInterrupt (line 1)"),
    "e_killed.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                    "was killed by signal SIGKILL while importing"),
    "f_patch.py": ("import engine.text\nengine.text.words = lambda text: ['patched']\n"
                   "raise RuntimeError('patched, then failed')\n", "RuntimeError: patched, then failed (line 3)"),
}


@pytest.fixture()
def bad_home(plugin_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(plugin_probe.TIMEOUT_ENV, "1")
    for name, (code, _) in BAD.items():
        write_plugin(plugin_home, name, code)
    add_example(plugin_home)
    return plugin_home


def engine_cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGSCOPE_HOME": str(home), "PYTHONPATH": str(ROOT), plugin_probe.TIMEOUT_ENV: "1"}
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)  # a safety net: a plugin that hangs the CLI fails the test


def test_methods_lists_the_built_ins_and_names_each_bad_plugin_with_its_reason(bad_home):
    done = engine_cli(bad_home, "methods")
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    listed = [line.split()[0] for line in done.stdout.splitlines() if not line.startswith(" ")]
    assert listed == [*BUILT_INS, "keyword_rerank"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: Plugin {bad_home / 'methods' / name} was not loaded: {reason}"
                      + ("; make its import fast (no loops, servers or downloads at import), or allow longer with "
                         "RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S" if "within" in reason else "")
                      for name, (_, reason) in BAD.items()]


def test_ask_with_a_built_in_answers_whatever_the_plugins_do(bad_home):
    done = engine_cli(bad_home, "ask", "--pack", str(MINI_PACK), "-p", "retriever=bm25", "-p", "min_confidence=0",
                      "When was Grace Hopper born?")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "answer: 1906" in done.stdout


def test_a_plugin_that_patches_then_fails_leaves_no_patch_in_this_process(plugin_home, monkeypatch):
    import engine.text

    words = engine.text.words
    monkeypatch.setattr(engine.text, "words", words)  # put back even if the patch got through
    code, reason = BAD["f_patch.py"]
    path = write_plugin(plugin_home, "f_patch.py", code)
    assert method_ids() == BUILT_INS
    assert [(p.source, p.message) for p in load_plugins().problems] == [(str(path), reason)]
    assert engine.text.words is words and "ragscope_user_methods.f_patch" not in sys.modules
    assert get_method("vanilla").id == "vanilla"


def test_an_empty_plugin_folder_starts_no_child_and_an_unchanged_plugin_is_probed_once(plugin_home, monkeypatch):
    children: list[list[str]] = []
    real = plugin_probe._one_child
    monkeypatch.setattr(plugin_probe, "_one_child",
                        lambda check, candidates, timeout: children.append([c.source for c in candidates])
                        or real(check, candidates, timeout))
    assert method_ids() == BUILT_INS and children == []
    path = write_plugin(plugin_home, "mine.py", "raise RuntimeError('no')\n")
    assert [p.message for p in load_plugins().problems] == ["RuntimeError: no (line 1)"]
    monkeypatch.setattr(plugins, "_loaded", None)  # listed afresh: the file is unchanged, its verdict is known
    assert [p.message for p in load_plugins().problems] == ["RuntimeError: no (line 1)"]
    assert children == [[str(path)]]
    write_plugin(plugin_home, "mine.py", "raise RuntimeError('no!')\n")  # changed: probed again
    assert [p.message for p in load_plugins().problems] == ["RuntimeError: no! (line 1)"]
    assert children == [[str(path)], [str(path)]]


def test_a_plugins_own_prints_cannot_forge_the_probes_report_nor_reach_our_stdout(plugin_home, capsys):
    write_plugin(plugin_home, "noisy.py", 'print(\'{"index": 0, "verdict": null}\')\nraise RuntimeError("no")\n')
    assert [p.message for p in load_plugins().problems] == ["RuntimeError: no (line 2)"]
    assert main(["methods"]) == 2
    assert '"verdict"' not in capsys.readouterr().out  # a failed plugin ran in the probe's child only
