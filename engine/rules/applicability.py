"""Whether a rule can answer a question, read from the question and the KG, not from an encoder (issue 27).

Measured on the spaceflight pack (never tuned on): with the encoder's similarity alone, 5 of its 13 `rule`
questions matched no rule and 4 matched one whose walk could not start from the question's entity (a
company rule for a city, a helicopter walked by an agency rule). Three checks transfer to any pack, since
they use only its relation names, its triples and English question grammar:

- **the walk starts**: the rule's body leads somewhere from an entity the question names — a rule whose
  walk cannot start answers nothing and must never be picked;
- **the shape fits**: a walk ends at a KG node, so a yes/no or "A or B" question is never a rule's; a
  "how many" question never fits a walk that ends at things (`KnowledgeGraph.entity_relations`), and a
  walk that ends at literals only fits a count or date question. A date shape alone does not
  rule an entity head out: the question typer reads "present-day country" as a date;
- **head agreement**: the share of the head relation's label words (stemmed) that the question uses —
  "headquartered in which country" names `based_in_country`'s "country", "lift off" names none of
  `launch_country`. The encoder's relation identification misses paraphrases with another relation's word
  in them ("headquartered" pulls towards `headquartered_in`, a body relation); the words do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule
from engine.rules.text import relation_label
from engine.rules.walk import Deadline, walk_body
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.tools.offline_reader.sentences import content_stems

NO_RULE_SHAPES = frozenset({"yes_no", "choice"})  # a walk ends at one node: never "yes", never one of two given
LITERAL_SHAPES = frozenset({"number", "date"})  # what a head with literal objects (years, counts) answers
CHECK_SECONDS = 0.5  # per question, for every rule's walk together; a cut walk counts as not starting


@dataclass(frozen=True)
class QuestionView:
    """What the checks read from one question: its linked entities, its answer shape and its word stems."""

    entities: tuple[str, ...]
    shape: str
    stems: frozenset[str]

    @classmethod
    def of(cls, question: str, abstract: str, kg: KnowledgeGraph) -> QuestionView:
        """`abstract` is the question with its entities replaced, so a name's words never count as agreement."""
        shape = OfflineQuestionClassifier().classify(question).kind
        return cls(tuple(kg.find_entities(question)), shape, content_stems(abstract))


def head_agreement(view: QuestionView, rule: Rule) -> float:
    """The share of the head relation's label stems the question uses, 0–1."""
    head = content_stems(relation_label(rule.head))
    return len(head & view.stems) / len(head) if head else 0.0


def shape_fits(view: QuestionView, rule: Rule, kg: KnowledgeGraph) -> bool:
    """Whether an end of the rule's walk can be the kind of answer the question asks for."""
    if view.shape in NO_RULE_SHAPES:
        return False
    if _ends_in_literal(rule, kg):
        return view.shape in LITERAL_SHAPES
    return view.shape != "number"


def _ends_in_literal(rule: Rule, kg: KnowledgeGraph) -> bool:
    """Whether the walk ends at a value (a year, a count): its last step follows a relation whose objects are
    mostly literals. The body decides, not the head: a head the KG states no fact of is still a rule's."""
    last = rule.body[-1]
    return not last.startswith("~") and last in kg.relations and last not in kg.entity_relations


def executable(view: QuestionView, rules: Sequence[Rule], kg: KnowledgeGraph,
               seconds: float = CHECK_SECONDS) -> frozenset[str]:
    """Ids of the rules whose body walk reaches an end from an entity the question names."""
    deadline = Deadline.after(seconds)
    return frozenset(rule.id for rule in rules
                     if any(walk_body(kg.follow, entity, rule.body, deadline).counts for entity in view.entities))
