"""RAS stops one hop short no more (issue 27): an answer that is not the kind of thing asked for is a bridge."""

from __future__ import annotations

from engine.knowledge.records import Document, Pack, PackInfo, Triple
from engine.methods.ras.bridge import beyond, bridged_question, is_bridge, reaches
from engine.runner import Workbench
from engine.tools.base import Reading
from engine.tools.offline_reader.question_grammar import asked_noun, describes_another
from engine.trace import DecisionStep, RetrievalStep

LABEL = "Quiet Lanterns signed with the record label based in what city?"


def label_pack() -> Pack:
    """A music pack (no shipped pack is about music): band → label → city, one fact per document."""
    docs = (
        Document("l1", "Quiet Lanterns", "Quiet Lanterns is a folk band from the coast. In 2004 Quiet Lanterns "
                 "signed with the record label Copperleaf Records.", entities=("Quiet Lanterns", "Copperleaf Records")),
        Document("l2", "Copperleaf Records", "Copperleaf Records is an independent record label. Copperleaf Records "
                 "is based in Ravensholm.", entities=("Copperleaf Records", "Ravensholm")),
        Document("l3", "Ravensholm", "Ravensholm is a port city in the north with a fish market.",
                 entities=("Ravensholm",)),
        Document("l4", "Fiddle", "The fiddle is a bowed string instrument played in folk music.", entities=()),
    )
    triples = (Triple("Quiet Lanterns", "record_label", "Copperleaf Records"),
               Triple("Copperleaf Records", "based_in", "Ravensholm"))
    return Pack(PackInfo("labels"), docs, triples)


def test_the_asked_noun_follows_question_grammar():
    assert asked_noun(LABEL) == "city"
    assert asked_noun("Which Baroque composer wrote the oratorio?") == "composer"
    assert asked_noun("What is the nationality of the goalkeeper who saved the penalty?") == "nationality"
    assert asked_noun("What other bridge crosses the same river?") == "bridge"
    assert asked_noun("What kind of instrument does the fiddler of the band play?") == "instrument"
    assert asked_noun("Which lead singers of Quiet Lanterns wrote the song?") == "singers"  # 'of' ends the noun
    assert asked_noun("What was the birth name of the singer?") == ""  # a generic noun names no kind
    assert asked_noun("Who founded the label?") == asked_noun("When was it founded?") == ""


def test_an_answer_reaches_the_asked_noun_only_where_a_sentence_names_both():
    texts = ["Copperleaf Records is an independent record label.", "Ravensholm is a port city in the north."]
    assert not reaches("Copperleaf Records", "city", texts)
    assert reaches("Ravensholm", "city", texts)
    assert reaches("Ravensholm, Northland", "city", texts)  # a name's qualifier is not needed
    assert reaches("1987", "year", ()) and reaches("4,210", "population", ())  # numbers are the reader's to type
    assert reaches("anything", "", ())  # no asked noun: nothing to check


def test_only_a_question_describing_another_entity_can_stop_one_hop_short():
    assert describes_another(LABEL)  # 'the record label based in …'
    assert describes_another("What is the nationality of the goalkeeper who saved the penalty?")
    assert not describes_another("Which oratorio did the Thomaskirche choir premiere?")  # names only
    assert not describes_another("What is the capital of Norway?")  # the phrase it asks with
    one_hop = "Which harbour does the Northland Ferry Company sail from?"
    assert not is_bridge(one_hop, Reading("Ravensholm", (), 0.9), ["Ferries leave Ravensholm daily."])


def test_a_listed_answer_to_a_question_for_several_things_is_never_a_bridge():
    question = "Which two labels signed the band that played the festival?"
    assert asked_noun(question) == "labels"
    assert not is_bridge(question, Reading("Copperleaf Records and Tinroof", (), 0.9), ())


def test_a_confident_answer_that_is_not_what_is_asked_is_a_bridge_and_the_next_hop_replaces_it():
    texts = ["Copperleaf Records is an independent record label."]
    bridge = Reading("Copperleaf Records", ("l1",), 0.8)
    assert is_bridge(LABEL, bridge, texts)
    assert bridged_question(LABEL, "Copperleaf Records").endswith("what city (Copperleaf Records)?")
    onward = beyond(LABEL, bridge, Reading("Ravensholm", ("l2",), 0.7), needed=0.45)
    assert onward is not None and onward.answer == "Ravensholm" and onward.citations == ("l1", "l2")
    assert beyond(LABEL, bridge, Reading("Ravensholm", ("l2",), 0.2), needed=0.45) is None  # not confident
    assert beyond(LABEL, bridge, Reading("Copperleaf Records", ("l2",), 0.9), needed=0.45) is None


def test_ras_asks_one_hop_past_the_bridge_before_declaring_sufficiency(settings):
    trace = Workbench(label_pack(), settings).ask(LABEL, "ras", {"k": 1, "min_confidence": 0.0})
    queries = [s.query for s in trace.steps if isinstance(s, RetrievalStep)]
    assert any("Copperleaf Records" in q for q in queries[1:]), queries
    assert trace.answer.text == "Ravensholm"
    decisions = " ".join(s.detail for s in trace.steps if isinstance(s, DecisionStep))
    assert "not the city asked for" in decisions
