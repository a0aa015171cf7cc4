"""`train-retriever`: RuleRAG-FT, the dense query encoder fine-tuned on question + rule → supporting docs."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command, progress_bar, training_progress
from engine.errors import RagscopeError


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    parser.add_argument("--epochs", type=int, default=None, help="passes over the training pairs (default 8)")
    parser.add_argument("--max-steps", type=int, default=None, help="cap on optimiser steps (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default 0)")


def _run(args: argparse.Namespace) -> int:
    from engine.knowledge.loader import load_pack
    from engine.methods.rulerag.training import FinetuneConfig, train_query_encoder, with_config
    from engine.settings import Settings

    if any(v is not None and v < 1 for v in (args.epochs, args.max_steps)):
        raise RagscopeError("--epochs and --max-steps must be at least 1")
    config = with_config(FinetuneConfig(), epochs=args.epochs, max_steps=args.max_steps, seed=args.seed)
    pack = load_pack(args.pack)
    with progress_bar("step") as bar:
        result = train_query_encoder(pack, Settings(), config, progress=training_progress(bar))
    manifest = result.manifest
    m = manifest.metrics
    print(f"trained on {manifest.train_pairs} pairs, {manifest.steps} steps ({manifest.epochs} epochs) "
          f"in {manifest.seconds:.1f} s; loss {m['loss_first']:.3f} → {m['loss_last']:.3f}")
    print(f"held-out ({manifest.heldout_pairs} pairs) recall@5 {m['recall@5_before']:.3f} → {m['recall@5_after']:.3f}, "
          f"recall@10 {m['recall@10_before']:.3f} → {m['recall@10_after']:.3f}")
    print(f"saved {result.folder}; use it with -p retriever=dense-ft")
    return 0


COMMAND = Command("train-retriever", "RuleRAG-FT: fine-tune the dense query encoder on question + rule → supporting "
                                     "docs", _arguments, _run)
