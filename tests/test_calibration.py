"""Calibrated offline confidence (issue 17): the shipped model, the features, the refusal below the run's
min_confidence (its AnswerPolicy, issue 24), and the fitting script."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from engine.calibration import FEATURES, CalibrationModel, Derived, answer_features, default_model, derivations, settle
from engine.calibration.features import Statement, derived_support, statement
from engine.calibration.model import MODEL_FILE
from engine.errors import CheckpointError
from engine.knowledge.ingest import ingest_paths
from engine.methods.base import METHODS
from engine.params import DEFAULT_MIN_CONFIDENCE, AnswerPolicy, param_specs
from engine.trace import AnswerStep, CalculationStep, DecisionStep, Edge, GraphDeltaStep, Hit, RetrievalStep
from paths import ROOT
from pdf_file import pdf_bytes

GUESS = AnswerStep(iteration=1, text="1906", confidence=0.6, backend="offline", citations=("m07",))
STEPS = (RetrievalStep(iteration=1, title="t", query="q", retriever="hybrid",
                       hits=(Hit("m07", "m07#0", "Grace Hopper", "Grace Hopper was born in 1906 in New York.", 0.9,
                                 1),)),)
HALF = CalibrationModel(weights={"raw_logit": 1.0}, intercept=0.0)  # p = the raw score itself
BUILT_IN = ("vanilla", "rulerag", "tog2", "ras", "hybrid", "r2ag")


def test_the_shipped_model_loads_names_only_known_features_and_says_what_it_was_fitted_on():
    model = default_model()
    assert set(model.weights) == set(FEATURES)
    assert model.fitted_on["packs"] and model.fitted_on["report"] and model.fitted_on["threshold"] == 0.5
    assert model.weights["raw_logit"] > 0  # the method's own score counts for the answer, never against it
    with pytest.raises(CheckpointError, match="unknown features"):
        CalibrationModel.from_dict({"weights": {"method_is_demo": 1.0}, "intercept": 0.0})


def test_features_are_read_from_the_question_the_answer_and_the_runs_evidence_only():
    values = answer_features("How many moons does Mars have?", "Phobos", 0.5)
    assert values["shape_mismatch"] == 1.0  # no number for 'how many'
    assert answer_features("Which river flows through Lyon?", "Rhône", 0.5)["shape_mismatch"] == 0.0
    stated = answer_features("When was Grace Hopper born?", "1906", 0.5, [STEPS[0].hits[0].text, "Other text."])
    assert (stated["answer_support"], stated["answer_beyond_top"]) == (1 / 3, 0.0)
    linked = answer_features("Where was Ada born?", "Turin", 0.5, facts=[("Ada", "Turin")])
    assert linked["answer_in_graph"] == 1.0 and answer_features("Where was Ada born?", "Turin", 0.5,
                                                                facts=[("Bo", "Turin")])["answer_in_graph"] == 0.0
    assert math.isclose(answer_features("Q?", "A", 0.5)["raw_logit"], 0.0, abs_tol=1e-12)
    assert math.isfinite(answer_features("Q?", "A", 1.0)["raw_logit"])  # 0 and 1 are clipped, never infinite


def test_below_min_confidence_an_offline_answer_becomes_a_refusal_that_names_its_best_guess():
    refused = settle(GUESS, "When was Grace Hopper born?", AnswerPolicy(0.7), STEPS, model=HALF)
    assert refused.refused and refused.text == "I don't know" and refused.confidence == 0.6
    assert refused.title == "Refused: confidence 0.60 is below min_confidence 0.70 (best guess: '1906')"
    assert refused.guess == "1906"  # kept for scoring: AUROC ranks the guess a refusal held back
    assert refused.min_confidence == 0.7  # the card says why from the fields, never from the title
    kept = settle(GUESS, "When was Grace Hopper born?", AnswerPolicy(0.5), STEPS, model=HALF)
    assert (kept.text, kept.refused, kept.confidence, kept.min_confidence) == ("1906", False, 0.6, None)
    never = CalibrationModel({"raw_logit": 1.0}, -30.0)
    assert not settle(GUESS, "Q?", AnswerPolicy(0.0), STEPS, model=never).refused
    assert not settle(GUESS, "Q?", None, STEPS, model=never).refused


def test_only_offline_answers_are_calibrated_and_refusals_stay_as_they_are():
    served = AnswerStep(iteration=1, text="1906", confidence=0.2, backend="openai")
    assert settle(served, "Q?", AnswerPolicy(0.9), STEPS, model=HALF) is served
    refusal = AnswerStep(iteration=1, text="I don't know", refused=True, backend="offline")
    assert settle(refusal, "Q?", AnswerPolicy(0.9), STEPS, model=HALF) is refusal


def test_min_confidence_is_the_runs_policy_no_methods_param_and_a_run_records_the_calibrated_value(mini_workbench):
    spec = param_specs(AnswerPolicy)[0]  # the time limit is the second field
    assert (spec.name, spec.default, spec.min, spec.max) == ("min_confidence", DEFAULT_MIN_CONFIDENCE, 0.0, 1.0)
    for method in BUILT_IN:
        assert "min_confidence" not in {s.name for s in param_specs(METHODS[method].Params)}
    trace = mini_workbench.ask("When was Grace Hopper born?", "vanilla", policy=AnswerPolicy(0.0))
    raw = type(mini_workbench)(mini_workbench.pack, mini_workbench.settings, calibrated=False).ask(
        "When was Grace Hopper born?", "vanilla", policy=AnswerPolicy(0.0))
    from engine.calibration import graph_facts, retrieved_documents

    expected = default_model().probability(raw.question, raw.answer.text, raw.answer.confidence,
                                           retrieved_documents(raw.steps), graph_facts(raw.steps))
    assert trace.answer.text == raw.answer.text == "1906"
    assert trace.answer.confidence == pytest.approx(expected, abs=1e-4)
    strict = mini_workbench.ask("When was Grace Hopper born?", "vanilla", policy=AnswerPolicy(1.0))
    assert strict.answer.refused and (strict.answer.guess, strict.answer.min_confidence) == ("1906", 1.0)
    assert strict.policy == AnswerPolicy(1.0)  # the head records what refused, for a replay


def test_a_graph_fact_tying_the_question_to_the_answer_counts_from_the_trace():
    from engine.calibration import graph_facts

    delta = GraphDeltaStep(iteration=1, title="g", added_edges=(Edge("Ada", "born_in", "Turin"),))
    assert graph_facts([delta, STEPS[0]]) == [("Ada", "Turin")]


def test_the_fitting_script_fits_rows_and_reports_held_out_packs(tmp_path):
    def rows(name: str, n: int) -> str:
        path = tmp_path / f"{name}.jsonl"
        lines = [{"pack": name, "method": "vanilla", "question_id": f"{name}{i}", "question": f"When was P{i} born?",
                  "answer": str(1900 + i), "raw": 0.9 if i % 2 else 0.2, "refused": False, "right": bool(i % 2),
                  "em": float(i % 2),
                  "evidence": [f"P{i} was born in {1900 + i}."], "facts": []} for i in range(n)]
        path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        return str(path)

    out = tmp_path / "model.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_calibration.py"), "fit", rows("a", 40),
                           rows("b", 40), "--test", rows("c", 20), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    model = CalibrationModel.from_dict(json.loads(out.read_text()))
    assert model.weights["raw_logit"] > 0 and "c.jsonl (never fitted)" in " ".join(model.fitted_on["report"])
    assert "(never fitted)" in done.stdout and MODEL_FILE.read_text() != out.read_text()
    assert "vanilla AUROC 1.00 answered 100% EM 0.50" in done.stdout  # the raw score orders these rows perfectly
    # every row states its answer plainly ('P3 was born in 1903'), right half the time: (20 + 1) / (40 + 2)
    assert (model.plain_floor, model.unsupported_ceiling) == (0.5, 0.5)


def test_a_clause_stating_the_answer_next_to_what_the_question_asks_is_a_plain_statement():
    question = "Who painted the chapel of Kermaria?"
    assert statement(question, "Jehan Le Bras", ["The chapel of Kermaria was painted by Jehan Le Bras."]) == \
        Statement(plain=True, supported=True)
    assert statement("Where was Anne Riou born?", "Tréguier", [  # an aside does not break the clause
        "Anne Riou (born Anne Le Meur, 1902–1990) was a weaver who was born in Tréguier, then a port."]).plain
    # every word is in one sentence, but the answer's clause says something else of it
    listed = ["The porch was carved by Alain Guen, the chapel of Kermaria painted by Jehan Le Bras."]
    assert statement(question, "Alain Guen", listed) == Statement(plain=False, supported=True)
    far = ["Jehan Le Bras, whose uncle painted the chapel of Kermaria, was a glazier."]
    assert not statement(question, "Jehan Le Bras", far).plain
    echo = ["The painters of Kermaria chapel worked for the chapel of Kermaria."]
    assert not statement(question, "Kermaria chapel", echo).plain  # repeating the question states nothing
    # a list is plain only when each item is, supported only when each item is
    both = ["Anne Riou founded the guild of Tréguier. Paul Hamon founded the guild of Tréguier too."]
    half = ["Anne Riou founded the guild of Tréguier. Paul Hamon was a baker."]
    question = "Who founded the guild of Tréguier?"
    assert statement(question, "Anne Riou and Paul Hamon", both) == Statement(plain=True, supported=True)
    assert statement(question, "Anne Riou and Paul Hamon", half) == Statement(plain=False, supported=False)


def test_an_answer_only_unrelated_sentences_state_or_none_is_unsupported():
    question = "Who painted the chapel of Kermaria?"
    assert not statement(question, "Jehan Le Bras", ["Nothing here."]).supported
    assert not statement(question, "Jehan Le Bras", ["Jehan Le Bras kept bees in Plouha."]).supported
    # naming the other option of an 'A or B' question is not support for choosing this one
    choice = "Which abbey is older, Kerfeunteun or Landévennec?"
    assert not statement(choice, "Landévennec", ["Landévennec and Kerfeunteun are in Finistère."]).supported
    assert statement(choice, "Landévennec", ["Landévennec is older than any abbey in Finistère."]).supported


def test_the_rules_bound_the_fitted_probability_and_keep_its_order():
    sure = CalibrationModel(weights={"raw_logit": 1.0}, intercept=0.0, plain_floor=0.7, unsupported_ceiling=0.6)
    stated = ["Grace Hopper was born in New York in 1906."]
    assert sure.probability("Where was Grace Hopper born?", "New York", 0.1, stated) == pytest.approx(0.7)
    assert sure.probability("Where was Grace Hopper born?", "New York", 0.9, stated) == pytest.approx(0.9)
    unsupported = [sure.probability("Where was Grace Hopper born?", "Boston", raw, stated) for raw in (0.3, 0.8, 0.99)]
    assert unsupported[0] == pytest.approx(0.3) and 0.5 < unsupported[1] < unsupported[2] < 0.6


def test_no_answer_that_no_retrieved_document_states_is_kept_at_0_8_or_more():
    """Issue 22: a guess nothing the run read vouches for (no sentence, no calculation, no graph fact)
    is never shown as near-certain, whatever the method scored it and whatever the question asks (the
    shipped model, through `settle`)."""
    for question, guess in (("Which abbey is older, Kerfeunteun or Landévennec?", "Landévennec"),
                            ("When was Grace Hopper born?", "1915"),
                            ("Who founded the Trieux boatyard?", "Yann Kerbrat"),
                            ("How many ships did Grace Hopper command?", "12")):
        step = AnswerStep(iteration=1, text=guess, confidence=0.99, backend="offline")
        settled = settle(step, question, AnswerPolicy(0.0), STEPS)
        assert settled.confidence < 0.8, (question, settled.confidence)
    assert default_model().unsupported_ceiling < 0.8


def test_what_the_run_derived_from_what_it_read_supports_an_answer_no_sentence_states():
    question, read = "How old was Anne Riou when she died?", ["Anne Riou was born in 1902 and died in 1990."]
    age = Derived(calculations=(("1990 - 1902", 88.0),))
    assert not statement(question, "88", read).supported
    assert derived_support(question, "88", read, [], age)
    assert not derived_support(question, "87", read, [], age)  # not the result
    assert not derived_support(question, "88", read, [], Derived((("1991 - 1903", 88.0),)))  # operands nobody read
    assert not derived_support(question, "88", read, [], Derived())
    older = "Which guild is older, Tréguier's or Paimpol's?"
    founded = ["The guild of Tréguier was founded in 1,610.", "The guild of Paimpol dates from 1702."]
    first = Derived((("min(1610, 1702)", 1610.0),))  # the result picks the option the text gives it of
    assert derived_support(older, "the guild of Tréguier", founded, [], first)
    assert not derived_support(older, "the guild of Paimpol", founded, [], first)
    assert derived_support("Where was Anne Riou born?", "Tréguier", [], [("Anne Riou", "Tréguier")], Derived())
    assert not derived_support("Where was Anne Riou born?", "Tréguier", [], [("Paul Hamon", "Tréguier")], Derived())
    assert derived_support(question, "invalid question", read, [], Derived(false_premise=True))
    assert not derived_support(question, "invalid question", read, [], Derived())
    steps = [CalculationStep(expression="1990 - 1902", result=88.0, status="ok"),
             CalculationStep(expression="1990", result=1990.0, status="trivial"),
             CalculationStep(expression="1990 / 0", error="division by zero"),
             DecisionStep(action="premise_ok")]
    assert derivations(steps) == age  # only a calculation that gave its result counts
    assert derivations([DecisionStep(action="false_premise")]).false_premise


def test_a_span_computed_from_read_dates_escapes_the_ceiling_the_same_number_uncomputed_does_not(tmp_path, settings):
    """Issue 22: hybrid's computed spans are right far more often than the answers no sentence states,
    so a number the run computed from dates it read is not capped like a guess."""
    from engine.runner import Workbench

    (tmp_path / "yards.md").write_text(
        "# Trieux boatyard\n\nThe Trieux boatyard was founded in 1921 by Anne Riou in Paimpol.\n\n"
        "# Kerity sail loft\n\nThe Kerity sail loft was founded in 1958 by Paul Hamon in Kerity.\n", encoding="utf-8")
    bench = Workbench(ingest_paths([tmp_path / "yards.md"], "yards"), settings, calibrated=False)
    question = "How many years passed between the founding of the Trieux boatyard and the Kerity sail loft?"
    trace = bench.ask(question, "hybrid", policy=AnswerPolicy(0.0))
    assert trace.answer.text == "37" and ("1958 - 1921", 37.0) in derivations(trace.steps).calculations
    ceiling = default_model().unsupported_ceiling
    assert settle(trace.answer, question, AnswerPolicy(0.5), trace.steps).confidence > ceiling
    uncomputed = [step for step in trace.steps if not isinstance(step, CalculationStep)]
    assert settle(trace.answer, question, AnswerPolicy(0.0), uncomputed).confidence <= ceiling


@pytest.fixture(scope="module")
def notes_workbench(tmp_path_factory, settings):
    """A pack of the user's own, ingested from an HTML page and a PDF, about people no fitted pack names."""
    from engine.runner import Workbench

    folder = tmp_path_factory.mktemp("notes")
    (folder / "kerbrat.html").write_text(
        "<html><head><title>Yann Kerbrat</title></head><body><h1>Yann Kerbrat</h1>"
        "<p>Yann Kerbrat is a Breton sailmaker. He studied engineering in Rennes and opened a sail loft in Brest "
        "in 1994.</p><p>In 1998 he founded a small boatyard on the Trieux estuary.</p></body></html>",
        encoding="utf-8")
    (folder / "letters.pdf").write_bytes(pdf_bytes([
        "Yann Kerbrat was born in Lannion.",
        "His cousin Anne Le Goff was born in Morlaix and teaches music in Quimper."]))
    return Workbench(ingest_paths([folder / "kerbrat.html", folder / "letters.pdf"], "breton-notes"), settings)


@pytest.mark.parametrize("method", BUILT_IN)
def test_a_single_hop_question_a_retrieved_sentence_answers_plainly_is_answered_not_refused(notes_workbench, method):
    answer = notes_workbench.ask("Where was Yann Kerbrat born?", method).answer
    assert (answer.text, answer.refused) == ("Lannion", False), answer.title
    assert answer.confidence >= DEFAULT_MIN_CONFIDENCE


@pytest.mark.parametrize("method", BUILT_IN)
def test_the_demo_packs_first_example_is_answered_by_every_method(demo_workbench, method):
    answer = demo_workbench.ask("Where was Marie Curie born?", method).answer
    assert (answer.text, answer.refused) == ("Warsaw", False), answer.title
