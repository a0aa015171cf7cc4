"""The README's way to embed a big pack on a GPU box: a user's retriever whose embeddings come from an
OpenAI-compatible /v1/embeddings server (here a loopback fake that embeds by hashed words), run end to end."""

from __future__ import annotations

import hashlib
import math
import shutil
from dataclasses import dataclass
from typing import Any

from engine.params import AnswerPolicy
from engine.runner import Workbench
from engine.settings import Settings
from engine.text import content_words
from engine.trace import RetrievalStep
from fake_chat_server import Reply, serving
from paths import ROOT

SENTINEL = "sk-from-the-environment-must-not-be-sent"
DIMENSIONS = 1024  # few collisions of hashed words


def embed(text: str) -> list[float]:
    """Hashed bag of content words: texts sharing words point the same way."""
    vector = [0.0] * DIMENSIONS
    for word in content_words(text):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@dataclass(frozen=True)
class EmbeddingsServer:
    def reply(self, body: Any) -> Reply:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        data = [{"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)]
        return Reply(body={"object": "list", "data": data, "model": body["model"],
                           "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})


def test_a_pack_embedded_by_a_served_model_answers_through_the_users_retriever(tmp_path, monkeypatch, mini_pack):
    home = tmp_path / "home"
    (home / "retrievers").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "retrievers" / "served_embeddings.py", home / "retrievers")
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    with serving() as server:
        server.answerer = EmbeddingsServer()
        monkeypatch.setenv("RAGSCOPE_EMBEDDINGS_URL", server.url + "/v1")
        trace = Workbench(mini_pack, Settings(home=home)).ask("When was Grace Hopper born?", "vanilla",
                                                              {"retriever": "served_embeddings", "k": 3},
                                                              policy=AnswerPolicy(min_confidence=0.0))
    step = next(s for s in trace.steps if isinstance(s, RetrievalStep))
    assert step.retriever == "served_embeddings" and step.hits[0].doc_id == "m07"
    assert trace.answer is not None and trace.answer.text == "1906"
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert sum(len(r["body"]["input"]) for r in server.requests) == len(mini_pack.documents) + 1  # chunks + query
    assert all(SENTINEL not in str(r["headers"]) for r in server.requests)
