"""Save rules into a pack's rules.jsonl: merged without duplicates, checked by the loader, replaced atomically.

A rule is the same rule as another when head and body are equal; the id is only its name, so a
new rule whose id is taken gets the next free `m001`, `m002`, … The pack's existing lines are kept
byte for byte (they may carry fields the loader ignores, such as a miner's statistics) and the new
rules are appended. The whole pack is first loaded with the new text as its rules.jsonl by
`read_pack` (the one definition of a valid pack); only then is the text written beside the old file
and renamed over it, so a reader, or a crash, sees the old file or the new one, never a mix.

Packs inside the repository's assets/ ship with ragscope and are never changed in place
[decide: the demo pack is what tests, docs and demos rely on]; `save_rules_as_copy` writes a
copy of such a pack with the rules added, as a new pack under the user's packs folder.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from engine.disk import raising_disk_full
from engine.errors import PackError
from engine.files import write_text_atomic
from engine.knowledge.loader import load_pack, read_pack
from engine.knowledge.records import Pack, Rule
from engine.knowledge.uploads import pack_name_problem
from engine.knowledge.writer import copy_pack_files, rule_record, staged
from engine.settings import REPO_ROOT

RULES_FILE = "rules.jsonl"
BUNDLED_ROOT = REPO_ROOT / "assets"
# Streamlit serves every browser session from one process: the lock makes read-merge-replace one
# step, so two sessions saving at once cannot drop each other's rules.
_SAVING = threading.Lock()


@dataclass(frozen=True)
class SavedRules:
    """What a save did: the pack as loaded afterwards, the rules appended (final ids), the duplicates left out."""

    pack: Pack
    added: tuple[Rule, ...]
    duplicates: tuple[Rule, ...]


def is_bundled(folder: str | Path) -> bool:
    """Whether the pack ships inside the repository's assets/ (and so is copied, never changed)."""
    return Path(folder).resolve().is_relative_to(BUNDLED_ROOT)


def rule_key(rule: Rule) -> tuple[str, tuple[str, ...]]:
    """What makes two rules the same rule: head and body."""
    return rule.head, tuple(rule.body)


def merge_rules(existing: Sequence[Rule], new: Iterable[Rule]) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    """(the rules of `new` to append, the ones left out as duplicates of `existing` or of an earlier new rule)."""
    seen = {rule_key(r) for r in existing}
    taken = {r.id for r in existing}
    added: list[Rule] = []
    duplicates: list[Rule] = []
    for rule in new:
        if rule_key(rule) in seen:
            duplicates.append(rule)
            continue
        seen.add(rule_key(rule))
        rule_id = rule.id if rule.id not in taken else _free_id(taken)
        taken.add(rule_id)
        added.append(replace(rule, id=rule_id))
    return tuple(added), tuple(duplicates)


def save_rules(folder: str | Path, rules: Sequence[Rule]) -> SavedRules:
    """Append the rules not yet in the pack at `folder` to its rules.jsonl; PackError leaves the file as it was."""
    folder = Path(folder)
    if is_bundled(folder):
        raise PackError([f"{folder}: this pack ships with ragscope and is not changed in place; save the rules "
                         "into a copy under $RAGSCOPE_HOME/packs (the Knowledge page offers one) and use that"])
    with _SAVING:
        current = read_pack(folder)  # also the staging folder of save_rules_as_copy
        added, duplicates = merge_rules(current.rules, rules)
        if not added:
            return SavedRules(current, (), duplicates)
        path = folder / RULES_FILE
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        separator = "\n" if old and not old.endswith("\n") else ""
        new = "".join(json.dumps(rule_record(r), ensure_ascii=False) + "\n" for r in added)
        text = old + separator + new
        pack = _load_with_rules(folder, text)  # raises PackError before anything is written
        with raising_disk_full(path.parent):
            write_text_atomic(path, text)
    return SavedRules(replace(pack, path=folder.resolve()), added, duplicates)


def save_rules_as_copy(source: str | Path, packs_dir: Path, name: str, existing: Iterable[str],
                       rules: Sequence[Rule]) -> SavedRules:
    """A new pack `packs_dir/name`: the pack at `source` plus `rules`; on any error nothing appears there."""
    problem = pack_name_problem(name, existing)
    if problem:
        raise PackError([problem])
    target = packs_dir / name
    load_pack(source)  # refuses a source whose files link out of it (issue 26): copying would follow the links
    with staged(target) as folder:
        copy_pack_files(Path(source), folder, name)
        saved = save_rules(folder, rules)
    return replace(saved, pack=replace(saved.pack, path=target.resolve()))


def _free_id(taken: set[str]) -> str:
    n = 1
    while f"m{n:03d}" in taken:
        n += 1
    return f"m{n:03d}"


def _load_with_rules(folder: Path, rules: str) -> Pack:
    """The pack as the loader will see it with `rules` as its rules.jsonl (other files linked into a scratch dir)."""
    with tempfile.TemporaryDirectory(prefix="ragscope-rules-check-") as scratch:
        view = Path(scratch)
        for item in folder.iterdir():
            if item.is_file() and not item.name.startswith(".") and item.name != RULES_FILE:
                (view / item.name).symlink_to(item.resolve())
        (view / RULES_FILE).write_text(rules, encoding="utf-8")
        return read_pack(view)
