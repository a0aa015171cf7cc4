"""`train-r2ag`: the R2-Former, relevance only or jointly with a frozen HF model's LM loss."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from engine.cli.command import Command, add_model_options, progress_bar, training_progress, workbench
from engine.errors import RagscopeError


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--k", type=int, default=10,
                        help="documents per list; the checkpoint is tied to it (default 10)")
    parser.add_argument("--retriever", default="hybrid", help="candidate retriever: hybrid (default), dense, bm25")
    parser.add_argument("--order", default="retriever", choices=("retriever", "r"),
                        help="list order: the retriever's rank (default) or sorted by cosine r as in the paper")
    parser.add_argument("--epochs", type=int, default=None, help="relevance-only epochs (default 40)")
    parser.add_argument("--lm-epochs", type=int, default=None, help="joint epochs with an HF model (default 2)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default 42)")
    parser.add_argument("--out", type=Path, default=None,
                        help="checkpoint file (default $RAGSCOPE_HOME/r2ag/relevance.pt; <model>.pt with --backend hf)")


def _run(args: argparse.Namespace) -> int:
    from engine.knowledge.writer import check_target
    from engine.methods.r2ag.training import TrainConfig, train_r2ag
    from engine.retrieval.suite import RETRIEVER_NAMES

    if args.backend not in ("offline", "hf"):
        raise RagscopeError(f"train-r2ag takes --backend offline (relevance only) or hf (joint); got {args.backend!r}")
    if args.retriever not in RETRIEVER_NAMES:
        raise RagscopeError(f"unknown retriever {args.retriever!r}; known: {', '.join(RETRIEVER_NAMES)}")
    if args.k < 1 or any(v is not None and v < 1 for v in (args.epochs, args.lm_epochs)):
        raise RagscopeError("--k, --epochs and --lm-epochs must be at least 1")
    if args.out:
        check_target(args.out, folder=False)  # before training, which takes minutes
    chosen = {"epochs": args.epochs, "lm_epochs": args.lm_epochs, "seed": args.seed}
    config = replace(TrainConfig(k=args.k, retriever=args.retriever, list_order=args.order),
                     **{name: value for name, value in chosen.items() if value is not None})
    bench = workbench(args)
    chat = bench.tools.chat if args.backend == "hf" else None
    with progress_bar("step") as bar:
        result = train_r2ag(bench.pack, bench.retrieval, config, chat=chat, out=args.out,
                            progress=training_progress(bar))
    m, meta = result.meta.metrics, result.meta
    print(f"trained the R2-Former ({meta.objective}, k={meta.k}, {int(m['train_lists'])} lists) in "
          f"{result.seconds:.1f} s")
    for part in ("train", "heldout"):
        if f"{part}_map_retriever" in m:
            print(f"{part} ({int(m[part + '_lists'])} lists) MAP: retriever order {m[part + '_map_retriever']:.4f}, "
                  f"by r {m[part + '_map_r']:.4f}, R2-Former {m[part + '_map_r2former']:.4f}")
    print(f"saved {result.path}" + (f" for {meta.llm}" if meta.llm else " (relevance only: re-ranks; injects nothing)"))
    return 0


COMMAND = Command("train-r2ag", "R2AG: train the R2-Former (relevance only, or jointly with a frozen HF model's LM "
                                "loss) on the pack's supporting_docs", _arguments, _run)
