"""MuSiQue JSON lines import as a pooled corpus of 2–4-hop questions; unanswerable ones are skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import IngestError
from engine.evaluation.importers import import_dataset
from engine.knowledge.loader import load_pack
from engine.knowledge.writer import write_pack
from paths import TESTS

SAMPLE = TESTS / "fixtures" / "datasets" / "musique_dev_sample.jsonl"
ITEMS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
ANSWERABLE = [item for item in ITEMS if item["answerable"]]


@pytest.fixture(scope="module")
def imported():
    return import_dataset(SAMPLE, "musique")


def _write(tmp_path: Path, items: list[dict], name: str = "dev.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_unanswerable_questions_are_skipped_counted_and_their_paragraphs_left_out(imported):
    pack = imported.pack
    assert imported.skipped == {"unanswerable": 1}
    assert [q.id for q in pack.questions] == [item["id"] for item in ANSWERABLE]
    assert "Die Fledermaus" not in {d.title for d in pack.documents}
    assert pack.info.description.endswith("; skipped 1 unanswerable.")


def test_paragraphs_shared_by_questions_are_pooled_once(imported):
    pack = imported.pack
    raw = sum(len(item["paragraphs"]) for item in ANSWERABLE)
    titles = [d.title for d in pack.documents]
    assert (raw, len(pack.documents)) == (17, 10) and len(set(titles)) == len(titles)
    assert all(d.id.startswith("mq-") for d in pack.documents)


def test_questions_are_multi_hop_with_one_hop_per_decomposition_step(imported):
    assert [(q.type, q.hops) for q in imported.pack.questions] == [
        ("multi_hop", 2), ("multi_hop", 3), ("multi_hop", 2), ("multi_hop", 4)]


def test_answers_carry_the_aliases_once_each_whatever_their_case(imported):
    assert [q.answers for q in imported.pack.questions] == [
        ("Constanze Mozart", "Constanze Weber"), ("Zell im Wiesental",), ("Berlin",), ("euro", "EUR", "€")]


def test_supporting_docs_are_the_paragraphs_marked_supporting(imported):
    pack = imported.pack
    titles = {d.id: d.title for d in pack.documents}
    for question, item in zip(pack.questions, ANSWERABLE):
        wanted = sorted(p["title"] for p in item["paragraphs"] if p["is_supporting"])
        assert sorted(titles[d] for d in question.supporting_docs) == wanted


def test_topic_entities_are_the_pages_read_by_steps_that_use_no_earlier_answer(imported):
    assert [q.topic_entities for q in imported.pack.questions] == [
        ("The Magic Flute",), ("The Magic Flute",), ("Danube",), ("The Magic Flute",)]


def test_the_decomposition_is_kept_for_per_hop_analysis(imported, tmp_path):
    pack = imported.pack
    loaded = load_pack(write_pack(pack, tmp_path / "musique"))
    assert loaded.questions == pack.questions
    assert loaded.questions[1].extra["question_decomposition"][2]["question"] == "Where was #2 born?"


def test_a_json_list_of_the_same_items_imports_the_same(imported, tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(ITEMS, indent=1), encoding="utf-8")
    assert import_dataset(path, "musique").pack.questions == imported.pack.questions


def test_limit_counts_imported_questions_not_skipped_ones(tmp_path):
    path = _write(tmp_path, [ITEMS[4], *ANSWERABLE])  # the unanswerable one first
    limited = import_dataset(path, "musique", limit=1)
    assert [q.id for q in limited.pack.questions] == [ANSWERABLE[0]["id"]] and limited.skipped == {"unanswerable": 1}


def test_a_file_of_unanswerable_questions_only_is_refused(tmp_path):
    with pytest.raises(IngestError, match="no question to import; every one was skipped \\(1 unanswerable\\)"):
        import_dataset(_write(tmp_path, [ITEMS[4]]), "musique")


@pytest.mark.parametrize("change, words", [
    ({"question_decomposition": []}, "key 'question_decomposition' is empty"),
    ({"answerable": "yes"}, "key 'answerable' must be bool, got str"),
    ({"answer_aliases": ["ok", 3]}, "key 'answer_aliases' must hold strings only"),
    ({"paragraphs": [{"idx": 0, "title": "T", "paragraph_text": "x", "is_supporting": True}] * 2},
     "paragraphs[1]: idx 0 is repeated"),
    ({"paragraphs": [{"idx": 0, "title": "T", "paragraph_text": " ", "is_supporting": True}]},
     "paragraphs[0]: key 'paragraph_text' is empty"),
    ({"question_decomposition": [{"question": "Q", "answer": "A", "paragraph_support_idx": 9}]},
     "question_decomposition[0]: paragraph_support_idx 9 is not a paragraph idx"),
])
def test_malformed_items_are_reported_with_their_line(tmp_path, change, words):
    path = _write(tmp_path, [ITEMS[0], {**ITEMS[1], **change}])
    with pytest.raises(IngestError) as caught:
        import_dataset(path, "musique")
    assert str(caught.value) == f"{path}:2: item 1: {words}"


def test_the_command_writes_the_pack_and_reports_what_it_skipped(tmp_path, capsys):
    out = tmp_path / "musique"
    assert main(["import-musique", str(SAMPLE), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == \
        f"wrote pack {out}: 10 documents, 4 questions, 0 triples, skipped 1 unanswerable"
    assert len(load_pack(out).questions) == 4


@pytest.mark.parametrize("hostile, line", [
    (lambda lines: lines[:2] + [lines[2][:200]], 3),                        # truncated download
    (lambda lines: lines[:1] + ['{"id": ' + "[" * 100 + "]" * 100 + "}"], 2),  # deep nesting
    (lambda lines: [lines[0].replace('"idx": 0', '"idx": ' + "7" * 30, 1)], 1),  # huge integer
])
def test_hostile_files_exit_2_with_the_line_and_write_nothing(tmp_path, capsys, hostile, line):
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(hostile(SAMPLE.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
    out = tmp_path / "musique"
    assert main(["import-musique", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}:{line}: ") and not out.exists()
