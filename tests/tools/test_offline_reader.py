"""The offline extractive reader on hand-made evidence, with the real MiniLM encoder."""

from __future__ import annotations

import pytest

from engine.knowledge.records import Triple
from engine.retrieval.embedder import load_embedder
from engine.tools.base import IDK, Reading
from engine.tools.offline_reader import OfflineReader, fact_sentence
from engine.trace import CalculationStep, Hit


def hit(doc_id: str, title: str, text: str, rank: int = 0) -> Hit:
    return Hit(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=title, text=text, score=1.0, rank=rank)


MARIE = hit(
    "marie", "Marie Curie",
    "Marie Curie was a Polish-born physicist and chemist. She was born on 7 November 1867 in Warsaw. "
    "She married Pierre Curie in 1895. She won the Nobel Prize in Physics in 1903 and the Nobel Prize "
    "in Chemistry in 1911. In 1898 the couple discovered two elements, polonium and radium. "
    "She died in 1934 at Passy.",
)
PIERRE = hit(
    "pierre", "Pierre Curie",
    "Pierre Curie was a French physicist. He was born on 15 May 1859 in Paris. "
    "He died in 1906 in a street accident in Paris.",
)
MARS = hit("mars", "Mars", "Mars is the fourth planet from the Sun. Mars has two small moons, Phobos and Deimos.")
BREAD = hit(
    "bread", "Bread",
    "Bread is a staple food prepared from a dough of flour and water, usually by baking. "
    "Throughout recorded history it has been popular around the world.",
)
ADA = hit(
    "ada", "Ada Brun",
    "Ada Brun was a chemist. She completed her doctorate at the University of Lyon under Victor Lenoir.",
)
LENOIR = hit("lenoir", "Victor Lenoir", "Victor Lenoir was a French chemist born in Grenoble in 1870.")
ENTITIES = ("Marie Curie", "Pierre Curie", "Warsaw", "Paris", "Ada Brun", "Victor Lenoir", "Polonium", "Radium")


@pytest.fixture(scope="module")
def reader() -> OfflineReader:
    return OfflineReader(load_embedder(), entities=ENTITIES, relations=("spouse", "doctoral_advisor", "born_in"))


def test_reader_answers_who_with_a_person_named_in_the_evidence(reader: OfflineReader) -> None:
    reading = reader.read("Who did Marie Curie marry?", [MARIE, PIERRE])
    assert reading.answer == "Pierre Curie"
    assert not reading.refused


def test_reader_answers_when_with_the_date_as_written(reader: OfflineReader) -> None:
    assert reader.read("When was Marie Curie born?", [MARIE, PIERRE]).answer == "7 November 1867"


def test_reader_answers_what_year_with_the_year_alone(reader: OfflineReader) -> None:
    assert reader.read("In what year was Pierre Curie born?", [PIERRE, MARIE]).answer == "1859"


def test_reader_answers_where_with_a_place(reader: OfflineReader) -> None:
    assert reader.read("Where was Pierre Curie born?", [MARIE, PIERRE]).answer == "Paris"


def test_reader_cites_the_document_the_answer_comes_from(reader: OfflineReader) -> None:
    reading = reader.read("Where was Pierre Curie born?", [MARIE, PIERRE])
    assert reading.citations[0] == "pierre"
    assert "marie" not in reading.citations


def test_reader_answers_how_many_with_the_number_written(reader: OfflineReader) -> None:
    assert reader.read("How many moons does Mars have?", [MARS, BREAD]).answer == "two"


def test_reader_answers_which_first_by_comparing_years_with_the_calculator(reader: OfflineReader) -> None:
    reading = reader.read("Who was born first, Marie Curie or Pierre Curie?", [MARIE, PIERRE])
    assert reading.answer == "Pierre Curie"
    steps = [s for s in reading.steps if isinstance(s, CalculationStep)]
    assert [(s.expression, s.result) for s in steps] == [("min(1867, 1859)", 1859.0)]
    assert set(reading.citations) == {"marie", "pierre"}


def test_reader_compares_death_years_when_asked_who_died_first(reader: OfflineReader) -> None:
    reading = reader.read("Who died first, Marie Curie or Pierre Curie?", [MARIE, PIERRE])
    assert reading.answer == "Pierre Curie"
    assert reading.steps[0].expression == "min(1934, 1906)"


def test_reader_computes_a_year_difference_and_records_the_calculation(reader: OfflineReader) -> None:
    reading = reader.read("How many years after Pierre Curie was Marie Curie born?", [MARIE, PIERRE])
    assert reading.answer == "8"
    assert reading.steps[0].expression == "1867 - 1859"


def test_reader_answers_yes_when_the_evidence_states_the_question(reader: OfflineReader) -> None:
    assert reader.read("Was Marie Curie born in Warsaw?", [MARIE]).answer == "yes"


def test_reader_does_not_say_yes_when_the_evidence_names_another_place(reader: OfflineReader) -> None:
    reading = reader.read("Was Marie Curie born in Paris?", [MARIE])
    assert reading.answer != "yes"
    assert "Warsaw" in reading.rationale


def test_reader_says_i_dont_know_on_irrelevant_evidence(reader: OfflineReader) -> None:
    reading = reader.read("Who discovered penicillin?", [BREAD, MARS])
    assert reading == Reading(
        answer=IDK, citations=reading.citations, confidence=reading.confidence, refused=True,
        rationale=reading.rationale, steps=reading.steps,
    )
    assert reading.confidence < reader.threshold
    assert reading.rationale


def test_reader_refuses_below_its_threshold_and_keeps_the_best_guess(reader: OfflineReader) -> None:
    strict = OfflineReader(reader.embedder, entities=ENTITIES, threshold=1.01)
    reading = strict.read("Where was Pierre Curie born?", [PIERRE])
    assert (reading.answer, reading.refused) == (IDK, True)
    assert "best guess 'Paris'" in reading.rationale


def test_reader_answers_from_kg_facts_alone_without_citations(reader: OfflineReader) -> None:
    facts = [Triple("Marie Curie", "born_in", "Warsaw"), Triple("Marie Curie", "spouse", "Pierre Curie")]
    reading = reader.read("Where was Marie Curie born?", [], facts)
    assert reading.answer == "Warsaw"
    assert reading.citations == ()


def test_reader_follows_a_relation_to_the_next_document(reader: OfflineReader) -> None:
    reading = reader.read("In which city was Ada Brun's doctoral advisor born?", [ADA, LENOIR])
    assert reading.answer == "Grenoble"
    assert set(reading.citations) == {"ada", "lenoir"}
    assert "Victor Lenoir" in reading.rationale


def test_reader_lists_every_item_a_plural_question_asks_for(reader: OfflineReader) -> None:
    reading = reader.read("Which two elements did Marie Curie and Pierre Curie discover in 1898?", [MARIE, PIERRE])
    assert reading.answer == "polonium and radium"


def test_reader_never_answers_with_the_questions_own_names(reader: OfflineReader) -> None:
    reading = reader.read("Who was Pierre Curie?", [PIERRE])
    assert "Pierre Curie" not in reading.answer


def test_reader_refuses_empty_evidence_and_empty_questions(reader: OfflineReader) -> None:
    assert reader.read("Where was Marie Curie born?", []).refused
    assert reader.read("", [MARIE]).refused
    assert reader.read("   ", [MARIE]).answer == IDK


@pytest.mark.parametrize(
    "text",
    ["", "   ", "x" * 50_000, "word " * 10_000, "??? !!! ...", "\x00\x01 text", "1867 1867 1867", "A. B. C. D."],
)
def test_reader_never_raises_on_junk_evidence(reader: OfflineReader, text: str) -> None:
    reading = reader.read("Where was Marie Curie born?", [hit("junk", "", text)])
    assert isinstance(reading, Reading)
    assert reading.refused


@pytest.mark.parametrize(
    "question",
    ["Who?", "How many years between?", "Is it, or is it not?", "Which came first, or?", "x" * 3000,
     "How old was she when?", "Who was born first, A or B?"],
)
def test_reader_never_raises_on_odd_questions(reader: OfflineReader, question: str) -> None:
    reading = reader.read(question, [MARIE, PIERRE])
    assert isinstance(reading, Reading)
    assert 0.0 <= reading.confidence <= 1.0


def test_reader_turns_an_internal_failure_into_a_refusal_with_an_error_step(reader: OfflineReader) -> None:
    class Broken:
        doc_id = "b"
        title = "t"

        @property
        def text(self) -> str:
            raise RuntimeError("unreadable chunk")

    reading = reader.read("Where was Marie Curie born?", [Broken()])  # type: ignore[list-item]
    assert reading.refused
    assert reading.steps[0].kind == "error"
    assert "unreadable chunk" in reading.rationale


def test_fact_sentence_reads_a_triple_as_text() -> None:
    assert fact_sentence(Triple("Marie Curie", "born_in", "Warsaw")) == "Marie Curie born in Warsaw"
    assert fact_sentence(Triple("Marie Curie", "award_received", "Nobel Prize", "1903")) == (
        "Marie Curie award received Nobel Prize (1903)"
    )
