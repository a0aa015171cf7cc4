"""The plain mean-pooling encoder gives sentence-transformers' vectors without importing it (issue 22: a fresh
server's first answer paid 4.8 s for that import)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.retrieval.embedder import default_embedder_path
from engine.retrieval.mean_pooling import MeanPoolingEncoder, is_plain_mean_pooling

TEXTS = ["Where was Marie Curie born?", "  padded with spaces  ", "", "x",
         "Marie Skłodowska Curie was a Polish and naturalised-French physicist and chemist. " * 40,  # > 256 tokens
         "Paris", "The Elbe rises in the Krkonoše mountains and flows into the North Sea."]


@pytest.mark.parametrize("bert", [True, False], ids=["own-bert", "transformers-automodel"])
def test_the_vectors_are_sentence_transformers_own(bert, monkeypatch):
    from sentence_transformers import SentenceTransformer

    from engine.retrieval import mean_pooling

    folder = default_embedder_path()
    assert is_plain_mean_pooling(folder) and mean_pooling._is_plain_bert(folder)
    monkeypatch.setattr(mean_pooling, "_is_plain_bert", lambda _: bert)
    ours = MeanPoolingEncoder(folder, "cpu").encode(TEXTS, batch_size=3)
    theirs = SentenceTransformer(str(folder), device="cpu", local_files_only=True).encode(
        TEXTS, batch_size=3, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.shape == theirs.shape and np.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("change", ["dense", "cls", "lower", "weighted"])
def test_other_layouts_keep_sentence_transformers(tmp_path, change):
    folder = tmp_path / "model"
    shutil.copytree(default_embedder_path(), folder)
    modules, pooling = folder / "modules.json", folder / "1_Pooling" / "config.json"
    if change == "dense":
        extra = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
        modules.write_text(json.dumps([*json.loads(modules.read_text()), extra]))
    elif change == "cls":
        pooling.write_text(json.dumps({**json.loads(pooling.read_text()), "pooling_mode_cls_token": True,
                                       "pooling_mode_mean_tokens": False}))
    elif change == "lower":
        (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": True}))
    else:
        pooling.write_text(json.dumps({**json.loads(pooling.read_text()), "pooling_mode_weightedmean_tokens": True}))
    assert is_plain_mean_pooling(default_embedder_path()) and not is_plain_mean_pooling(folder)


def test_a_fresh_process_encodes_without_importing_sentence_transformers_or_transformers():
    code = ("import sys; from engine.retrieval.embedder import Embedder; e = Embedder(); "
            "v = e.encode(['hello there']); assert v.shape == (1, e.dimension); "
            "print('sentence_transformers' in sys.modules, 'transformers.models.bert' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"
