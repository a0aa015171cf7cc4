"""Offline by construction: a full index + ask works with every socket connection refused,
and neither the engine nor the app imports torch at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from paths import MINI_PACK

ROOT = Path(__file__).resolve().parent.parent

NO_NETWORK = textwrap.dedent("""
    import socket, sys
    attempts = []
    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"network disabled in this test: {address}")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = lambda address, *a, **k: refuse(None, address)
    from engine.cli import main
    codes = [main(["index", "--pack", sys.argv[1]]),
             main(["ask", "--pack", sys.argv[1], "-p", "min_confidence=0", "When was Grace Hopper born?"])]
    print("ATTEMPTS", attempts)
    sys.exit(max(codes))
""")


def _python(code: str, *args: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(RAGSCOPE_HOME=str(home), HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_index_and_ask_work_with_every_network_connection_refused(tmp_path):
    done = _python(NO_NETWORK, str(MINI_PACK), home=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "answer: 1906" in done.stdout
    assert "ATTEMPTS []" in done.stdout  # nothing even tried to connect


# What the first page and `import engine` must not pay for: torch and its users, and the LangChain graph a user's
# retriever, loader or chat model brings. Not langchain_text_splitters: langchain-core (ours, at start) imports it
# itself when it is installed (messages/utils.py), for 26 ms.
HEAVY = ("torch", "transformers", "sentence_transformers", "chromadb", "langchain", "langchain_community",
         "langchain_classic", "langchain_openai", "langgraph")


def test_importing_the_engine_and_cli_does_not_import_torch(tmp_path):
    code = ("import sys, engine, engine.cli, engine.runner, engine.methods, engine.evaluation.runner\n"
            f"heavy = [m for m in {HEAVY} if m in sys.modules]\n"
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = _python(code, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_starting_the_app_does_not_import_torch(tmp_path):
    """The first page is drawn without torch, transformers or chromadb; only the background warm-up
    thread (engine.warmup) may import them, while the page is already usable."""
    code = ("import sys, threading\nfrom streamlit.testing.v1 import AppTest\n"
            "importers = []\n"
            "class Spy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            f"        if name in {HEAVY}:\n"
            "            importers.append((name, threading.current_thread().name))\n"
            "sys.meta_path.insert(0, Spy())\n"
            "at = AppTest.from_file('app.py', default_timeout=60).run()\n"
            "assert not at.exception, at.exception\n"
            "heavy = [i for i in importers if i[1] != 'ragscope-warmup']\n"
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = _python(code, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
