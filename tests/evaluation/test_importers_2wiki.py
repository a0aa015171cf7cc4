"""2WikiMultiHopQA dev/train JSON imports as a pooled corpus, typed questions and Wikidata triples."""

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

SAMPLE = TESTS / "fixtures" / "datasets" / "2wiki_dev_sample.json"
ITEMS = json.loads(SAMPLE.read_text(encoding="utf-8"))
HOTPOT_ITEM = {"_id": "hp1", "question": "Q?", "answer": "A", "type": "bridge", "level": "easy",
               "supporting_facts": [["T", 0]], "context": [["T", ["Text."]]]}


@pytest.fixture(scope="module")
def pack():
    return import_dataset(SAMPLE, "2wiki").pack


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_paragraphs_shared_by_questions_are_pooled_once(pack):
    raw = sum(len(item["context"]) for item in ITEMS)
    titles = [d.title for d in pack.documents]
    assert (raw, len(pack.documents)) == (18, 10)
    assert len(set(titles)) == len(titles) and titles.count("Metropolis") == 1
    assert all(d.id.startswith("2w-") for d in pack.documents)
    assert pack.info.title == "2WikiMultiHopQA" and "Apache" in pack.info.license


def test_the_four_types_map_to_comparison_and_multi_hop(pack):
    types = [(q.extra["2wiki_type"], q.type, q.hops) for q in pack.questions]
    assert types == [("comparison", "comparison", 2), ("compositional", "multi_hop", 2),
                     ("inference", "multi_hop", 2), ("bridge_comparison", "comparison", 4),
                     ("compositional", "multi_hop", 2)]


def test_supporting_docs_are_the_titles_named_in_supporting_facts(pack):
    titles = {d.id: d.title for d in pack.documents}
    for question, item in zip(pack.questions, ITEMS):
        assert sorted(titles[d] for d in question.supporting_docs) == sorted({t for t, _ in item["supporting_facts"]})
        assert question.answers == (item["answer"],)
        assert question.id == question.extra["source_id"] == item["_id"]


def test_topic_entities_are_the_evidence_subjects_no_other_evidence_leads_to(pack):
    assert [q.topic_entities for q in pack.questions] == [
        ("Nosferatu", "Metropolis"), ("Metropolis",), ("Charles III",), ("Metropolis", "Nosferatu"), ("Nosferatu",)]


def test_evidences_become_deduplicated_snake_case_triples(pack):
    lines = [(t.head, t.relation, t.tail) for t in pack.triples]
    assert len(lines) == len(set(lines)) == 10  # 12 evidences; "Metropolis director Fritz Lang" and Murnau's repeat
    assert ("Fritz Lang", "date_of_birth", "5 December 1890") in lines
    assert ("F. W. Murnau", "place_of_birth", "Bielefeld") in lines
    assert pack.questions[3].extra["evidences"][2] == ["Fritz Lang", "date_of_birth", "5 December 1890"]


def test_the_pack_writes_and_loads_back_with_its_triples(pack, tmp_path):
    loaded = load_pack(write_pack(pack, tmp_path / "wiki"))
    assert loaded.documents == pack.documents and loaded.questions == pack.questions
    assert loaded.triples == pack.triples


def test_limit_keeps_the_first_questions_and_only_their_paragraphs():
    limited = import_dataset(SAMPLE, "2wiki", limit=2).pack
    assert [q.question for q in limited.questions] == [ITEMS[0]["question"], ITEMS[1]["question"]]
    assert len(limited.documents) == 5


def test_evidences_with_tabs_and_newlines_stay_one_triples_line(tmp_path):
    item = {**ITEMS[4], "evidences": [["F. W.\tMurnau", "Place  of\nbirth", " Bielefeld "]]}
    triple, = import_dataset(_write(tmp_path, [item]), "2wiki").pack.triples
    assert (triple.head, triple.relation, triple.tail) == ("F. W. Murnau", "place_of_birth", "Bielefeld")


@pytest.mark.parametrize("change, words", [
    ({"type": "bridge"}, "unknown type 'bridge'; allowed: comparison, inference, compositional, bridge_comparison"),
    ({"evidences": [["Nosferatu", "director"]]}, "evidences[0]: expected [subject, relation, object]"),
    ({"evidences": [["Nosferatu", " -- ", "F. W. Murnau"]]}, "evidences[0]: subject, relation and object must not"),
    ({"supporting_facts": [["Nowhere", 0]]}, "supporting title(s) ['Nowhere'] are not in its context"),
])
def test_malformed_items_are_reported_with_line_and_index(tmp_path, change, words):
    path = _write(tmp_path, [ITEMS[0], {**ITEMS[1], **change}])
    with pytest.raises(IngestError) as caught:
        import_dataset(path, "2wiki")
    assert str(caught.value).startswith(f"{path}:1: item 1: {words}")


def test_a_hotpot_file_is_sent_to_import_hotpot_and_a_2wiki_file_to_import_2wiki(tmp_path):
    with pytest.raises(IngestError, match="this is a HotpotQA \\(distractor setting\\) file; import it with "
                                          "`import-hotpot`"):
        import_dataset(_write(tmp_path, [HOTPOT_ITEM]), "2wiki")
    with pytest.raises(IngestError, match="this is a 2WikiMultiHopQA file; import it with `import-2wiki`"):
        import_dataset(SAMPLE, "hotpot")


def test_the_command_writes_the_pack_and_reports_its_size(tmp_path, capsys):
    out = tmp_path / "wiki"
    assert main(["import-2wiki", str(SAMPLE), "--out", str(out), "--limit", "3"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote pack {out}: 8 documents, 3 questions, 6 triples"
    assert load_pack(out).info.name == "wiki"


@pytest.mark.parametrize("cut", [
    lambda text: text[: len(text) // 2],                        # truncated download
    lambda text: text.replace('"_id"', '"depth": ' + "[" * 80 + "]" * 80 + ', "_id"', 1),
    lambda text: text.replace('"1922"', "1" + "0" * 40, 1),     # an integer past SQLite's range
])
def test_hostile_files_exit_2_with_the_line_and_write_nothing(tmp_path, capsys, cut):
    path = tmp_path / "dev.json"
    path.write_text(cut(SAMPLE.read_text(encoding="utf-8")), encoding="utf-8")
    out = tmp_path / "wiki"
    assert main(["import-2wiki", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}:") and not out.exists()


def test_a_negative_limit_is_refused(tmp_path, capsys):
    assert main(["import-2wiki", str(SAMPLE), "--out", str(tmp_path / "w"), "--limit", "-1"]) == 2
    assert "limit -1 is negative" in capsys.readouterr().err
