"""What every command module exposes (a `Command`), and the options and helpers several commands share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import RagscopeError

if TYPE_CHECKING:
    from tqdm import tqdm

    from engine.runner import Workbench

USAGE_ERROR = 2  # bad input, a failed run, an unreadable file: the message says which


@dataclass(frozen=True)
class Command:
    """One subcommand: its name and help line as `python -m engine --help` lists them, the options it takes,
    and what it does with them (returning the exit code)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--pack and the backend/model options of every command that asks or trains on a model."""
    parser.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    parser.add_argument("--backend", default="offline", help="offline (default), hf, openai or langchain")
    parser.add_argument("--model", default="", help="hf: model folder, .gguf file or cached hub id; "
                        "openai: model name; langchain: provider:name (init_chat_model) or module:function")
    parser.add_argument("--quantization", default="auto", help="hf: auto (nf4 on CUDA), nf4, int8 (CUDA only) or none")
    parser.add_argument("--device", default="auto", help="hf: auto, cpu or cuda")
    parser.add_argument("--dtype", default="auto", help="hf: auto (bf16 where the hardware has it), bf16 or fp32")
    parser.add_argument("--base-url", default="", help="openai, langchain: server URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key", default="",
                        help="openai, langchain: key, if the server wants one (never read from the environment)")


def add_param_option(parser: argparse.ArgumentParser, help: str) -> None:
    """-p NAME=VALUE, and --timeout S: the run's time limit, which is `-p timeout_s=S` (engine.params.AnswerPolicy)."""
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE", help=help)
    parser.add_argument("--timeout", action=_AsParam, dest="param", metavar="S",
                        help="stop each run after S seconds, keeping its steps and refusing to answer "
                             "(same as -p timeout_s=S; default: no limit)")


class _AsParam(argparse.Action):
    """An option that is a -p in disguise: `--timeout S` adds `timeout_s=S` to the -p pairs."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), f"timeout_s={values}"])


def workbench(args: argparse.Namespace) -> Workbench:
    """The pack and backend that `add_model_options` named."""
    from engine.app import packs, runs

    options = {"model": args.model, "quantization": args.quantization, "device": args.device, "dtype": args.dtype,
               "base_url": args.base_url, "api_key": args.api_key}
    return runs.open_workbench(packs.load(args.pack), backend=args.backend, options=options)


def parse_params(pairs: list[str]) -> dict[str, str]:
    """-p NAME=VALUE pairs, still text: each method's Params checks and converts them."""
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise RagscopeError(f"parameter {pair!r} is not NAME=VALUE")
        params[name.strip()] = value.strip()
    return params


def progress_bar(unit: str, **options: Any) -> tqdm:
    """A progress bar on stderr, so stdout keeps only the command's result."""
    from tqdm import tqdm

    return tqdm(unit=unit, file=sys.stderr, **options)


def training_progress(bar: tqdm) -> Callable[[int, int, float], None]:
    """A trainer's (step, total, loss) reports shown on `bar`."""
    def progress(step: int, total: int, loss: float) -> None:
        bar.total = total
        bar.set_postfix_str(f"loss {loss:.3f}")
        bar.update(step - bar.n)

    return progress
