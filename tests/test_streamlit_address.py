"""A plain `streamlit run` in the project listens on loopback only (issue 26, item 9): the project's
.streamlit/config.toml pins server.address, so no flag is needed to keep the workbench off the network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) of sockets listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, _remote, state = line.split()[1:4]
            address, hex_port = local.split(":")
            if state == LISTEN and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_streamlit_run_without_an_address_flag_listens_on_loopback_only(tmp_path):
    script = tmp_path / "page.py"
    script.write_text("import streamlit as st\nst.write('hi')\n")
    port = _free_port()
    env = {**os.environ, "HOME": str(tmp_path)}  # no user-wide ~/.streamlit/config.toml: the project's alone
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):  # a safety net: the server answers in about a second
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.25)
        addresses = _listening_addresses(port)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert addresses == {"0100007F"}, f"listening on {addresses} (0100007F is 127.0.0.1; 00000000 is every interface)"
