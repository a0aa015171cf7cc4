"""CLI argument fuzz (issue 15): seeded careless and hostile argv for every command, run in process.

Every case must end in exit code 0 or 2 (argparse's own usage errors exit 2 too), never an escaped
exception, and must leave no staging folder or `.tmp` file behind. Training is stubbed out at its
entry point: what is fuzzed is the argument handling, and reaching training means it passed.
"""

from __future__ import annotations

import random
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cli import main
from paths import MINI_PACK, TESTS

DATASETS = TESTS / "fixtures" / "datasets"

SEED = 15
CASES_PER_COMMAND = 30
QUESTION = "When was Grace Hopper born?"
# Values a careless or hostile user types; {dir}, {file}, {pack}… are filled from the sandbox. No
# absolute path outside it: the suite may run as root, where `--out /dev/null` is a real write.
HOSTILE = ("", " ", "nan", "inf", "-inf", "-1", "0", "1e999", "9" * 5000, "0x10", "\udcff", "x\ud800y", ",,",
           ",", "-", "--", "日本語の質問です" * 15, "a" * 3000, "%s%n{0}", "$(id)", "../../etc/passwd",
           "{file}/x", "{dir}", "{file}", "{empty}", "{staging}", "{pack}", "{new}", "{report}", "{traces}#9",
           "k=nan", "k=", "=3", "theta=inf", "retriever=dense-ft", "checkpoint={file}", "vanilla,nope")
UNKNOWN_FLAGS = ("--bogus", "-x", "--pack=", "--out", "--limit", "-p", "--", "-h")


@dataclass(frozen=True)
class Command:
    """A valid argv template and the values that make sense for each option (besides HOSTILE)."""

    argv: tuple[str, ...]
    values: dict[str, tuple[str, ...]]


COMMANDS = {
    "ask": Command(("ask", "--pack", "{pack}", QUESTION),
                   {"--method": ("vanilla", "rulerag", "tog2", "r2ag", "tog3", ",,"),
                    "-p": ("k=3", "k=999", "theta=0.5", "theta=nan", "retriever=bm25", "k=3"),
                    "--backend": ("offline", "gpt9", "hf", "openai"), "--json": ()}),
    "eval": Command(("eval", "--pack", "{pack}", "--limit", "1"),
                    {"--method": ("vanilla", ",,", "nope", "vanilla,nope", " , vanilla"),
                     "--limit": ("1", "2", "-1"), "--type": ("factoid", "riddle", ","),
                     "--out": ("{new}", "{dir}", "{file}", "{empty}"), "--judge": (),
                     "--shard": ("1/2", "2/2", "0/3", "3/2", "x", "1/0")}),
    "diff": Command(("diff", "{traces}#1", "{traces}#2"), {"--json": ()}),
    "compare-evals": Command(("compare-evals", "{report}", "{report}"),
                             {"--json": (), "--seed": ("0", "-1", "x")}),
    "merge-evals": Command(("merge-evals", "{report}", "--out", "{new}"),
                           {"--partial": (), "--out": ("{new}", "{dir}", "{empty}")}),
    "index": Command(("index", "--pack", "{pack}"), {}),
    "ingest": Command(("ingest", "{file}", "--out", "{new}"),
                      {"--name": ("x", "", "../escape"), "--out": ("{new}", "{dir}", "{empty}")}),
    "import-hotpot": Command(("import-hotpot", "{hotpot}", "--out", "{new}"), {"--out": ("{new}", "{dir}")}),
    "import-2wiki": Command(("import-2wiki", "{wiki}", "--out", "{new}"),
                            {"--out": ("{new}", "{dir}"), "--limit": ("1", "0", "-3")}),
    "import-musique": Command(("import-musique", "{musique}", "--out", "{new}"),
                              {"--out": ("{new}", "{dir}"), "--limit": ("1", "0", "-3")}),
    "mine-rules": Command(("mine-rules", "--pack", "{pack}", "--out", "{newfile}"),
                          {"--min-conf": ("0.5", "2", "-1"), "--min-support": ("1", "0", "100"),
                           "--min-head-coverage": ("0.1", "5"), "--max-rules": ("1", "0"),
                           "--out": ("{newfile}", "{dir}", "{file}", "{empty}"), "--temporal": ()}),
    "train-retriever": Command(("train-retriever", "--pack", "{pack}"),
                               {"--epochs": ("1", "0", "-5"), "--max-steps": ("1", "0"), "--seed": ("0", "-1")}),
    "train-r2ag": Command(("train-r2ag", "--pack", "{pack}"),
                          {"--k": ("3", "0", "-1"), "--retriever": ("bm25", "grep", "dense-ft"),
                           "--order": ("r", "sideways"), "--epochs": ("1", "0"), "--backend": ("offline", "hf"),
                           "--out": ("{newfile}", "{dir}", "{empty}")}),
}


class Trained(Exception):
    """Raised by the training stubs: the arguments were accepted all the way to training."""


def _mutations(rng: random.Random, command: Command) -> Callable[[list[str]], list[str]]:
    """Mostly well-formed argv with one bad value, so the cases get past argparse into the engine."""
    def replace_value(argv: list[str]) -> list[str]:
        values = [i for i, arg in enumerate(argv) if i and not arg.startswith("-")]
        if not values:
            return argv + [rng.choice(HOSTILE)]
        i = rng.choice(values)
        return argv[:i] + [rng.choice(HOSTILE)] + argv[i + 1:]

    def add_option(argv: list[str]) -> list[str]:
        if not command.values:
            return argv + [rng.choice(UNKNOWN_FLAGS)]
        flag = rng.choice(sorted(command.values))
        choices = command.values[flag]
        value = [] if not choices else [rng.choice(choices + HOSTILE)]
        return argv[:1] + [flag, *value] + argv[1:]

    def drop(argv: list[str]) -> list[str]:
        i = rng.randrange(1, len(argv) + 1)  # past the end: nothing dropped
        return argv[:i] + argv[i + 1:]

    def unknown_flag(argv: list[str]) -> list[str]:
        i = rng.randrange(1, len(argv) + 1)
        return argv[:i] + [rng.choice(UNKNOWN_FLAGS)] + argv[i:]

    return rng.choice((replace_value, replace_value, replace_value, add_option, add_option, add_option, drop,
                       unknown_flag))


def _cases(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    cases = []
    for command in COMMANDS.values():
        cases.append(list(command.argv))  # the valid form first: it must keep working
        for _ in range(CASES_PER_COMMAND - 1):
            argv = list(command.argv)
            for _ in range(rng.choice((1, 1, 2, 3))):
                argv = _mutations(rng, command)(argv)
            cases.append(argv)
    return cases


@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], dict[str, str]]:
    """Per case: a copy of the mini pack (so default outputs never land in the fixtures) and fresh paths.

    The working folder is two levels inside the sandbox: a hostile value used as --out ("nan",
    "../../etc/passwd") is a relative path and must land there, not in the repository.
    """
    cwd = tmp_path / "cwd" / "deep"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    pack = tmp_path / "mini"
    shutil.copytree(MINI_PACK, pack)
    staging = tmp_path / ".mini.4242.abcd1234"
    shutil.copytree(MINI_PACK, staging)
    (tmp_path / "notes.md").write_text("# Kelvin\n\nLord Kelvin proposed the absolute scale in 1848.\n")
    (tmp_path / "hotpot.json").write_text('[{"qas_id": "a", "question": "Who?", "answer": "Kelvin", '
                                          '"paragraphs": [{"title": "K", "context": "Kelvin.", "is_supp": true}]}]')
    (tmp_path / "empty").mkdir()
    report = tmp_path / "report"  # an eval --out report for compare-evals and merge-evals; its traces for diff
    assert main(["eval", "--pack", str(pack), "--limit", "2", "--out", str(report)]) == 0

    def paths(case: int) -> dict[str, str]:
        return {"pack": str(pack), "staging": str(staging), "dir": str(pack), "file": str(tmp_path / "notes.md"),
                "empty": str(tmp_path / "empty"), "hotpot": str(tmp_path / "hotpot.json"),
                "wiki": str(DATASETS / "2wiki_dev_sample.json"), "musique": str(DATASETS / "musique_dev_sample.jsonl"),
                "report": str(report), "traces": str(report / "traces.jsonl"),
                "new": str(tmp_path / "out" / f"pack{case}"), "newfile": str(tmp_path / "out" / f"rules{case}.jsonl")}
    return paths


@pytest.fixture()
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.methods.r2ag.training
    import engine.methods.rulerag.training

    def stub(*args: object, **kwargs: object) -> None:
        raise Trained

    monkeypatch.setattr(engine.methods.rulerag.training, "train_query_encoder", stub)
    monkeypatch.setattr(engine.methods.r2ag.training, "train_r2ag", stub)


def _filled(arg: str, paths: dict[str, str]) -> str:
    for key, path in paths.items():
        arg = arg.replace("{" + key + "}", path)
    return arg


def _exit_code(argv: list[str]) -> int | str:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse: 2 for a usage error, 0 for -h
        return exc.code if isinstance(exc.code, int) else 2
    except Trained:
        return 0
    except Exception:  # noqa: BLE001 — the failure this test exists to find
        return traceback.format_exc(limit=-3)


def test_random_argv_for_every_command_exits_0_or_2_and_leaves_nothing_half_written(
        ragscope_home, sandbox, no_training, capsys, tmp_path):
    started = time.perf_counter()
    valid = {command.argv for command in COMMANDS.values()}
    failures, codes = [], {0: 0, 2: 0}
    for case, template in enumerate(_cases(SEED)):
        argv = [_filled(arg, sandbox(case)) for arg in template]
        code = _exit_code(argv)
        capsys.readouterr()  # printing must have worked (the capture is strict UTF-8, like a terminal)
        if code in codes and (code == 0 or tuple(template) not in valid):
            codes[code] += 1
        else:
            failures.append(f"{[a[:60] for a in argv]} -> {code}")
    seconds = time.perf_counter() - started
    left = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")
            or (p.name.startswith(".") and p.name != ".mini.4242.abcd1234")]
    assert not failures, f"{len(failures)} of {sum(codes.values()) + len(failures)} cases failed:\n" + \
        "\n".join(failures)
    assert not left, f"half-written files left behind: {left}"
    assert codes[2] > codes[0]  # most mutations are refused
    print(f"{sum(codes.values())} cases: {codes[0]} exit 0, {codes[2]} exit 2, in {seconds:.1f} s")
