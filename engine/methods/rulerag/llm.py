"""RuleRAG's LLM rule reader: the paper's five-block prompt, read back tolerantly.

`LlmRuleReader` fills the paper's five-block prompt (prompts/reader.txt: Instruct, Retrieved documents,
Rules, Query, Answer), passes the prompt segments (each document, each rule, the question) for attention,
and parses the short `<entity>.` reply tolerantly with the reader's `parse_reader_output`; it never raises.
A reply that yields no entity-like answer (empty, or a long line of text), or that echoes the prompt (a
document, the query, the instruction, a rule), is never taken as the answer: the reading refuses with an
`error` step quoting the raw output; a sentence restating the query is cut to its entity
(engine.tools.short_answer). The rule is attributed symbolically: the first matched rule whose KG path from
the question's entity ends at the answer (spec §6 "symbolic attribution").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.rulerag.offline import citing, refusal
from engine.methods.rulerag.tools import RuleReading
from engine.rules.application import RulePath, follow_body
from engine.rules.matching import ScoredRule
from engine.rules.text import number_word, rule_text
from engine.tools.base import Reading
from engine.tools.llm_call import call_model, error_step, locate_segments, one_line, shorten
from engine.tools.llm_reader import CLEAN_CONFIDENCE, FALLBACK_CONFIDENCE, is_refusal, parse_reader_output
from engine.tools.prompts import PromptFolder, fill
from engine.tools.short_answer import MAX_RAW_CHARS, rejected_step, vet_answer
from engine.trace import Hit

PROMPTS = PromptFolder.beside(__file__)
MAX_DOCUMENT_CHARS = 600  # per document: ten run-together documents must fit a small context
# [decide] spec §2: greedy, 32 new tokens; the parser keeps the first non-empty line (a stop at
# "\n" would leave nothing of a reply that opens with a blank line)
SETTINGS = GenerationSettings(max_new_tokens=32)
# [decide] an answer is an entity: a reply whose answer line is longer than this is not taken as one
MAX_ANSWER_WORDS = 12
MAX_ANSWER_CHARS = 120


@dataclass(frozen=True)
class LlmRuleReader:
    chat: ChatModel
    kg: KnowledgeGraph | None = None
    settings: GenerationSettings = SETTINGS

    def read(self, question: str, evidence: Sequence[Hit], rules: Sequence[ScoredRule]) -> RuleReading:
        hits = tuple(evidence or ())
        prompt = build_rule_prompt(str(question or ""), hits, rules)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="rule reader",
                           segments=rule_prompt_segments(prompt, str(question or ""), hits, rules))
        if reply.failed:
            return RuleReading(refusal(reply.steps, "the rule reader model failed"))
        answer = parse_reader_output(reply.text).answer
        if not answer:
            error = error_step("rule reader", f"rule reader returned no answer; got {shorten(reply.text)}; "
                                              "expected a short entity ending with a period")
            return RuleReading(refusal(reply.steps + (error,), one_line(reply.text)[:MAX_RAW_CHARS] or "empty reply"))
        if is_refusal(answer):
            return RuleReading(refusal(reply.steps, one_line(reply.text)[:MAX_RAW_CHARS]))
        # never the prompt handed back; a sentence cut to its short answer (engine.tools.short_answer)
        listed = "\n".join(rule_text(s.rule.head, s.rule.body) for s in rules)  # a rule copied is no answer either
        vetted = vet_answer(answer, str(question or ""), [_document(h) for h in hits],
                            f"{PROMPTS.load('reader')}\n{listed}")
        steps = reply.steps + ((rejected_step("rule reader", vetted.problem, reply.text),) if vetted.problem else ())
        answer = vetted.answer
        if not answer:
            return RuleReading(refusal(steps, "the rule reader's output echoed its prompt"))
        if not is_entity_answer(answer):
            problem = "it does not parse as an answer (expected a short entity ending with a period)"
            return RuleReading(refusal(steps + (rejected_step("rule reader", problem, reply.text),),
                                        "the rule reader's output did not parse"))
        path = _attributed_path(self.kg, question, answer, rules)
        confidence = FALLBACK_CONFIDENCE if vetted.problem else CLEAN_CONFIDENCE
        reading = Reading(answer, citing(hits, answer, path), confidence,
                          rationale=one_line(reply.text)[:500], steps=steps)
        return RuleReading(reading, path.rule_id if path else "", path.entities if path else ())


def build_rule_prompt(question: str, evidence: Sequence[Hit], rules: Sequence[ScoredRule]) -> str:
    """The five blocks; documents run together on one line, rules as 'Rule One: …. Rule Two: ….'."""
    documents = " ".join(_document(h) for h in evidence) or "(no documents were retrieved)"
    listed = " ".join(f"Rule {number_word(n)}: {rule_text(s.rule.head, s.rule.body)}."
                      for n, s in enumerate(rules, start=1))
    which = "rule" if len(rules) == 1 else f"{number_word(len(rules)).lower() if rules else 'no'} rules"
    return fill(PROMPTS.load("reader"), documents=documents, which=which,
                rules=listed or "(no rule matched the query)", question=one_line(question))


def rule_prompt_segments(prompt: str, question: str, evidence: Sequence[Hit],
                         rules: Sequence[ScoredRule]) -> tuple[PromptSegment, ...]:
    """Where each document ('doc n'), each rule ('rule <id>') and the question sit in the prompt."""
    pieces = [(f"doc {n}", "document", _document(h)) for n, h in enumerate(evidence, start=1)]
    pieces += [(f"rule {s.rule.id}", "rule", rule_text(s.rule.head, s.rule.body)) for s in rules]
    pieces.append(("question", "question", one_line(question)))
    return locate_segments(prompt, pieces)


def is_entity_answer(answer: str) -> bool:
    """A short entity-like string: some letter or digit, at most MAX_ANSWER_WORDS words and _CHARS chars."""
    text = answer.strip()
    return (any(c.isalnum() for c in text) and len(text) <= MAX_ANSWER_CHARS
            and len(text.split()) <= MAX_ANSWER_WORDS)


def _document(hit: Hit) -> str:
    text = one_line(hit.text)
    text = text if len(text) <= MAX_DOCUMENT_CHARS else text[:MAX_DOCUMENT_CHARS].rstrip() + " …"
    return text if text.endswith((".", "…", "!", "?")) else text + "."


def _attributed_path(kg: KnowledgeGraph | None, question: str, answer: str,
                     rules: Sequence[ScoredRule]) -> RulePath | None:
    if kg is None:
        return None
    wanted = answer.casefold()
    for entity in kg.find_entities(question):
        for scored in rules:
            for path in follow_body(kg, entity, scored.rule.body):
                if path[-1].casefold() == wanted:
                    return RulePath(scored.rule.id, path)
    return None
