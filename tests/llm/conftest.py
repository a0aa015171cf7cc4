"""Fixtures for backend tests: a scripted loopback chat server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_chat_server import ChatServer, closed_port, serving


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback traffic must never go through a proxy
    with serving() as script:
        yield script


@pytest.fixture
def closed_port_url() -> str:
    return closed_port()
