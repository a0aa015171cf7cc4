"""Seeded fuzzing of the loader (issue 15): a broken pack is refused with `file[:line]: problem` lines.

Each case applies one to three random mutations to the tiny pack — truncated lines, wrong types,
huge numbers, deep nesting, bad UTF-8, lone surrogates, missing fields, duplicated ids, hostile
names — and loads it. Loading must either succeed with a pack that holds only safe, encodable
data, or raise PackError whose every line names a pack file; any other exception is a failure.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

from engine.codec import to_jsonable
from engine.errors import PackError
from engine.knowledge.loader import MAX_PROBLEMS, load_pack
from engine.knowledge.records import Pack, pack_name_problem

SEED = 15
CASES = 1_500

FILES = ("pack.json", "documents.jsonl", "triples.tsv", "rules.jsonl", "questions.jsonl", "pages.jsonl")
JSONL = tuple(name for name in FILES if name.endswith(".jsonl"))
PROBLEM_LINE = re.compile(rf"^({'|'.join(re.escape(n) for n in FILES)})(:\d+)?: \S")
MORE_LINE = f"… more problems not listed; fix these {MAX_PROBLEMS:,} first"

# Raw JSON text put where a field's value goes: wrong types, out-of-range and hostile values.
HOSTILE_VALUES = (
    "null", "true", "false", "0", "-1", "1.5", "1e999", "-1e999", "NaN", "Infinity", '""', '" "', "[]", "{}",
    "[1, 2]", "[null]", '[["x"]]', '{"a": "b"}', "9" * 19, "-" + "9" * 19, "9" * 4301, "1" * 10_000,
    "0." + "1" * 5_000, "1e" + "9" * 400, "[" * 70 + "]" * 70, "[" * 100_000, '{"a": ' * 70 + "1" + "}" * 70,
    '"\\ud800"', '"x\\udc80y"', '"\\ud83d\\ude00"', '"\\ud83d"', '"\\u0000"', '"\\\\ud800"', '"' + "x" * 100_000 + '"',
    '"../../../../etc/passwd"', '"invalid question"', '"\\n\\t\\r"',
    # issue 26: over-long digit runs that int() still parses (ended by a letter, a dot, an `e` with no digits),
    # and escaped quotes, closed or not (a quadratic pre-scan took seconds on each of these)
    "1" * 5_000 + "x", "9" * 4_301 + ".", "-" + "7" * 5_000 + "e", "1" * 5_000 + "]", "1" * 5_000 + ".5",
    '"' + '\\"' * 20_000 + '"', '"' + '\\"' * 20_000, '\\"' * 20_000, '"' + "\\\\" * 20_000 + '"',
)
HOSTILE_NAMES = (
    "../../outside", "/etc", "a/b", "a\\b", "..", ".", "", " ", "x" * 65, "CON", "nul.txt", "a\x00b", "a\nb",
    "日本語", "\ud800", "-leading", "trailing.", "ok-name", "ok.name",
)
HOSTILE_BYTES = (b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n", b"\t", b'"', b"{", b"]",
                 b"\\", b"\\u", b"\\ud800", b"\xf4\x90\x80\x80", b"\x80" * 3)

Files = dict[str, bytes | None]
Mutation = Callable[[random.Random, Files], str]


def _lines(files: Files, name: str) -> list[bytes]:
    return (files.get(name) or b"").split(b"\n")


def _record(rng: random.Random, files: Files) -> tuple[str, int, dict]:
    name = rng.choice(JSONL)
    lines = _lines(files, name)
    for _ in range(5):
        i = rng.randrange(len(lines))
        try:
            data = json.loads(lines[i])
        except ValueError:
            continue
        if isinstance(data, dict):
            return name, i, data
    return name, 0, {}


def _put(files: Files, name: str, i: int, items: list[tuple[str, str]]) -> None:
    """Write record `i` of `name` from raw JSON text per field, so hostile text survives as written."""
    lines = _lines(files, name)
    lines[i] = ("{" + ", ".join(f"{json.dumps(k)}: {raw}" for k, raw in items) + "}").encode("utf-8", "surrogatepass")
    files[name] = b"\n".join(lines)


def wrong_value(rng: random.Random, files: Files) -> str:
    name, i, data = _record(rng, files)
    if not data:
        return "no record to change"
    key = rng.choice(list(data))
    raw = rng.choice(HOSTILE_VALUES)
    _put(files, name, i, [(k, raw if k == key else json.dumps(v)) for k, v in data.items()])
    return f"{name}:{i + 1} {key} = {raw[:40]}"


def hostile_list_item(rng: random.Random, files: Files) -> str:
    name, i, data = _record(rng, files)
    lists = [k for k, v in data.items() if isinstance(v, list)]
    if not lists:
        return "no list to change"
    key, raw = rng.choice(lists), rng.choice(HOSTILE_VALUES)
    _put(files, name, i, [(k, f"[{raw}]" if k == key else json.dumps(v)) for k, v in data.items()])
    return f"{name}:{i + 1} {key} = [{raw[:40]}]"


def missing_field(rng: random.Random, files: Files) -> str:
    name, i, data = _record(rng, files)
    if not data:
        return "no record to change"
    key = rng.choice(list(data))
    _put(files, name, i, [(k, json.dumps(v)) for k, v in data.items() if k != key])
    return f"{name}:{i + 1} without {key}"


def hostile_name(rng: random.Random, files: Files) -> str:
    name = rng.choice(HOSTILE_NAMES)
    files["pack.json"] = json.dumps({"name": name, "title": "T"}).encode("utf-8")
    return f"name {name!r}"


def pack_json_value(rng: random.Random, files: Files) -> str:
    key, raw = rng.choice(("name", "title", "temporal", "license")), rng.choice(HOSTILE_VALUES)
    fields = {"name": '"tiny"', "title": '"T"', key: raw}
    files["pack.json"] = ("{\n" + ",\n".join(f'  "{k}": {v}' for k, v in fields.items()) + "\n}").encode()
    return f"pack.json {key} = {raw[:40]}"


def truncate(rng: random.Random, files: Files) -> str:
    name = rng.choice(FILES)
    data = files.get(name) or b""
    cut = rng.randrange(len(data) + 1)
    files[name] = data[:cut]
    return f"{name} cut at byte {cut}"


def insert_bytes(rng: random.Random, files: Files) -> str:
    name, junk = rng.choice(FILES), rng.choice(HOSTILE_BYTES)
    data = files.get(name) or b""
    at = rng.randrange(len(data) + 1)
    files[name] = data[:at] + junk + data[at:]
    return f"{name} {junk!r} at byte {at}"


def flip_byte(rng: random.Random, files: Files) -> str:
    name = rng.choice(FILES)
    data = bytearray(files.get(name) or b"")
    if not data:
        return f"{name} empty"
    at = rng.randrange(len(data))
    data[at] = rng.randrange(256)
    files[name] = bytes(data)
    return f"{name} byte {at} = {data[at]}"


def duplicate_line(rng: random.Random, files: Files) -> str:
    name = rng.choice(FILES)
    lines = _lines(files, name)
    i = rng.randrange(len(lines))
    files[name] = b"\n".join(lines[: i + 1] + lines[i:])
    return f"{name}:{i + 1} twice"


def drop_file(rng: random.Random, files: Files) -> str:
    name = rng.choice(FILES)
    files[name] = rng.choice((None, b"", b"\n\n", b" "))
    return f"{name} = {files[name]!r}"


def mangle_triple(rng: random.Random, files: Files) -> str:
    lines = _lines(files, "triples.tsv")
    i = rng.randrange(len(lines))
    lines[i] = rng.choice((b"\t".join(lines[i].split(b"\t")[:2]), lines[i] + b"\tx\ty", b"\t\t", b"#",
                           lines[i].replace(b"\t", b" "), b"\t".join([b" "] * 3), b"a\tb\t" + b"c" * 100_000))
    files["triples.tsv"] = b"\n".join(lines)
    return f"triples.tsv:{i + 1} = {lines[i][:40]!r}"


MUTATIONS: tuple[Mutation, ...] = (wrong_value, wrong_value, hostile_list_item, missing_field, hostile_name,
                                   pack_json_value, truncate, insert_bytes, flip_byte, duplicate_line, drop_file,
                                   mangle_triple)


def _check_loaded(pack: Pack) -> str:
    """What is unsafe about a pack that loaded, or ""."""
    if pack_name_problem(pack.info.name):
        return f"unsafe name {pack.info.name!r} loaded"
    records = [pack.info, pack.documents, pack.triples, pack.rules, pack.questions, pack.pages]
    try:
        json.dumps(to_jsonable(records), ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (UnicodeEncodeError, ValueError) as exc:
        return f"loaded data cannot be saved: {exc}"
    if any(abs(n) >= 10**18 for n in [*(r.support for r in pack.rules), *(q.hops for q in pack.questions)]):
        return "an integer beyond int64 loaded"
    return ""


def _run_case(folder: Path, files: Files) -> tuple[bool, str]:
    """(refused, failure) for one case; failure is "" when the loader behaved."""
    folder.mkdir()
    for name, content in files.items():
        if content is not None:
            (folder / name).write_bytes(content)
    try:
        return False, _check_loaded(load_pack(folder))
    except PackError as exc:
        bad = [p for p in exc.problems if not PROBLEM_LINE.match(p) and p != MORE_LINE]
        return True, f"problem lines without a file: {[b[:120] for b in bad]}" if bad else ""
    except Exception as exc:  # noqa: BLE001 — the point of the test: nothing but PackError may escape
        return True, f"{type(exc).__name__}: {str(exc)[:200]}"


def test_malformed_packs_load_or_fail_with_file_and_line_messages_only(make_pack, tmp_path):
    pristine = make_pack()
    base: Files = {name: (pristine / name).read_bytes() for name in FILES}
    rng = random.Random(SEED)
    failures: list[str] = []
    refused = 0
    for case in range(CASES):
        files = dict(base)
        done = [rng.choice(MUTATIONS)(rng, files) for _ in range(rng.randint(1, 3))]
        was_refused, failure = _run_case(tmp_path / f"case{case}", files)
        if failure:
            failures.append(f"case {case} ({'; '.join(done)}): {failure}")
        refused += was_refused
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:20])
    # Not vacuous: most mutations break the pack, and some (a harmless value, a safe name) do not.
    assert CASES // 2 < refused < CASES, f"{refused} of {CASES} refused"
    print(f"{CASES} mutated packs: {refused} refused, {CASES - refused} loaded")
