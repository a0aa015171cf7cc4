"""Loading a chat model while the warm-up loads the encoder (issue 23, found in a browser session).

transformers' lazy module is not thread-safe: the Models page's load failed with "cannot import name
'AutoConfig' from 'transformers'" while the warm-up thread was importing it. Every load through
transformers holds one re-entrant lock (engine/hf_imports.py). The race itself shows in about 1 of 4
fresh processes, too rarely for a test; what is tested is that each load waits for the lock.
"""

from __future__ import annotations

import threading

from engine.hf_imports import TRANSFORMERS_LOCK


def _blocked_while_locked(job) -> bool:
    """Whether `job` waits for TRANSFORMERS_LOCK: it cannot finish while this thread holds it."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (job(), done.set()), daemon=True)
    with TRANSFORMERS_LOCK:
        thread.start()
        waited = not done.wait(1.0)
    thread.join(120)
    return waited and done.is_set()


def test_a_chat_model_load_and_an_encoder_load_each_hold_the_lock(tiny_llama):
    from engine.llm import hf
    from engine.retrieval.embedder import Embedder

    assert _blocked_while_locked(lambda: hf._load(hf.HfModelConfig(str(tiny_llama), device="cpu", dtype="fp32")))
    assert _blocked_while_locked(lambda: Embedder()._model)
