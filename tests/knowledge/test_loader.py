"""Loading a pack validates every file and reports each problem as `file:line: problem`."""

from __future__ import annotations

import json
import os

import pytest

from engine.errors import PackError
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Document, PackInfo, Triple

# Questions and pages refer to the tiny pack's documents; drop them when documents are replaced.
DOCS_ONLY: dict[str, None] = {"questions.jsonl": None, "pages.jsonl": None}


def _problems(folder) -> list[str]:
    with pytest.raises(PackError) as caught:
        load_pack(folder)
    return caught.value.problems


def _has(problems: list[str], where: str, words: str) -> bool:
    return any(p.startswith(f"{where}: ") and words in p for p in problems)


def test_a_valid_tiny_pack_loads_with_all_its_records(make_pack):
    pack = load_pack(make_pack())
    assert pack.info == PackInfo(name="tiny", title="Tiny pack", license="CC0")
    assert [d.id for d in pack.documents] == ["curie", "warsaw"]
    assert pack.documents[0].entities == ("Marie Curie", "Warsaw")
    assert pack.triples[1] == Triple("Warsaw", "capital_of", "Poland", "1596")
    assert len(pack.triples) == 3  # the comment line is skipped
    assert pack.rules[0].body == ("born_in", "capital_of")
    assert pack.questions[0].supporting_docs == ("curie", "warsaw")
    assert pack.questions[0].extra == {"source": "handmade"}  # unknown fields are kept
    assert pack.pages[0].question_ids == ("q1",)
    assert pack.path is not None and pack.path.is_absolute()


def test_a_malformed_jsonl_line_is_reported_with_its_file_and_line(make_pack):
    docs = '{"id": "a", "title": "A", "text": "x"}\n{"id": "b", "title": \n'
    problems = _problems(make_pack({"documents.jsonl": docs, **DOCS_ONLY}))
    assert _has(problems, "documents.jsonl:2", "not valid JSON")


def test_a_missing_documents_file_is_reported(make_pack):
    problems = _problems(make_pack({"documents.jsonl": None}))
    assert _has(problems, "documents.jsonl", "missing")


def test_a_missing_pack_json_is_reported(make_pack):
    problems = _problems(make_pack({"pack.json": None}))
    assert _has(problems, "pack.json", "missing")


def test_duplicate_document_ids_name_both_lines(make_pack):
    docs = "\n".join(json.dumps({"id": "same", "title": t, "text": t}) for t in ("A", "B"))
    problems = _problems(make_pack({"documents.jsonl": docs, **DOCS_ONLY}))
    assert _has(problems, "documents.jsonl:2", "duplicate id 'same' (first on line 1)")


def test_a_rule_naming_an_unknown_relation_is_reported(make_pack):
    rule = {"id": "r1", "head": "nationality", "body": ["born_in", "~mayor_of"],
            "confidence": 0.5, "support": 1}
    problems = _problems(make_pack({"rules.jsonl": json.dumps(rule)}))
    assert _has(problems, "rules.jsonl:1", "unknown relation 'mayor_of'")


def test_a_rule_body_longer_than_the_cap_is_reported_with_the_cap(make_pack):
    # issue 15: a 60-relation body took 22 GB to follow
    rule = {"id": "r1", "head": "nationality", "body": ["born_in", "~born_in"] * 30, "confidence": 0.5, "support": 1}
    problems = _problems(make_pack({"rules.jsonl": json.dumps(rule)}))
    assert _has(problems, "rules.jsonl:1", "body has 60 relations; at most 6 are allowed")


def test_a_triple_line_with_two_fields_is_reported(make_pack):
    problems = _problems(make_pack({"triples.tsv": "A\tborn_in\tB\nA\tborn_in\n", "rules.jsonl": None}))
    assert _has(problems, "triples.tsv:2", "got 2")


def test_an_unknown_question_type_is_reported_with_the_allowed_types(make_pack):
    question = {"id": "q1", "question": "Who?", "answers": ["x"], "type": "riddle"}
    problems = _problems(make_pack({"questions.jsonl": json.dumps(question), "pages.jsonl": None}))
    assert _has(problems, "questions.jsonl:1", "unknown type 'riddle'; allowed: factoid")


def test_a_supporting_doc_that_does_not_exist_is_reported(make_pack):
    question = {"id": "q1", "question": "Who?", "answers": ["x"], "type": "factoid",
                "supporting_docs": ["curie", "nobody"]}
    problems = _problems(make_pack({"questions.jsonl": json.dumps(question)}))
    assert _has(problems, "questions.jsonl:1", "supporting doc 'nobody' is not in documents.jsonl")


def test_a_file_that_is_not_utf8_is_reported_and_nothing_loads(make_pack):
    latin1 = '{"id": "a", "title": "Café", "text": "crème"}\n'.encode("latin-1")
    problems = _problems(make_pack({"documents.jsonl": latin1, **DOCS_ONLY}))
    assert any(p.startswith("documents.jsonl:1:") and "not UTF-8" in p for p in problems)


def test_several_problems_across_files_are_reported_together(make_pack):
    question = {"id": "q1", "question": "Who?", "answers": ["x"], "type": "riddle"}
    problems = _problems(make_pack({
        "documents.jsonl": '{"id": "a", "title": "A"}\n{"id": "b", "title": "B", "text": "t"}\n',
        "triples.tsv": "only\ttwo\n",
        "questions.jsonl": json.dumps(question),
        "rules.jsonl": None,
        "pages.jsonl": None,
    }))
    assert _has(problems, "documents.jsonl:1", "missing field 'text'")
    assert _has(problems, "triples.tsv:1", "got 2")
    assert _has(problems, "questions.jsonl:1", "unknown type 'riddle'")
    assert len(problems) == 3


def test_the_error_message_lists_every_problem_on_its_own_line(make_pack):
    with pytest.raises(PackError) as caught:
        load_pack(make_pack({"pack.json": None, "documents.jsonl": None, "questions.jsonl": None,
                             "pages.jsonl": None}))
    assert str(caught.value).splitlines() == caught.value.problems


def test_a_document_containing_script_loads_with_its_text_unchanged(make_pack):
    text = 'Before <script>alert(1)</script> after & "quoted"'
    docs = json.dumps({"id": "x", "title": "<b>Title</b>", "text": text})
    pack = load_pack(make_pack({"documents.jsonl": docs, **DOCS_ONLY}))
    assert pack.documents == (Document(id="x", title="<b>Title</b>", text=text),)


def test_a_path_that_is_not_a_folder_is_reported(tmp_path):
    problems = _problems(tmp_path / "nowhere")
    assert "not a folder" in problems[0]


# ---- hostile and careless input (issue 15) ------------------------------------------------------


@pytest.mark.parametrize("name", ["../../outside", "a/b", "..", ".hidden", "a..b", "ends.", "two words",
                                  "x" * 65, "line\n", "CON", "lpt1.txt", "Zoë"])
def test_a_pack_name_that_could_leave_its_folder_is_refused_at_load(make_pack, name):
    problems = _problems(make_pack({"pack.json": json.dumps({"name": name})}))
    assert _has(problems, "pack.json:1", "pack name")
    assert any("not allowed" in p or "reserved" in p for p in problems)


def test_a_dotted_pack_name_loads(make_pack):
    assert load_pack(make_pack({"pack.json": json.dumps({"name": "hotpot.v1_dev-2"})})).info.name == "hotpot.v1_dev-2"


def test_a_pack_info_with_an_unsafe_name_cannot_be_built():
    with pytest.raises(PackError, match="not allowed"):
        PackInfo(name="../../etc")


def test_pack_json_fields_of_the_wrong_type_are_reported(make_pack):
    problems = _problems(make_pack({"pack.json": json.dumps({"name": "tiny", "temporal": "false", "title": 3})}))
    assert _has(problems, "pack.json:1", "field 'temporal' must be bool, got str")
    assert _has(problems, "pack.json:1", "field 'title' must be str, got int")


def test_deep_nesting_is_reported_with_its_line_in_every_file(make_pack):
    deep = "[" * 100_000
    docs = '{"id": "a", "title": "A", "text": "x"}\n{"id": "b", "title": "B", "text": "y", "x": ' + deep + "\n"
    problems = _problems(make_pack({"documents.jsonl": docs, "pack.json": '{\n"name": ' + deep, **DOCS_ONLY}))
    assert _has(problems, "documents.jsonl:2", "nested deeper than 64 levels")
    assert _has(problems, "pack.json:2", "nested deeper than 64 levels")


def test_an_integer_beyond_int64_is_reported_instead_of_crashing(make_pack):
    rule = '{"id": "r1", "head": "nationality", "body": ["born_in"], "confidence": 0.5, "support": ' + "9" * 5000 + "}"
    problems = _problems(make_pack({"rules.jsonl": rule}))
    assert problems == ["rules.jsonl:1: integer with 5000 digits; at most 18 are allowed "
                        "(write a larger number as a string)"]


def test_a_huge_float_is_a_number_out_of_range_not_a_crash(make_pack):
    rule = '{"id": "r1", "head": "nationality", "body": ["born_in"], "confidence": 1e999, "support": 1}'
    assert _has(_problems(make_pack({"rules.jsonl": rule})), "rules.jsonl:1", "confidence inf outside [0, 1]")


def test_a_lone_surrogate_escape_is_refused_and_a_surrogate_pair_loads(make_pack):
    lone = '{"id": "a", "title": "A", "text": "broken \\udc80 text"}\n'
    problems = _problems(make_pack({"documents.jsonl": '{"id": "b", "title": "B", "text": "ok"}\n' + lone,
                                    **DOCS_ONLY}))
    assert _has(problems, "documents.jsonl:2", "lone UTF-16 surrogate")
    pair = '{"id": "a", "title": "A", "text": "smile \\ud83d\\ude00"}\n'
    assert load_pack(make_pack({"documents.jsonl": pair, **DOCS_ONLY})).documents[0].text == "smile 😀"


def test_a_lone_surrogate_in_a_question_is_refused(make_pack):
    question = '{"id": "q1", "question": "Who \\ud800?", "answers": ["x"], "type": "factoid"}'
    problems = _problems(make_pack({"questions.jsonl": question, "pages.jsonl": None}))
    assert _has(problems, "questions.jsonl:1", "lone UTF-16 surrogate")


def test_invalid_utf8_in_pack_json_names_its_line(make_pack):
    problems = _problems(make_pack({"pack.json": b'{\n  "name": "tiny",\n  "title": "caf\xe9"\n}'}))
    assert problems == ["pack.json:3: not UTF-8 text (invalid continuation byte at byte 15 of the line); "
                        "save the file as UTF-8"]


def test_list_fields_must_hold_strings(make_pack):
    question = {"id": "q1", "question": "Who?", "answers": ["x", {"nested": 1}], "type": "factoid"}
    problems = _problems(make_pack({"questions.jsonl": json.dumps(question), "pages.jsonl": None}))
    assert _has(problems, "questions.jsonl:1", "field 'answers' must be a list of strings; item 1 is dict")


def test_an_over_long_line_is_skipped_without_losing_the_line_count(make_pack, monkeypatch):
    import engine.knowledge.loader as loader

    monkeypatch.setattr(loader, "MAX_LINE_CHARS", 300)
    docs = '{"id": "a", "title": "A", "text": "' + "x" * 5000 + '"}\n{"id": "b", "title": "B", "text": "y"}\n' + "{"
    problems = _problems(make_pack({"documents.jsonl": docs, **DOCS_ONLY}))
    assert [p.split(": ")[0] for p in problems] == ["documents.jsonl:1", "documents.jsonl:3"]


def test_a_file_of_garbage_keeps_a_bounded_list_of_problems(make_pack):
    from engine.knowledge.loader import MAX_PROBLEMS

    problems = _problems(make_pack({"documents.jsonl": "x\n" * (MAX_PROBLEMS + 500), **DOCS_ONLY}))
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].startswith("… more problems not listed")


def test_a_staging_folder_is_never_loaded_even_when_complete(tmp_path):
    import shutil

    from paths import MINI_PACK

    staging = tmp_path / f".mini.{os.getpid()}.abcd1234"
    shutil.copytree(MINI_PACK, staging)
    with pytest.raises(PackError, match="temp folder of an unfinished pack write"):
        load_pack(staging)
