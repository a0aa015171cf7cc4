"""The models service: the backends a user set up survive a restart without their secrets; server entries."""

from __future__ import annotations

import stat

from engine.app import models
from engine.app.models import BackendConfig


def test_saved_backends_come_back_without_their_api_key_and_the_file_is_private(tmp_path):
    path = tmp_path / "backends.json"
    server = models.server_backend("http://127.0.0.1:9/v1", "llama3", "sk-secret")
    models.write_backends(path, {"openai": server})
    assert "sk-secret" not in path.read_text() and stat.S_IMODE(path.stat().st_mode) == 0o600
    (read,) = models.read_backends(path).values()
    assert read == BackendConfig("openai", "openai: llama3",
                                 (("base_url", "http://127.0.0.1:9/v1"), ("model", "llama3")))


def test_a_missing_or_damaged_backends_file_costs_the_list_only(tmp_path):
    assert models.read_backends(tmp_path / "none.json") == {}
    for text in ("{not json", '{"openai": {"label": 1}}', "[1, 2]", "[" * 100_000):
        (tmp_path / "bad.json").write_text(text)
        assert models.read_backends(tmp_path / "bad.json") == {}


def test_options_leave_out_empty_values_and_sort_for_a_stable_cache_key():
    assert models.options_tuple({"model": "m", "api_key": "", "device": None, "base_url": "u"}) == (
        ("base_url", "u"), ("model", "m"))


def test_a_configured_server_whose_settings_no_longer_validate_offers_no_chat_model():
    assert models.server_chat(BackendConfig("openai", "openai: x", (("base_url", ""), ("model", "x")))) is None
    assert models.server_chat(models.server_backend("http://127.0.0.1:9/v1", "x")) is not None
