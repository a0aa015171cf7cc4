"""The Models page in-process (AppTest): backend states, loading the tiny model, a test prompt, servers."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from components.safe import WORD_JOINER
from fake_chat_server import Reply, closed_port, serving

PAGE = "views/models.py"
MODEL_LIST = {"object": "list", "data": [{"id": "tiny-chat", "object": "model"}, {"id": "other", "object": "model"}]}


@pytest.fixture()
def models(open_app, settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback traffic must never go through a proxy
    from engine.llm.hf import unload_hf_model

    settings.backends_file.unlink(missing_ok=True)  # servers set up are kept on disk: start each test with none
    unload_hf_model()  # one model per process: a model an earlier test left loaded is not this page's state
    yield open_app(PAGE, timeout=180)
    unload_hf_model()  # one model per process: never leave it to the next test
    settings.backends_file.unlink(missing_ok=True)


def _plain(markdown: str) -> str:
    """Page text as a user reads it: md_text's backslash escapes and invisible word joiners removed."""
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")


def _configs(at: AppTest) -> dict:
    return at.session_state["app.backend_configs"] if "app.backend_configs" in at.session_state else {}


def test_the_page_shows_every_backend_and_its_state(models):
    assert not models.exception
    badges = " ".join(m.value for m in models.markdown)
    assert "**offline**" in badges
    assert any("Load a model below" in c.value for c in models.caption)
    assert any("Set a server up below" in c.value for c in models.caption)


def test_loading_the_tiny_model_on_cpu_offers_it_and_answers_a_prompt(models, tiny_llama):
    at = models
    at.text_input(key="models.hf_path").input(str(tiny_llama))
    at.selectbox(key="models.quantization").set_value("none")
    at.selectbox(key="models.device").set_value("cpu")
    at.selectbox(key="models.dtype").set_value("fp32")
    at.button[0].click()  # the form's Load button
    at = at.run()
    assert not at.exception
    assert not at.error
    assert any("Loaded" in s.value for s in at.success)
    config = _configs(at)["hf"]
    assert config.label.startswith("hf: ") and "(fp32)" in config.label
    assert dict(config.options)["dtype"] == "fp32"
    assert dict(config.options)["model"] == str(tiny_llama)
    assert dict(config.options)["device"] == "cpu"

    at.text_area(key="models.prompt").input("Where was Marie Curie born?")
    at.slider(key="models.max_new_tokens").set_value(5)
    next(b for b in at.button if b.label == "Generate").click()
    at = at.run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Tokens in"]) > 0 and 1 <= int(metrics["Tokens out"]) <= 5
    assert metrics["Latency"].endswith(" ms")

    at.button(key="models.unload").click()
    at = at.run()
    assert "hf" not in _configs(at)
    assert any("unloaded" in s.value for s in at.success)


def test_a_loaded_model_gets_the_train_r2ag_command_for_the_chosen_pack(models, tiny_llama, ragscope_home):
    import shlex

    at = models
    assert not any(h.value == "R2AG" for h in at.subheader)  # no model loaded: nothing to train for
    at.text_input(key="models.hf_path").input(str(tiny_llama))
    at.selectbox(key="models.quantization").set_value("none")
    at.selectbox(key="models.device").set_value("cpu")
    at.button[0].click()
    at = at.run()
    assert not at.exception and not at.error
    assert any(h.value == "R2AG" for h in at.subheader)
    pack = ragscope_home / "packs" / "mini"
    expected = shlex.join(["python", "-m", "engine", "train-r2ag", "--pack", str(pack), "--backend", "hf",
                           "--model", str(tiny_llama), "--quantization", "none", "--device", "cpu"])
    assert [c.value for c in at.code] == [expected]
    assert any("only re-ranks" in c.value for c in at.caption)


def test_4bit_on_the_cpu_is_refused_with_the_reason_and_nothing_is_offered(models, tiny_llama):
    at = models
    at.text_input(key="models.hf_path").input(str(tiny_llama))
    at.selectbox(key="models.quantization").set_value("nf4")
    at.selectbox(key="models.device").set_value("cpu")
    at.button[0].click()
    at = at.run()
    assert not at.exception
    assert any("CUDA only" in e.value and "bf16" in e.value for e in at.error)
    assert "hf" not in _configs(at)


@pytest.mark.llm
def test_a_gguf_file_loads_from_the_page_and_answers(models, real_gguf):
    """What users of llama.cpp / Ollama / LM Studio have on disk: a real model's .gguf file."""
    at = models
    at.text_input(key="models.hf_path").input(str(real_gguf))
    at.selectbox(key="models.device").set_value("cpu")
    at.button[0].click()
    at = at.run()
    assert not at.exception and not at.error
    config = _configs(at)["hf"]
    assert real_gguf.name in config.label
    at.text_area(key="models.prompt").input("What is the capital of France? Answer in one word.")
    at.slider(key="models.max_new_tokens").set_value(8)
    next(b for b in at.button if b.label == "Generate").click()
    at = at.run()
    assert not at.exception and not at.error
    assert 1 <= int({m.label: m.value for m in at.metric}["Tokens out"]) <= 8


def test_a_missing_model_folder_is_a_clear_error_and_the_page_stays_up(models, tmp_path):
    at = models
    at.text_input(key="models.hf_path").input(str(tmp_path / "no-such-model"))
    at.button[0].click()
    at = at.run()
    assert not at.exception
    assert "not found" in _plain(at.error[0].value)
    assert "hf" not in _configs(at)


def _server_form(at: AppTest, url: str, model: str, button: str) -> AppTest:
    at.text_input(key="models.base_url").input(url)
    at.text_input(key="models.server_model").input(model)
    next(b for b in at.button if b.label == button).click()
    return at.run()


def test_checking_a_closed_port_shows_why_it_failed(models):
    at = _server_form(models, closed_port(), "tiny-chat", "Check connection")
    assert not at.exception
    assert "cannot reach" in at.error[0].value and "connection refused" in at.error[0].value


def test_checking_a_live_server_lists_its_models_and_it_can_be_used(models):
    with serving(Reply(body=MODEL_LIST)) as server:
        at = _server_form(models, server.url, "tiny-chat", "Check connection")
        assert not at.exception and not at.error
        assert any("offers 2 model(s)" in s.value for s in at.success)
        assert at.dataframe[0].value["model id"].tolist() == ["tiny-chat", "other"]
        at = _server_form(at, server.url, "tiny-chat", "Use this server")
    assert not at.exception
    config = _configs(at)["openai"]
    assert config.label == "openai: tiny-chat"
    assert dict(config.options)["base_url"] == server.url + "/v1"


def test_a_model_the_server_does_not_offer_gets_a_warning(models):
    with serving(Reply(body=MODEL_LIST)) as server:
        at = _server_form(models, server.url, "llama-9000", "Check connection")
    assert any("not among them" in _plain(w.value) for w in at.warning)


def test_without_cuda_the_gpu_check_says_what_still_works(models):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    at = models
    at.toggle(key="models.gpu").set_value(True)
    at = at.run()
    assert not at.exception
    assert any("No CUDA GPU" in i.value and "offline" in i.value for i in at.info)


def test_use_this_server_refuses_a_closed_port_and_keeps_the_server_set_up_before(models):
    with serving(Reply(body=MODEL_LIST)) as server:
        at = _server_form(models, server.url, "tiny-chat", "Use this server")
    assert _configs(at)["openai"].label == "openai: tiny-chat"
    down = closed_port()
    at = _server_form(at, down, "other", "Use this server")
    assert not at.exception
    message = _plain(at.error[0].value)
    assert message.startswith(f"Not accepted: cannot reach {down}/v1: connection refused")
    assert message.endswith("The server set up before stays in use.")
    config = _configs(at)["openai"]
    assert (config.label, dict(config.options)["base_url"]) == ("openai: tiny-chat", server.url + "/v1")


def test_use_this_server_refuses_a_model_the_server_does_not_offer(models):
    with serving(Reply(body=MODEL_LIST)) as server:
        at = _server_form(models, server.url, "llama-9000", "Use this server")
    assert not at.exception
    assert _plain(at.error[0].value) == (f"Not accepted: {server.url}/v1 answers but does not offer model "
                                         "'llama-9000'; it offers: tiny-chat, other — use one of these ids as the "
                                         "model name.")
    assert "openai" not in _configs(at)


def test_use_this_server_refuses_a_server_that_answers_with_an_http_error(models):
    with serving(Reply(status=401, body={"error": {"message": "invalid api key"}})) as server:
        at = _server_form(models, server.url, "tiny-chat", "Use this server")
        assert [r["path"] for r in server.requests] == ["/v1/models"]
    assert not at.exception
    assert "answered HTTP 401: invalid api key — check the API key" in _plain(at.error[0].value)
    assert "openai" not in _configs(at)
