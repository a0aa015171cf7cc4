"""Models: which backends are ready, load a local HF model, try a model, point at an OpenAI-compatible server or
a LangChain chat model.

torch is never imported here: loading and the GPU check go through engine.app.models, which imports it
only when the user asks (DESIGN §11).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

import ui_state
from components.safe import md_text
from engine.app import models
from engine.app.models import (
    CPU_QUANTIZATION_REASON,
    DEVICES,
    DTYPES,
    LANGCHAIN_LOST,
    NO_GPU_HINT,
    QUANTIZATIONS,
    BackendConfig,
    ChatModel,
    HfChatModel,
    HfModelConfig,
    gib,
)
from engine.errors import BackendError

PAGE = "models"
QUANTIZATION_HELP = ("auto = 4-bit NF4 with double quantization on CUDA, full precision on the CPU; "
                     "nf4 = 4-bit, int8 = 8-bit (both need bitsandbytes and a CUDA GPU), none = full precision. "
                     + CPU_QUANTIZATION_REASON[0].upper() + CPU_QUANTIZATION_REASON[1:] + ".")
DTYPE_HELP = ("Precision of unquantized weights: auto = bf16 on a GPU and on CPUs with bf16 instructions "
              "(half the memory of fp32, as fast or faster there), fp32 elsewhere.")


# ---- backends and their state --------------------------------------------------------------------


def backends() -> None:
    configs = ui_state.backend_configs()
    loaded = models.loaded_local()
    offline, hf, server, langchain = st.columns(4)
    with offline.container(border=True, height="stretch"):
        st.markdown("**offline**")
        st.badge("ready", color="green", icon=":material/check:")
        st.caption("No language model: embeddings, the pack's graph and rules, extractive reading. "
                   "Answers say plainly that no model was involved.")
    with hf.container(border=True, height="stretch"):
        st.markdown("**hf** · local transformers model")
        if loaded is None:
            st.badge("not loaded", color="gray")
            st.caption("Load a model below to offer it in the sidebar.")
        else:
            st.badge("loaded", color="green", icon=":material/check:")
            st.caption(f"{md_text(loaded.config.path)} · {loaded.precision} on {loaded.device} · attention "
                       f"capture {'on' if loaded.config.eager_attention else 'off'}"
                       + (" · offered in the sidebar" if "hf" in configs else ""))
    with server.container(border=True, height="stretch"):
        st.markdown("**openai** · OpenAI-compatible server")
        chosen = configs.get("openai")
        if chosen is None:
            st.badge("not configured", color="gray")
            st.caption("Set a server up below (vLLM, Ollama, llama.cpp server, TGI).")
        else:
            options = dict(chosen.options)
            st.badge("configured", color="green", icon=":material/check:")
            st.caption(f"{md_text(options.get('model', ''))} at {md_text(options.get('base_url', ''))} · "
                       "offered in the sidebar")
    with langchain.container(border=True, height="stretch"):
        st.markdown("**langchain** · any LangChain chat model")
        chosen = configs.get("langchain")
        if chosen is None:
            st.badge("not configured", color="gray")
        else:
            st.badge("configured", color="green", icon=":material/check:")
            st.caption(f"{md_text(dict(chosen.options).get('model', ''))} · offered in the sidebar")
        st.caption(f"What it cannot give: {LANGCHAIN_LOST}.")


# ---- local model (hf) ----------------------------------------------------------------------------


def local_model() -> None:
    st.subheader("Local model (hf)")
    with st.form(f"{PAGE}.hf"):
        path = st.text_input("Model folder, .gguf file or cached hub id", key=f"{PAGE}.hf_path",
                             placeholder="~/models/Meta-Llama-3-8B-Instruct or ~/models/model.Q4_K_M.gguf",
                             help="A folder with config.json and weights; a .gguf file as llama.cpp, Ollama or "
                                  "LM Studio keep them (converted once, then loaded in seconds); or org/name "
                                  "already in the local Hugging Face cache (nothing is downloaded).")
        left, middle, right = st.columns(3)
        quantization = left.selectbox("Quantization", QUANTIZATIONS, key=f"{PAGE}.quantization",
                                      help=QUANTIZATION_HELP)
        device = middle.selectbox("Device", DEVICES, key=f"{PAGE}.device",
                                  help="auto = cuda when a GPU is visible, else cpu")
        dtype = right.selectbox("Precision", DTYPES, key=f"{PAGE}.dtype", help=DTYPE_HELP)
        attention = st.checkbox("Attention capture", value=True, key=f"{PAGE}.attention",
                                help="Eager attention so runs can show heatmaps; a little slower than sdpa.")
        submitted = st.form_submit_button("Load", type="primary")
    if submitted:
        load(HfModelConfig(path=path.strip(), quantization=quantization, device=device, eager_attention=attention,
                           dtype=dtype))
    if models.loaded_local() is not None and st.button("Unload", key=f"{PAGE}.unload",
                                                   help="Free the model's memory (for every session)"):
        unload()


def load(config: HfModelConfig) -> None:
    if not config.path:
        st.error("Give a model folder (with config.json), a .gguf file or a hub id already in the local cache.")
        return
    ui_state.release_workbenches()  # a workbench holding the previous model would keep it in memory
    try:
        with st.spinner(f"Loading {config.path} — a large model takes a minute or two…"):
            model = models.load_local(config)
    except BackendError as exc:
        st.error(md_text(str(exc)))  # may quote a path, URL or a server's words
        return
    except Exception as exc:  # noqa: BLE001 — whatever transformers raises, the app stays up
        st.error(md_text(f"{config.path}: loading failed: {type(exc).__name__}: {exc}"))
        return
    ui_state.configure_backend(models.local_backend(model))
    ui_state.post_notice(PAGE, ui_state.Notice("success", f"Loaded **{md_text(model.model)}** on {model.device}. "
                                                          f"Pick *hf: {md_text(model.model)}* under **Model** in "
                                                          "the sidebar."))
    st.rerun()  # the sidebar lists backends when it is drawn; a rerun lets it offer this one


def unload() -> None:
    ui_state.release_workbenches()
    models.unload_local()
    ui_state.forget_backend("hf")
    ui_state.post_notice(PAGE, ui_state.Notice("success", "The local model was unloaded and its memory released."))
    st.rerun()


# ---- GPU -----------------------------------------------------------------------------------------


def gpu(model: HfChatModel | None) -> None:
    st.subheader("GPU")
    # torch is already in memory once a model is loaded; otherwise import it only when asked.
    if model is None and not st.toggle("Check the GPU", key=f"{PAGE}.gpu",
                                       help="Imports torch, which takes a few seconds the first time"):
        return
    status = models.gpu_status()
    if not status.available:
        st.info(f"No CUDA GPU here ({status.reason}). {NO_GPU_HINT}")
        return
    st.markdown(f"**{md_text(status.name)}**")
    st.progress(status.used_fraction, text=f"{gib(status.used_bytes)} of {gib(status.total_bytes)} in use "
                                           f"({gib(status.allocated_bytes)} by this app's tensors)")


# ---- method training for the loaded model ---------------------------------------------------------


def r2ag_training(model: HfChatModel | None) -> None:
    if model is None:
        return
    st.subheader("R2AG")
    try:
        pack_path = ui_state.selection().pack_path
    except KeyError:  # no sidebar selection yet: show the placeholder
        pack_path = "PACK_DIR"
    st.caption("R2AG injects its vectors only with a checkpoint trained for the loaded model; without one it "
               "only re-ranks. Run this in a terminal (it trains with the model's LM loss, a GPU helps); R2AG "
               "finds the checkpoint by itself afterwards.")
    st.code(models.train_r2ag_command(pack_path, model.config), language="bash")


# ---- try a model ---------------------------------------------------------------------------------


def chat_models(model: HfChatModel | None) -> dict[str, ChatModel]:
    """The models a test prompt can go to: the loaded local one and the configured server."""
    found: dict[str, ChatModel] = {}
    if model is not None:
        found[f"hf: {model.model}"] = model
    server = ui_state.backend_configs().get("openai")
    chat = models.server_chat(server) if server is not None else None
    if server is not None and chat is not None:
        found[server.label] = chat
    langchain = ui_state.backend_configs().get("langchain")
    lc_chat = models.langchain_model(langchain) if langchain is not None else None
    if langchain is not None and lc_chat is not None:
        found[langchain.label] = lc_chat
    return found


def try_prompt(model: HfChatModel | None) -> None:
    st.subheader("Try a model")
    models = chat_models(model)
    if not models:
        st.caption("Load a local model or set up a server to send it a test prompt.")
        return
    with st.form(f"{PAGE}.try"):
        chosen = st.selectbox("Model", list(models), key=f"{PAGE}.try_model")
        prompt = st.text_area("Test prompt", key=f"{PAGE}.prompt", height=90,
                              placeholder="In one sentence: what is retrieval-augmented generation?")
        max_new = st.slider("Max new tokens", 1, 512, 64, key=f"{PAGE}.max_new_tokens")
        sent = st.form_submit_button("Generate")
    if sent:
        generate(models[chosen], prompt, max_new)


def generate(model: ChatModel, prompt: str, max_new_tokens: int) -> None:
    if not prompt.strip():
        st.error("The prompt is empty; type something for the model to answer.")
        return
    try:
        with st.spinner("Generating…"):
            completion = models.try_prompt(model, prompt, max_new_tokens)
    except BackendError as exc:
        st.error(md_text(str(exc)))  # may quote a path, URL or a server's words
        return
    with st.container(border=True):
        # Model output is data: escaped, with its own line breaks kept.
        st.markdown(md_text(completion.text).replace("\n", "  \n") if completion.text else "*(empty output)*")
    tokens_in, tokens_out, latency, speed = st.columns(4)
    tokens_in.metric("Tokens in", completion.tokens_in)
    tokens_out.metric("Tokens out", completion.tokens_out)
    latency.metric("Latency", f"{completion.latency_ms:.0f} ms")
    seconds = completion.latency_ms / 1000
    speed.metric("Tokens/s", f"{completion.tokens_out / seconds:.1f}" if seconds > 0 else "—")


# ---- server (OpenAI-compatible) ------------------------------------------------------------------


def server() -> None:
    st.subheader("Server (OpenAI-compatible)")
    with st.form(f"{PAGE}.server"):
        base_url = st.text_input("Base URL", key=f"{PAGE}.base_url", placeholder="http://127.0.0.1:8000/v1",
                                 help="vLLM: http://host:8000/v1 · Ollama: http://host:11434/v1")
        model = st.text_input("Model", key=f"{PAGE}.server_model", placeholder="meta-llama/Meta-Llama-3-8B-Instruct",
                              help="The id the server knows the model by; Check connection lists them.")
        api_key = st.text_input("API key", key=f"{PAGE}.api_key", type="password",
                                help="Leave empty for servers that need none.")
        with st.container(horizontal=True):
            check = st.form_submit_button("Check connection")
            use = st.form_submit_button("Use this server", type="primary")
    if check:
        check_server(base_url, model.strip(), api_key)
    if use:
        use_server(base_url, model.strip(), api_key)


def check_server(base_url: str, model: str, api_key: str) -> None:
    try:
        with st.spinner("Asking the server for its models…"):
            ids = models.server_models(base_url, api_key)
    except BackendError as exc:
        st.error(md_text(str(exc)))  # may quote a path, URL or a server's words
        return
    st.success(f"The server answers and offers {len(ids)} model(s).")
    if ids:
        st.dataframe([{"model id": i} for i in ids], hide_index=True, key=f"{PAGE}.server_models")
    if model and model not in ids:
        st.warning(f"{md_text(model)} is not among them; copy one of the ids above into Model.")


def use_server(base_url: str, model: str, api_key: str) -> None:
    """Accept a server only once it answers and offers the model; on any failure the previous one stays."""
    if not model:
        st.error("Give the model name (Check connection lists the ids the server offers).")
        return
    kept = " The server set up before stays in use." if "openai" in ui_state.backend_configs() else ""
    _accept("Checking that the server answers and offers the model…",
            lambda: models.use_server(base_url, model, api_key), kept)


def _accept(doing: str, open_config: Callable[[], BackendConfig], kept: str = "") -> None:
    """Offer the backend `open_config` sets up in the sidebar, or say why not: the one set up before stays."""
    try:
        with st.spinner(doing):
            config = open_config()
    except BackendError as exc:  # may quote a path, URL, module or a server's words
        st.error(md_text(f"Not accepted: {str(exc).rstrip('.')}.{kept}"))
        return
    ui_state.configure_backend(config)
    ui_state.post_notice(PAGE, ui_state.Notice("success", f"Pick *{md_text(config.label)}* under **Model** in the "
                                                          "sidebar."))
    st.rerun()


# ---- a LangChain chat model ----------------------------------------------------------------------


def langchain_form() -> None:
    st.subheader("LangChain chat model")
    st.caption(f"Any chat model LangChain knows, for every method. Lost on this backend: {LANGCHAIN_LOST}.")
    with st.form(f"{PAGE}.langchain"):
        model = st.text_input("Model", key=f"{PAGE}.lc_model", placeholder="openai:gpt-4o-mini or mymodule:make_chat",
                              help="provider:name as init_chat_model takes it (the provider's integration package "
                                   "must be installed), or module:function returning a BaseChatModel (importable "
                                   "from the folder the app was started in)")
        base_url = st.text_input("Base URL", key=f"{PAGE}.lc_base_url", placeholder="http://127.0.0.1:8000/v1",
                                 help="provider:name only: where the provider's server answers")
        api_key = st.text_input("API key", key=f"{PAGE}.lc_api_key", type="password",
                                help="provider:name only; never read from the environment. Not saved to disk.")
        use = st.form_submit_button("Use this model", type="primary")
    if use:
        use_langchain(model.strip(), base_url, api_key)


def use_langchain(model: str, base_url: str, api_key: str) -> None:
    if not model:
        st.error("Give provider:name (e.g. ollama:llama3) or module:function.")
        return
    _accept("Opening the chat model…", lambda: models.use_langchain(model, base_url, api_key))


# ---- the page ------------------------------------------------------------------------------------


def main() -> None:
    st.header("Models")
    notice = ui_state.pop_notice(PAGE)
    if notice is not None:
        st.success(notice.text)
    backends()
    local_model()
    model = models.loaded_local()
    gpu(model)
    r2ag_training(model)
    try_prompt(model)
    server()
    langchain_form()


main()
