"""Rules as readable rows, and stored statistics beside recomputed ones."""

from __future__ import annotations

from dataclasses import replace

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule
from engine.rules.overview import rule_formula, rule_rows, statistics_rows


def test_a_rule_reads_as_a_horn_clause_with_a_variable_per_hop():
    rule = Rule("r", "citizen_of", ("born_in", "located_in"), 0.5, 3)
    assert rule_formula(rule) == "citizen_of(X, Y) ⇐ born_in(X, Z) ∧ located_in(Z, Y)"


def test_a_backwards_step_swaps_its_arguments():
    rule = Rule("r", "colleague", ("employer", "~employer"), 0.5, 3)
    assert rule_formula(rule) == "colleague(X, Y) ⇐ employer(X, Z) ∧ employer(Y, Z)"


def test_rows_carry_id_formula_text_support_and_confidence(mini_pack):
    row = rule_rows(mini_pack.rules)[0]
    assert row["id"] == "r1" and row["support"] == 3 and row["confidence"] == 0.75
    assert row["text"].startswith("If X was born in")


def test_recomputed_statistics_match_the_mini_pack_and_flag_drift(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    assert all(r["matches"] for r in statistics_rows(kg, mini_pack.rules))
    drifted = replace(mini_pack.rules[0], support=99)
    row = statistics_rows(kg, [drifted])[0]
    assert not row["matches"] and row["stored support"] == 99 and row["support"] == 3 and row["note"] == ""


def test_a_recount_the_time_limit_cut_is_no_match_and_says_why(mini_pack):
    row = statistics_rows(KnowledgeGraph.from_pack(mini_pack), mini_pack.rules[:1], seconds=-1.0)[0]
    assert not row["matches"] and row["note"].startswith("stopped after the -1 s time limit")
