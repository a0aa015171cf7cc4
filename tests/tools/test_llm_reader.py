"""The LLM reader with scripted fake chat models: prompt and parser as a pair, every fallback path."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.errors import BackendError
from engine.knowledge.records import Triple
from engine.llm.chat import AttentiveChatModel, ChatModel
from engine.tools.base import IDK, Reading
from engine.tools.llm_reader import (
    CLEAN_CONFIDENCE,
    FALLBACK_CONFIDENCE,
    MAX_ANSWER_CHARS,
    LlmReader,
    ParsedAnswer,
    build_reader_prompt,
    parse_reader_output,
)
from engine.trace import CalculationStep, ErrorStep, Hit, LlmCallStep, Step
from fake_chat import AttentiveChat, FailingChat, ScriptedChat, cycling, fixed


def hit(doc_id: str, title: str, text: str, rank: int = 0) -> Hit:
    return Hit(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=title, text=text, score=1.0, rank=rank)


MARIE = hit("marie", "Marie Curie", "Marie Curie was born in 1867 in Warsaw. She died in 1934.")
PIERRE = hit("pierre", "Pierre Curie", "Pierre Curie married Marie Curie in 1895.", rank=1)
MARS = hit("mars", "Mars", "Mars has two moons, Phobos and Deimos.", rank=2)
EVIDENCE = (MARIE, PIERRE, MARS)
FACTS = (Triple("Marie Curie", "spouse", "Pierre Curie", "1895"), Triple("Marie Curie", "born_in", "Warsaw"))


def read(output: str, question: str = "Who did Marie Curie marry?", evidence: Sequence[Hit] = EVIDENCE) -> Reading:
    return LlmReader(fixed(output)).read(question, evidence)


def kinds(steps: Sequence[Step]) -> list[str]:
    return [s.kind for s in steps]


def errors(reading: Reading) -> list[ErrorStep]:
    return [s for s in reading.steps if isinstance(s, ErrorStep)]


# ---- the clean path ---------------------------------------------------------------------------------


def test_reader_answers_and_cites_the_evidence_the_model_names() -> None:
    reading = read("Answer: Pierre Curie\nEvidence: 2")
    assert (reading.answer, reading.citations, reading.refused) == ("Pierre Curie", ("pierre",), False)
    assert reading.confidence == CLEAN_CONFIDENCE
    assert kinds(reading.steps) == ["llm_call"]


def test_reader_records_the_model_call_with_prompt_output_tokens_and_backend() -> None:
    chat = fixed("Answer: Pierre Curie\nEvidence: 2")
    reading = LlmReader(chat).read("Who did Marie Curie marry?", EVIDENCE)
    call = reading.steps[0]
    assert isinstance(call, LlmCallStep)
    assert call.role == "reader"
    assert call.prompt == "[user]\n" + chat.sent[0]
    assert call.output == "Answer: Pierre Curie\nEvidence: 2"
    assert (call.tokens_in, call.tokens_out, call.latency_ms) == (len(chat.sent[0].split()), 5, 12.5)
    assert call.backend == "fake: scripted"


def test_reader_prompt_and_parser_work_as_a_pair_with_a_model_that_reads_the_prompt() -> None:
    def answer_from_prompt(prompt: str) -> str:
        # a model that finds the block mentioning Warsaw and cites it by the number the prompt gave it
        block = next(line for line in prompt.splitlines() if "Warsaw" in line)
        return f"Answer: Warsaw\nEvidence: {block[1:block.index(']')]}"

    reading = LlmReader(ScriptedChat(answer_from_prompt)).read("Where was Marie Curie born?", (MARS, PIERRE, MARIE))
    assert (reading.answer, reading.citations, errors(reading)) == ("Warsaw", ("marie",), [])


def test_one_reader_answers_successive_questions_with_successive_replies() -> None:
    reader = LlmReader(cycling("Answer: Warsaw\nEvidence: 1", "Answer: 1895\nEvidence: 2"))
    answers = [reader.read(q, EVIDENCE).answer for q in ("Where?", "When?", "Where again?")]
    assert answers == ["Warsaw", "1895", "Warsaw"]


def test_invalid_question_is_an_ordinary_answer_in_its_exact_gold_form() -> None:
    reading = read("Answer: Invalid question.\nEvidence: 1")
    assert (reading.answer, reading.refused, reading.citations) == ("invalid question", False, ("marie",))


# ---- citations --------------------------------------------------------------------------------------


def test_citations_keep_the_cited_order_and_ignore_numbers_out_of_range() -> None:
    reading = read("Answer: Pierre Curie\nEvidence: 0, 3, 9, 1, 3")
    assert reading.citations == ("mars", "marie")
    assert errors(reading) == []


def test_citations_name_each_document_once_even_when_two_chunks_of_it_are_cited() -> None:
    second = Hit("marie", "marie#1", "Marie Curie", "More about her.", 0.5, 3)
    assert read("Answer: x\nEvidence: 1, 2", evidence=(MARIE, second)).citations == ("marie",)


@pytest.mark.parametrize("evidence_line", ["Evidence: 7, 8", "Evidence: none", ""])
def test_reader_cites_the_first_evidence_and_records_an_error_when_no_number_is_usable(evidence_line: str) -> None:
    reading = read(f"Answer: Pierre Curie\n{evidence_line}")
    assert reading.citations == ("marie",)
    assert reading.confidence == FALLBACK_CONFIDENCE
    assert len(errors(reading)) == 1 and "expected 'Evidence: <numbers from 1 to 3>'" in errors(reading)[0].message


def test_reader_without_evidence_cites_nothing_and_says_so_in_the_prompt() -> None:
    chat = fixed("Answer: Paris\nEvidence: 1")
    reading = LlmReader(chat).read("What is the capital of France?", ())
    assert (reading.answer, reading.citations) == ("Paris", ())
    assert "(no evidence was retrieved)" in chat.sent[0]


# ---- refusals and failures -------------------------------------------------------------------------


@pytest.mark.parametrize("output", [
    "Answer: I don't know\nEvidence: none",
    "Answer: I do not know.",
    "Answer: **I don’t know**",
    "I don't know; the evidence says nothing about it.",
    "Answer: Unknown",
    "Answer: The evidence does not say.",
    "Answer: Not enough information",
    "Answer: cannot be determined",
])
def test_i_dont_know_like_answers_are_refusals(output: str) -> None:
    reading = read(output)
    assert (reading.answer, reading.refused, reading.confidence, reading.citations) == (IDK, True, 0.0, ())


@pytest.mark.parametrize("answer", ["Unknown Pleasures", "No Doubt", "Not the Nine O'Clock News", "None"])
def test_answers_that_only_start_like_a_refusal_are_not_refusals(answer: str) -> None:
    reading = read(f"Answer: {answer}\nEvidence: 1")
    assert (reading.answer, reading.refused) == (answer, False)


@pytest.mark.parametrize("output", ["", "   \n  "])
def test_empty_model_output_is_a_refusal_with_an_error_step(output: str) -> None:
    reading = read(output)
    assert (reading.answer, reading.refused) == (IDK, True)
    assert kinds(reading.steps) == ["llm_call", "error"]
    assert "empty output" in errors(reading)[0].message and errors(reading)[0].recoverable


@pytest.mark.parametrize("error", [BackendError("server at http://gpu:8000 did not answer"), RuntimeError("CUDA OOM")])
def test_a_failing_model_is_a_refusal_with_an_error_step_and_no_exception(error: Exception) -> None:
    reading = LlmReader(FailingChat(error)).read("Who did Marie Curie marry?", EVIDENCE)
    assert (reading.answer, reading.refused, reading.confidence) == (IDK, True, 0.0)
    call, failure = reading.steps
    assert isinstance(call, LlmCallStep) and call.output == "" and call.backend == "openai: down"
    assert call.prompt.startswith("[user]\nAnswer the question")
    assert isinstance(failure, ErrorStep) and failure.recoverable and str(error) in failure.message


def test_an_empty_question_is_a_refusal_without_a_model_call() -> None:
    chat = fixed("Answer: Paris")
    reading = LlmReader(chat).read("   ", EVIDENCE)
    assert (reading.answer, reading.refused, reading.steps, chat.sent) == (IDK, True, (), [])


def test_a_failing_attentive_model_is_a_refusal_too() -> None:
    reader = LlmReader(FailingChat(BackendError("eager attention ran out of memory")))
    reading = reader.read("Who?", EVIDENCE)
    assert reading.refused and kinds(reading.steps) == ["llm_call", "error"]


def test_reader_falls_back_to_the_first_line_when_there_is_no_answer_label() -> None:
    reading = read("Pierre Curie\nhe married her in 1895")
    assert (reading.answer, reading.confidence) == ("Pierre Curie", FALLBACK_CONFIDENCE)
    assert "no 'Answer: …' line" in errors(reading)[0].message
    assert "'Pierre Curie'" in errors(reading)[0].message


def test_a_reply_with_only_an_evidence_line_is_a_refusal_with_an_error_step() -> None:
    reading = read("Evidence: 1")
    assert reading.refused and "found no answer" in errors(reading)[0].message


def test_error_messages_quote_long_model_output_shortened_to_one_line() -> None:
    reading = read("rambling " * 200)
    message = errors(reading)[0].message
    assert "\n" not in message and len(message) < 400 and "…" in message


# ---- calculation ------------------------------------------------------------------------------------


def test_a_calculation_line_is_evaluated_and_its_result_is_the_answer() -> None:
    reading = read("Calculation: 1934 - 1867\nAnswer: 67 years\nEvidence: 1", question="How old was she?")
    calc = [s for s in reading.steps if isinstance(s, CalculationStep)]
    assert reading.answer == "67"
    assert len(calc) == 1 and (calc[0].expression, calc[0].result, calc[0].error) == ("1934 - 1867", 67.0, "")
    assert reading.citations == ("marie",) and reading.confidence == CLEAN_CONFIDENCE


def test_a_calculation_without_an_answer_line_still_answers() -> None:
    reading = read("Calculation: 1934 − 1867 = 67\nEvidence: 1")
    assert (reading.answer, reading.refused, errors(reading)) == ("67", False, [])


def test_a_fractional_calculation_result_keeps_its_decimals() -> None:
    assert read("Calculation: 10 / 4\nAnswer: 2.5\nEvidence: 1").answer == "2.5"


@pytest.mark.parametrize("expression", [
    "__import__('os').system('echo pwned')",
    "open('/etc/passwd').read()",
    "9 ** 9 ** 9",
    "the year she died minus the year she was born",
])
def test_a_hostile_calculation_becomes_an_error_step_and_keeps_the_models_answer(expression: str) -> None:
    reading = read(f"Calculation: {expression}\nAnswer: 67\nEvidence: 1")
    calc = next(s for s in reading.steps if isinstance(s, CalculationStep))
    assert calc.result is None and calc.error
    assert reading.answer == "67" and reading.confidence == FALLBACK_CONFIDENCE
    assert "calculation" in errors(reading)[0].message and "kept the model's answer '67'" in errors(reading)[0].message


def test_a_hostile_calculation_without_an_answer_is_a_refusal() -> None:
    reading = read("Calculation: __import__('os')\nEvidence: 1")
    assert reading.refused and kinds(reading.steps) == ["llm_call", "calculation", "error"]


# ---- the prompt ------------------------------------------------------------------------------------


HOSTILE = hit("evil", "A {title} with <b>tags</b>",
              "Text with {question} and {evidence} and {} and {0} and <script>alert('x')</script>\nand a new line.")


def test_documents_with_braces_and_script_do_not_break_the_prompt() -> None:
    chat = fixed("Answer: x\nEvidence: 2")
    question = "What does {the} document say?"
    reading = LlmReader(chat).read(question, (MARIE, HOSTILE), FACTS)
    sent = chat.sent[0]
    assert "[2] A {title} with <b>tags</b> — Text with {question} and {evidence} and {} and {0} and " \
           "<script>alert('x')</script> and a new line." in sent
    assert f"Question: {question}\n" in sent
    assert sent.count("{question}") == 1 and "{facts}" not in sent
    assert reading.citations == ("evil",)


def test_prompt_holds_instructions_numbered_evidence_facts_question_and_output_format() -> None:
    message = build_reader_prompt("Who did Marie Curie marry?", EVIDENCE, FACTS).message
    # the question comes last: a small model then answers it instead of writing a block number (issue 23)
    order = ["only the numbered evidence", "I don't know", "invalid question", "Calculation: <expression>",
             "Answer: <short answer>", "Evidence: <numbers", "[1] Marie Curie — Marie Curie was born",
             "[2] Pierre Curie —", "[3] Mars —", "- Marie Curie | spouse | Pierre Curie | 1895",
             "- Marie Curie | born_in | Warsaw", "Question: Who did Marie Curie marry?"]
    positions = [message.index(part) for part in order]
    assert positions == sorted(positions)


def test_prompt_without_facts_has_no_facts_block() -> None:
    message = build_reader_prompt("Who?", EVIDENCE).message
    assert "knowledge graph" not in message and "\n\n\n" not in message


def test_segments_point_exactly_at_each_evidence_block_the_facts_and_the_question() -> None:
    prompt = build_reader_prompt("  Who did {Marie} marry?  ", (MARIE, HOSTILE, PIERRE), FACTS)
    spans = {s.label: (s.kind, prompt.message[s.start:s.end]) for s in prompt.segments}
    assert spans == {
        "marie": ("document", "[1] Marie Curie — Marie Curie was born in 1867 in Warsaw. She died in 1934."),
        "evil": ("document", "[2] A {title} with <b>tags</b> — Text with {question} and {evidence} and {} and "
                             "{0} and <script>alert('x')</script> and a new line."),
        "pierre": ("document", "[3] Pierre Curie — Pierre Curie married Marie Curie in 1895."),
        "facts": ("triples", "Facts from the knowledge graph:\n- Marie Curie | spouse | Pierre Curie | 1895\n"
                             "- Marie Curie | born_in | Warsaw"),
        "question": ("question", "Who did {Marie} marry?"),
    }
    starts = [s.start for s in prompt.segments]
    assert starts == sorted(starts)


def test_segment_labels_stay_unique_when_a_document_has_two_chunks() -> None:
    second = Hit("marie", "marie#1", "Marie Curie", "More about her.", 0.5, 1)
    labels = [s.label for s in build_reader_prompt("Who?", (MARIE, second)).segments]
    assert labels == ["marie", "marie [2]", "question"]


def test_evidence_segments_carry_their_documents_titles_for_the_attention_columns() -> None:
    titles = [s.title for s in build_reader_prompt("Who?", (MARIE, PIERRE)).segments]
    assert titles == ["Marie Curie", "Pierre Curie", ""]


def test_very_long_documents_are_cut_in_the_prompt() -> None:
    long = hit("long", "Long", "word " * 5000)
    segment = build_reader_prompt("Who?", (long,)).segments[0]
    assert segment.end - segment.start < 2100


# ---- attention ---------------------------------------------------------------------------------------


def test_attention_capture_sends_the_segments_and_keeps_the_attention_steps() -> None:
    chat = AttentiveChat(lambda _prompt: "Answer: Pierre Curie\nEvidence: 2")
    assert isinstance(chat, AttentiveChatModel)
    reading = LlmReader(chat).read("Who did Marie Curie marry?", EVIDENCE, FACTS)
    assert kinds(reading.steps) == ["llm_call", "attention"]
    assert chat.segments == [build_reader_prompt("Who did Marie Curie marry?", EVIDENCE, FACTS).segments]
    for segment in chat.segments[0]:
        assert chat.sent[0][segment.start:segment.end]  # spans index the message actually sent


def test_attention_is_not_captured_from_a_model_loaded_without_capture() -> None:
    chat = AttentiveChat(lambda _prompt: "Answer: Pierre Curie\nEvidence: 2")
    chat.captures_attention = False  # the hf backend with attention off (sdpa returns none)
    reading = LlmReader(chat).read("Who?", EVIDENCE)
    assert kinds(reading.steps) == ["llm_call"] and chat.segments == []


def test_attention_capture_on_a_plain_chat_model_just_completes() -> None:
    chat = fixed("Answer: Pierre Curie\nEvidence: 2")
    assert isinstance(chat, ChatModel) and not isinstance(chat, AttentiveChatModel)
    reading = LlmReader(chat).read("Who?", EVIDENCE)
    assert (reading.answer, kinds(reading.steps)) == ("Pierre Curie", ["llm_call"])


def test_the_default_settings_ask_for_a_short_reply() -> None:
    assert LlmReader(fixed("")).settings.max_new_tokens == 64


# ---- the parser on its own ---------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "expected"), [
    ("Answer: Paris\nEvidence: 1, 3", ParsedAnswer("Paris", (1, 3), "", True)),
    ("**Answer:** \"Paris.\"\n**Evidence:** [1][3]", ParsedAnswer("Paris", (1, 3), "", True)),
    ("answer : Paris\nsources: 1 and 3", ParsedAnswer("Paris", (1, 3), "", True)),
    ("Answer:\n  Lyon\nSources: [2]", ParsedAnswer("Lyon", (2,), "", True)),
    ("Sure! The answer: 'Paris' [2]", ParsedAnswer("Paris", (2,), "", True)),
    ("Answer: Paris (Evidence: 2 and 3)", ParsedAnswer("Paris", (2, 3), "", True)),
    ("Answer: Paris. Evidence: 2", ParsedAnswer("Paris", (2,), "", True)),
    ("- Answer: “Washington, D.C.”\n- Evidence: 1", ParsedAnswer("Washington, D.C", (1,), "", True)),
    ("Calculation: `1934 - 1867`\nAnswer: 67\nEvidence: 1", ParsedAnswer("67", (1,), "1934 - 1867", True)),
    ("Calculation: 3 × 4 = 12", ParsedAnswer("", (), "3 * 4", True)),
    ("Paris\nEvidence: 1", ParsedAnswer("Paris", (1,), "", False)),
    ("Answer:", ParsedAnswer("", (), "", False)),
    ("", ParsedAnswer("", (), "", False)),
])
def test_parser_reads_the_format_and_its_common_variants(output: str, expected: ParsedAnswer) -> None:
    assert parse_reader_output(output) == expected


def test_parser_takes_the_first_answer_when_the_model_runs_on_into_another_question() -> None:
    parsed = parse_reader_output("Answer: Warsaw\nEvidence: 1\n\nQuestion: Who else?\nAnswer: Paris\nEvidence: 2")
    assert (parsed.answer, parsed.evidence) == ("Warsaw", (1,))


def test_parser_caps_the_answer_length_at_a_word_boundary() -> None:
    parsed = parse_reader_output("Answer: " + "very long answer " * 50)
    assert len(parsed.answer) <= MAX_ANSWER_CHARS and parsed.answer.endswith(("very", "long", "answer"))


@pytest.mark.parametrize("junk", [None, 42, "\x00\x01", "}{" * 100, "Answer: {question}"])
def test_parser_never_raises_on_junk(junk: object) -> None:
    assert isinstance(parse_reader_output(junk), ParsedAnswer)  # type: ignore[arg-type]
