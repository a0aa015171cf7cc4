"""Users' retrievers that hang, end the process or patch ragscope at import (issue 26 item 7): tried in a child
process first, like the methods' plugins, and left out with the reason; the built-ins stay.

Listing runs in a subprocess with a safety timeout: a regression would hang or end pytest itself otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine import plugin_probe
from paths import ROOT

GOOD = "def make_retriever(inputs):\n    return inputs.builtin('bm25')\n"
LISTING = """
import json, sys
import engine.text
words = engine.text.words
from engine.retrieval.user import load_from
found = load_from(__import__('pathlib').Path(sys.argv[1]))
print(json.dumps({"names": found.names, "problems": [str(p) for p in found.problems],
                  "patched": engine.text.words is not words}))
"""


def run(code: str, arg: str, **env: str) -> dict:
    """`code` in a fresh Python with a 1 s import limit: the JSON it printed last."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), plugin_probe.TIMEOUT_ENV: "1", **env}
    done = subprocess.run([sys.executable, "-c", code, arg], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)  # a safety net: a retriever that hangs the listing fails the test
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_retrievers_that_hang_exit_or_patch_are_named_and_the_good_one_loads(tmp_path):
    folder = tmp_path / "retrievers"
    folder.mkdir()
    files = {"a_loop.py": "while True:\n    pass\n", "b_exit.py": "import os\nos._exit(3)\n",
             "c_interrupt.py": "raise KeyboardInterrupt('at import')\n",
             "d_patch.py": "import engine.text\nengine.text.words = lambda text: []\n"
                           "raise RuntimeError('then failed')\n",
             "e_good.py": GOOD}
    for name, code in files.items():
        (folder / name).write_text(code, encoding="utf-8")
    found = run(LISTING, str(folder))
    assert found["names"] == ["e_good"] and found["patched"] is False
    assert found["problems"] == [
        f"Retriever {folder / 'a_loop.py'} was not loaded: did not finish importing within 1 s; make its import fast "
        "(no loops, servers or downloads at import), or allow longer with RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S",
        f"Retriever {folder / 'b_exit.py'} was not loaded: exited the process with code 3 while importing",
        f"Retriever {folder / 'c_interrupt.py'} was not loaded: KeyboardInterrupt: at import",
        f"Retriever {folder / 'd_patch.py'} was not loaded: RuntimeError: then failed"]


REFERRING = """
import json, sys
from engine.errors import RetrieverError
from engine.retrieval.user import resolve
try:
    resolve(sys.argv[1])
except RetrieverError as exc:
    print(json.dumps({"error": str(exc), "imported": "stalls_at_import" in sys.modules}))
"""


def test_a_module_factory_that_hangs_at_import_is_refused_naming_it(tmp_path):
    (tmp_path / "stalls_at_import.py").write_text("import time\ntime.sleep(1e6)\ndef make(inputs): ...\n",
                                                  encoding="utf-8")
    found = run(REFERRING, "stalls_at_import:make", PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}",
                RAGSCOPE_HOME=str(tmp_path / "home"))
    assert found == {"imported": False, "error": "retriever stalls_at_import:make: did not finish importing within "
                     "1 s; make its import fast (no loops, servers or downloads at import), or allow longer with "
                     "RAGSCOPE_PLUGIN_IMPORT_TIMEOUT_S"}
