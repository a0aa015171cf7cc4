"""The offline reader answers with the asked type (issue 27), on a made-up chess world no pack uses."""

from __future__ import annotations

import pytest

from engine.retrieval.embedder import load_embedder
from engine.tools.offline_classifier import OfflineQuestionClassifier, asked_nouns
from engine.tools.offline_reader import OfflineReader
from engine.tools.offline_reader.answer_types import defined_types
from engine.tools.offline_reader.names import Gazetteer
from engine.tools.offline_reader.sentences import evidence_sentences
from engine.trace import Hit


def hit(doc_id: str, title: str, text: str, rank: int = 0) -> Hit:
    return Hit(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=title, text=text, score=1.0, rank=rank)


OPEN = hit("open", "Ostrel Open",
           "The Ostrel Open is a rapid chess tournament hosted by Varnholt Club in Tessel every spring.")
CLUB = hit("club", "Varnholt Club", "Varnholt Club is a chess club founded by Ilse Marrow in 1921.")
TESSEL = hit("tessel", "Tessel", "Tessel is a harbour city on the Brask coast, 40 km north of Dunmere.")
MARROW = hit("marrow", "Ilse Marrow", "Ilse Marrow (born 1890) was a Lorvanian chess composer who founded a club.")
PEKKALA = hit("pekkala", "Jarno Pekkala",
              "Jarno Pekkala is a Lorvanian grandmaster who played for the Tessel Rooks in the club league.")
CUP = hit("cup", "Brask Cup",
          "The Brask Cup was founded in 1954 by admirers of the Ostrel Open and was first held in 1957.")
OPEN_YEAR = hit("open-year", "Ostrel Open", "The Ostrel Open, a rapid chess tournament in Tessel, began in 1931.")
VOICE = hit("voice", "Jarno Pekkala", "Jarno Pekkala is known for voicing the knight in Ostrel Quest.")
GAME = hit("game", "Ostrel Quest",
           "Ostrel Quest is a chess puzzle game developed by Varnholt Studios and released in 2011.")
STUDIO = hit("studio", "Varnholt Studios", "Varnholt Studios is a software company in Tessel.")


@pytest.fixture(scope="module")
def reader() -> OfflineReader:
    return OfflineReader(load_embedder(), entities=("Varnholt Club", "Ostrel Open", "Brask Cup"))


def test_the_asked_noun_is_read_from_the_question() -> None:
    assert asked_nouns("In which city is the Ostrel Open hosted?") == ("city",)
    assert asked_nouns("What type of venue is Varnholt Club?") == ("venue",)
    assert asked_nouns("Who founded Varnholt Club?") == ()


def test_a_name_is_typed_by_its_own_defining_sentence() -> None:
    sentences = evidence_sentences((CLUB, TESSEL, MARROW), ())
    types = defined_types(sentences, Gazetteer(()))
    assert types["varnholt club"].head == "club"
    assert types["tessel"].coarse == "place"
    assert types["ilse marrow"].coarse == "person"  # by the birth parenthesis, whatever the noun


def test_a_which_city_question_gets_the_city_not_the_club_beside_it(reader: OfflineReader) -> None:
    # guards the place typing (it passed before too: 'in Tessel' already weighed as a place)
    reading = reader.read("In which city is the Ostrel Open hosted?", [OPEN, CLUB, TESSEL])
    assert reading.answer == "Tessel"


def test_who_gets_the_person_not_the_club(reader: OfflineReader) -> None:
    reading = reader.read("Who founded the club that hosts the Ostrel Open?", [OPEN, CLUB, MARROW, TESSEL])
    assert reading.answer == "Ilse Marrow"


def test_a_nationality_adjective_is_not_the_team_asked_for(reader: OfflineReader) -> None:
    reading = reader.read("Which team did Jarno Pekkala play for?", [PEKKALA])
    assert reading.answer == "Tessel Rooks"


def test_an_either_or_question_starting_with_is_is_a_choice() -> None:
    kind = OfflineQuestionClassifier().classify("Is Tessel north or south of Dunmere?")
    assert (kind.kind, kind.options) == ("choice", ("north", "south"))
    reversed_ = OfflineQuestionClassifier().classify(
        "is the Brask Cup older than the Ostrel Open, or the other way round?")
    assert (reversed_.kind, reversed_.options) == ("choice", ("the Brask Cup", "the Ostrel Open"))
    assert OfflineQuestionClassifier().classify("Is Tessel a city?").kind == "yes_no"


def test_north_or_south_is_answered_with_a_direction_not_yes(reader: OfflineReader) -> None:
    reading = reader.read("Is Tessel north or south of Dunmere?", [TESSEL])
    assert reading.answer == "north"


def test_the_bridge_entity_is_not_the_answer_to_a_question_about_its_maker(reader: OfflineReader) -> None:
    question = "Jarno Pekkala is known for voicing a character in the chess puzzle game developed by which company?"
    assert reader.read(question, [VOICE, GAME, STUDIO]).answer == "Varnholt Studios"  # not the game itself


@pytest.mark.parametrize("question", [
    "How many years after the Ostrel Open was the Brask Cup founded?",
    "How many years passed between the start of the Ostrel Open and the founding of the Brask Cup?",
])
def test_a_difference_takes_one_year_from_each_named_thing(reader: OfflineReader, question: str) -> None:
    # 1954 - 1931, not 1957 - 1954: both of those years are the Brask Cup's
    assert reader.read(question, [CUP, OPEN_YEAR]).answer == "23"


def test_who_did_it_first_compares_the_event_years_not_birth_years(reader: OfflineReader) -> None:
    """'Who won the Ostrel Open first' asks for the win; a birth year beside the name ('born in', a life span)
    is not that year — with it, the one born earlier 'won first'."""
    mira = hit("mira", "Mira Okafor", "Mira Okafor, born in 1931, won the Ostrel Open in 1968.")
    tam = hit("tam", "Tam Heller", "Tam Heller (1942–2010) won the Ostrel Open in 1961.")
    reading = reader.read("Who won the Ostrel Open first, Mira Okafor or Tam Heller?", [mira, tam])
    assert reading.answer == "Tam Heller", reading.rationale
    assert "1961" in reading.rationale and "1931" not in reading.rationale

