"""The offline reader's relational phrases: what is answered on its own before the rest of the question."""

from __future__ import annotations

import pytest

from engine.tools.offline_reader import Gazetteer, question_hop
from engine.tools.offline_reader.names import relation_nouns

NAMES = Gazetteer(["Mira Solberg", "Velmark", "Ostland"], relations=["doctoral_advisor", "born_in", "founded_by"])


@pytest.mark.parametrize("question, phrase, sub_question", [
    ("Where was Mira Solberg's doctoral advisor born?", "Mira Solberg's doctoral advisor",
     "Who is Mira Solberg's doctoral advisor?"),
    # a verb after the relational noun is not part of the phrase
    ("At which university did Mira Solberg's doctoral advisor teach?", "Mira Solberg's doctoral advisor",
     "Who is Mira Solberg's doctoral advisor?"),
    ("Where was Mira Solberg's father born?", "Mira Solberg's father", "Who is Mira Solberg's father?"),
    ("Who supervised the doctorate of the physicist who discovered fission?",
     "the physicist who discovered fission", "Who discovered fission?"),
    ("Which river flows through the country whose capital is Velmark?", "the country whose capital is Velmark",
     "Which country's capital is Velmark?"),
    ("In which country is the city where Mira Solberg was born?", "the city where Mira Solberg was born",
     "Where Mira Solberg was born?"),
])
def test_relational_phrases_become_their_own_questions(question, phrase, sub_question):
    hop = question_hop(question, NAMES)
    assert hop is not None and (hop.phrase, hop.sub_question) == (phrase, sub_question)


@pytest.mark.parametrize("question", [
    "Who is Mira Solberg's nephew?",  # the phrase is the whole question: nothing left to rewrite
    "When was Mira Solberg born?",
    "What is Mira Solberg's country of citizenship?",  # an attribute, not a hop
])
def test_questions_without_a_hop(question):
    assert question_hop(question, NAMES) is None


def test_a_pack_relation_is_followed_though_no_built_in_noun_names_it():
    assert NAMES.relation_nouns == {"advisor"}  # 'born_in', 'founded_by': nothing to follow
    assert relation_nouns(["place_of_death", "capital_of", "flows_through", "lies_on", "sibling"]) == \
        {"place", "capital", "sibling"}
    question = "Where was Mira Solberg's lighthouse keeper born?"
    assert question_hop(question, Gazetteer(["Mira Solberg"])) is None
    hop = question_hop(question, Gazetteer(["Mira Solberg"], ["lighthouse_keeper"]))
    assert hop is not None and hop.sub_question == "What is Mira Solberg's lighthouse keeper?"
