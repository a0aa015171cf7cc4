"""Loading a pack validates every file and reports each problem as `file:line: problem`."""

from __future__ import annotations

import json

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
