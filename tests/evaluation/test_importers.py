"""HotpotQA files (adversarial and distractor formats) import as one pooled corpus plus questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.errors import IngestError
from engine.evaluation.importers import import_dataset
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack
from engine.knowledge.writer import write_pack

CURIE = "Marie Curie was a physicist born in Warsaw."
WARSAW = "Warsaw is the capital of Poland."
FAKE = "Jan Kowalski (born 1867) was a physicist born in Krakow."

ADVERSARIAL = [
    {"qas_id": "adv1", "question": "In which country was Marie Curie born?", "answer": "Poland",
     "paragraphs": [{"title": "Marie Curie", "context": CURIE, "is_supp": True},
                    {"title": "added", "context": FAKE, "is_supp": False},
                    {"title": "Warsaw", "context": WARSAW, "is_supp": True}],
     "rationale": [{"title": "Marie Curie", "sentence": CURIE}]},
    {"qas_id": "adv2", "question": "Who is older, Marie Curie or Pierre Curie?", "answer": "Pierre Curie",
     "paragraphs": [{"title": "Marie Curie", "context": CURIE, "is_supp": True},
                    {"title": "Pierre Curie", "context": "Pierre Curie was born in 1859.", "is_supp": True}],
     "rationale": []},
    {"qas_id": "adv3", "question": "Were both born in Poland?", "answer": "no",
     "paragraphs": [{"title": "Marie Curie", "context": CURIE, "is_supp": True}], "rationale": []},
    {"qas_id": "adv4", "question": "What word or phrase links radium and polonium?", "answer": "element",
     "paragraphs": [{"title": "Radium", "context": "Radium is an element.", "is_supp": True}],
     "rationale": []},
]

DISTRACTOR = [
    {"_id": "hp1", "question": "Which city is the capital of Marie Curie's birth country?",
     "answer": "Warsaw", "type": "bridge", "level": "medium",
     "supporting_facts": [["Marie Curie", 0], ["Warsaw", 0]],
     "context": [["Marie Curie", ["Marie Curie was a physicist", " born in Warsaw."]],
                 ["Warsaw", [WARSAW]],
                 ["Krakow", ["Krakow is a city in Poland."]]]},
    {"_id": "hp2", "question": "Are Warsaw and Krakow both in Poland?", "answer": "yes",
     "type": "comparison", "level": "hard",
     "supporting_facts": [["Warsaw", 0], ["Krakow", 0]],
     "context": [["Warsaw", [WARSAW]], ["Krakow", ["Krakow is a city in Poland."]]]},
]


def import_hotpot(path: Path, name: str | None = None) -> Pack:
    return import_dataset(path, "hotpot", name).pack


def _file(tmp_path: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(IngestError) as caught:
        import_hotpot(path)
    return str(caught.value)


# --- adversarial format -----------------------------------------------------------------------

def test_adversarial_paragraphs_are_pooled_and_deduplicated_by_content(tmp_path):
    pack = import_hotpot(_file(tmp_path, ADVERSARIAL), name="adv")
    assert pack.info.name == "adv"
    texts = [d.text for d in pack.documents]
    assert texts.count(CURIE) == 1  # shared by three questions
    assert len(pack.documents) == 5
    assert all(d.id.startswith("hp-") and len(d.id) == 11 for d in pack.documents)


def test_adversarial_questions_point_at_their_supporting_paragraphs(tmp_path):
    pack = import_hotpot(_file(tmp_path, ADVERSARIAL))
    docs = {d.text: d.id for d in pack.documents}
    first = pack.questions_by_id["adv1"]
    assert first.answers == ("Poland",)
    assert first.supporting_docs == (docs[CURIE], docs[WARSAW])
    assert first.topic_entities == ("Marie Curie", "Warsaw")
    assert first.hops == 2
    assert first.extra["source_id"] == "adv1"
    assert first.extra["adversarial_docs"] == [docs[FAKE]]


def test_a_distractor_titled_added_is_named_after_its_subject(tmp_path):
    pack = import_hotpot(_file(tmp_path, ADVERSARIAL))
    fake = next(d for d in pack.documents if d.text == FAKE)
    assert fake.title == "Jan Kowalski"


def test_html_escaped_titles_are_written_as_their_texts_write_them(tmp_path):
    """HotpotQA escapes titles ("&amp;") but not text; an escaped title is never mentioned (issue 27)."""
    item = {"_id": "hp9", "question": "Where is the watchmaker of Antoni Patek based?", "answer": "Geneva",
            "type": "bridge", "level": "hard", "supporting_facts": [["Antoni Patek", 0], ["Patek &amp; Co.", 0]],
            "context": [["Antoni Patek", ["Antoni Patek founded Patek & Co. in 1851."]],
                        ["Patek &amp; Co.", ["Patek & Co. is based in Geneva."]]]}
    pack = import_hotpot(_file(tmp_path, [item]))
    assert [d.title for d in pack.documents] == ["Antoni Patek", "Patek & Co."]
    assert pack.questions[0].topic_entities == ("Antoni Patek", "Patek & Co.")


def test_adversarial_question_types_come_from_answers_and_options(tmp_path):
    types = {q.id: q.type for q in import_hotpot(_file(tmp_path, ADVERSARIAL)).questions}
    assert types == {"adv1": "multi_hop", "adv2": "comparison", "adv3": "comparison", "adv4": "multi_hop"}


def test_ids_are_stable_across_imports(tmp_path):
    path = _file(tmp_path, ADVERSARIAL)
    assert import_hotpot(path).documents == import_hotpot(path).documents


# --- distractor format ------------------------------------------------------------------------

def test_distractor_format_pools_context_and_keeps_type_and_level(tmp_path):
    pack = import_hotpot(_file(tmp_path, DISTRACTOR, name="hotpot_dev_distractor.json"))
    assert pack.info.name == "hotpot_dev_distractor"
    assert [d.title for d in pack.documents] == ["Marie Curie", "Warsaw", "Krakow"]
    assert pack.documents[0].text == "Marie Curie was a physicist born in Warsaw."
    bridge, comparison = pack.questions
    assert (bridge.type, comparison.type) == ("multi_hop", "comparison")
    assert bridge.supporting_docs == (pack.documents[0].id, pack.documents[1].id)
    assert bridge.topic_entities == ("Marie Curie", "Warsaw")
    assert bridge.extra["level"] == "medium"
    assert bridge.extra["source_id"] == "hp1"
    assert bridge.extra["supporting_facts"] == [["Marie Curie", 0], ["Warsaw", 0]]


def test_an_imported_pack_writes_and_loads_back(tmp_path):
    pack = import_hotpot(_file(tmp_path, DISTRACTOR))
    loaded = load_pack(write_pack(pack, tmp_path / "pack"))
    assert loaded.documents == pack.documents
    assert loaded.questions == pack.questions
    assert [q.extra for q in loaded.questions] == [q.extra for q in pack.questions]


def test_repeated_question_ids_are_made_unique(tmp_path):
    pack = import_hotpot(_file(tmp_path, [DISTRACTOR[0], DISTRACTOR[0]]))
    assert [q.id for q in pack.questions] == ["hp1", "hp1-2"]
    assert len(pack.documents) == 3


# --- malformed input --------------------------------------------------------------------------

def test_a_file_that_is_not_json_is_refused_with_its_line(tmp_path):
    path = _file(tmp_path, '[\n{"_id": "x",\n')
    assert _error(path).startswith(f"{path}:3: not valid JSON")


def test_a_missing_file_is_refused(tmp_path):
    assert "no such file" in _error(tmp_path / "ghost.json")


@pytest.mark.parametrize("data,words", [({"data": []}, "expected a JSON list of questions, got dict"),
                                        ([], "got an empty list"),
                                        ([{"id": 1, "text": "?"}], "item 0: unknown dataset format")])
def test_a_file_of_the_wrong_shape_is_refused(tmp_path, data, words):
    assert words in _error(_file(tmp_path, data))


def test_missing_keys_are_reported_with_line_and_item_index_for_every_bad_item(tmp_path):
    bad = [dict(ADVERSARIAL[0]), {k: v for k, v in ADVERSARIAL[1].items() if k != "answer"}, "oops",
           {**ADVERSARIAL[2], "paragraphs": [{"title": "T", "is_supp": True}]}]
    path = _file(tmp_path, "[\n" + ",\n".join(json.dumps(item) for item in bad) + "\n]\n")  # item i on line i+2
    message = _error(path)
    assert message.splitlines() == [
        f"{path}:3: item 1: missing key 'answer'",
        f"{path}:4: item 2: expected an object, got str",
        f"{path}:5: item 3: paragraph 0: missing key 'context'",
    ]


def test_distractor_items_with_bad_structure_are_reported(tmp_path):
    wrong_type = {**DISTRACTOR[0], "type": "riddle"}
    lost_title = {**DISTRACTOR[0], "supporting_facts": [["Nowhere", 0]]}
    bad_context = {**DISTRACTOR[0], "context": [["Warsaw", "not a list"]]}
    path = _file(tmp_path, [DISTRACTOR[0], wrong_type, lost_title, bad_context])
    lines = _error(path).splitlines()
    assert lines[0] == f"{path}:1: item 1: unknown type 'riddle'; allowed: bridge, comparison"
    assert lines[1] == f"{path}:1: item 2: supporting title(s) ['Nowhere'] are not in its context"
    assert lines[2].startswith(f"{path}:1: item 3: context[0]: expected [title, [sentences]]")


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000 + "]" * 100_000, ":1: nested deeper than"),          # RecursionError in json.loads
    ('[{"_id": 1' + "9" * 5000 + "}]", ":1: integer with 5001 digits"),  # ValueError past 4,300 digits
    ('[\n{"question": "\\ud800"}]', ":2: a string contains a lone UTF-16 surrogate"),
])
def test_hostile_json_is_refused_with_its_line_not_a_crash(tmp_path, text, words):
    path = _file(tmp_path, text)
    assert _error(path).startswith(f"{path}{words}")


def test_a_folder_given_as_the_file_is_refused(tmp_path):
    assert _error(tmp_path) == f"{tmp_path}: is a folder; give the dataset's .json or .jsonl file"
