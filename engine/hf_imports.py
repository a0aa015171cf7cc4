"""One lock for importing and loading through transformers, which is not thread-safe.

transformers exposes its classes through a lazy module: two threads importing from it at once can see
it half-initialised ("cannot import name 'AutoConfig' from 'transformers'"), which happened in the app
when the Models page loaded a model while the warm-up thread loaded the encoder (1 in 4 fresh
processes in a two-thread reproduction). `from_pretrained` imports model code lazily too, so every
import of transformers or sentence-transformers and every load through them holds this lock. It is
re-entrant: a load that converts a GGUF file first takes it twice.
"""

from __future__ import annotations

import threading

TRANSFORMERS_LOCK = threading.RLock()
