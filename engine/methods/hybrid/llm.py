"""The hybrid method's LLM twins: attribute votes, the entity finder, the calculator, the knowledge extractor and
the reasoner, each a prompted call (several sampled, `draw`) read back by its stage's tolerant parser.

Each stage module (attributes, kg_module, calculations, knowledge, reasoner) holds its spec section's prompt
builder and parser; the twins here make the calls. Self-consistency samples (spec §2.3, §2.4, §2.8) are drawn
one model call each, until a reply repeats an earlier one: a repeated reply ends the draw (it is kept: its call
is in the trace and it counts as a vote). Sampling only pays when replies differ; a local model's sampling is
seeded per call (engine/llm/decoding.py), so there every sample repeats the first, and a server at a low
temperature often does the same. Five identical calculator calls, or three identical attribute votes, cost
five or three calls and say no more than two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.graph.linking import EntityLinker
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.hybrid.answers import says_nothing, without_copies
from engine.methods.hybrid.attributes import (
    ICL_SETTINGS,
    AttributeModel,
    Attributes,
    attribute_messages,
    load_examples,
    majority,
    parse_attributes,
)
from engine.methods.hybrid.calculations import CALC_SETTINGS, Calculations, calculator_messages, evaluate
from engine.methods.hybrid.kg_module import ENTITY_SETTINGS, entity_messages, parse_entities
from engine.methods.hybrid.knowledge import DIRECT_SETTINGS, DirectAnswer, parse_direct
from engine.methods.hybrid.prompting import question_pieces
from engine.methods.hybrid.reasoner import (
    RAW_SHOWN,
    REASON_SETTINGS,
    SAYS_IDK,
    SUMMARY_SETTINGS,
    Decision,
    References,
    Vet,
    decide,
    reasoning_prompt,
    summary_answer,
    without_repeats,
)
from engine.tools.base import IDK
from engine.tools.llm_call import ModelReply, call_model, error_step, fill_with_segments, one_line, shorten
from engine.tools.prompts import PromptFolder
from engine.tools.short_answer import rejected_step, vet_answer
from engine.trace import Step

PROMPTS = PromptFolder.beside(__file__)


def draw(chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings, role: str, samples: int,
         segments: Sequence[PromptSegment] | None = None) -> tuple[ModelReply, ...]:
    """Up to `samples` replies, roles '<role> 1', '<role> 2', …; the first repeat is the last one drawn."""
    replies: list[ModelReply] = []
    for n in range(1, max(1, samples) + 1):
        reply = call_model(chat, messages, settings, role=f"{role} {n}", segments=segments)
        replies.append(reply)
        if any(earlier.text == reply.text for earlier in replies[:-1]):
            break
    return tuple(replies)


@dataclass(frozen=True)
class LlmAttributePredictor:
    chat: ChatModel
    fallback: AttributeModel
    samples: int = 3
    settings: GenerationSettings = ICL_SETTINGS

    def predict(self, question: str) -> Attributes:
        messages, segments = attribute_messages(question, load_examples())
        steps: tuple[Step, ...] = ()
        parsed: list[tuple[str, str]] = []
        replies = draw(self.chat, messages, self.settings, "attributes", self.samples, segments)
        for n, reply in enumerate(replies, start=1):
            steps += reply.steps
            got = parse_attributes(reply.text)
            if got is not None:
                parsed.append(got)
            elif not reply.failed:  # a failed call already left its error step
                steps += (error_step(f"attributes {n}", f"sample {n} named no dynamism label; got "
                                     f"{shorten(reply.text)}; it casts no vote"),)
        offline = self.fallback.predict(question)
        if not parsed:
            message = (f"no attribute sample named a dynamism label; used the logistic "
                       f"regression's {offline.question_type} / {offline.dynamism}")
            return Attributes(offline.question_type, offline.type_confidence, offline.dynamism,
                              offline.dynamism_confidence, "logreg (icl fallback)", (),
                              steps + (error_step("attributes", message),))
        typed = [t for t, _ in parsed if t]
        qtype, tconf = majority(typed) if typed else (offline.question_type, 0.0)
        dyn, dconf = majority([d for _, d in parsed])
        votes = tuple(f"{t or '?'} / {d}" for t, d in parsed)
        return Attributes(qtype, tconf * len(typed) / len(replies), dyn, dconf * len(parsed) / len(replies), "icl",
                          votes, steps, offline.dynamism, offline.dynamism_confidence)


@dataclass(frozen=True)
class LlmEntityFinder:
    chat: ChatModel
    linker: EntityLinker
    settings: GenerationSettings = ENTITY_SETTINGS

    def find(self, question: str, query_time: str = "") -> tuple[tuple[str, ...], tuple[str, ...], tuple[Step, ...]]:
        messages, segments = entity_messages(question, query_time)
        reply = call_model(self.chat, messages, self.settings, role="entity extraction", segments=segments)
        names = parse_entities(reply.text)
        steps = reply.steps
        if not names and not reply.failed:
            steps += (error_step("entity extraction", f"no entity JSON in {shorten(reply.text)}; "
                                 "linked the question against the pack lexicon instead"),)
        linked: dict[str, str] = {}
        for name in names:
            for link in self.linker.link(name)[:1]:
                linked.setdefault(link.entity, name)
        if not linked:  # nothing the pack knows: the lexicon is the fallback (spec §7)
            links = self.linker.link(question)
            linked = {link.entity: link.mention for link in links}
        return tuple(linked), tuple(linked.values()), steps


@dataclass(frozen=True)
class LlmCalculator:
    chat: ChatModel
    samples: int = 5
    settings: GenerationSettings = CALC_SETTINGS

    def propose(self, question: str, references: str, tables: str, facts: Sequence[str] = ()) -> Calculations:
        messages, segments = calculator_messages(question, references, tables)
        steps: tuple[Step, ...] = ()
        items, seen = [], set()
        for n, reply in enumerate(draw(self.chat, messages, self.settings, "calculator", self.samples, segments),
                                  start=1):
            steps += reply.steps
            item = evaluate(reply.text, f"LLM sample {n}", seen)
            items.append(item)
            if item.status == "eval_error" and not reply.failed:
                steps += (error_step(f"calculator {n}", f"sample {n} is no expression the calculator runs "
                                     f"({item.error}); got {shorten(reply.text)}; it is left out"),)
        return Calculations(tuple(items), steps)


@dataclass(frozen=True)
class LlmKnowledgeExtractor:
    chat: ChatModel
    settings: GenerationSettings = DIRECT_SETTINGS

    def answer(self, question: str) -> DirectAnswer:
        role = "knowledge extractor"
        user, segments = fill_with_segments("{question}", {"question": question_pieces(question)}, question=question)
        messages = (Message("system", PROMPTS.load("direct").strip()), Message("user", user))
        reply = call_model(self.chat, messages, self.settings, role=role, segments=segments)
        parsed, kind = parse_direct(reply.text, question)
        steps = reply.steps
        if kind == "parse_fail" and not reply.failed:
            steps += (error_step(role, f"no short answer in the closed-book reply {shorten(reply.text)}; "
                                 "passed on as I don't know"),)
        return DirectAnswer(reply.text, parsed, kind, steps)


@dataclass(frozen=True)
class LlmReasoner:
    chat: ChatModel
    samples: int = 1
    settings: GenerationSettings = REASON_SETTINGS

    def reason(self, question: str, refs: References) -> Decision:
        messages, segments = reasoning_prompt(question, refs)
        instructions = [m.content for m in messages if m.role == "system"]
        replies = draw(self.chat, messages, self.settings, "reasoning", self.samples, segments)
        steps = tuple(step for reply in replies for step in reply.steps)
        texts = [without_copies(reply.text, instructions) for reply in replies]
        decision, parsed = decide(texts, _vet(question, refs, instructions))
        if decision is not None:
            if decision.route == "parsed" and parsed.why:  # a sentence cut to its short answer
                steps += (rejected_step("reasoning 1", parsed.why, replies[0].text),)
            return _with(decision, steps, refs)
        # §2.8 step 4: the backup summarizer gets the question and the raw reasoning
        why = parsed.why if parsed else "no sample"
        if says_nothing(texts[0], question, instructions):  # nothing to summarize: no call for a made-up answer
            steps += (error_step("reasoning 1", f"sample 1 did not parse ({why}) and only hands the prompt back: "
                                 f"{shorten(texts[0], RAW_SHOWN)}; nothing to summarize"),)
            return _fallback(refs, f"sample 1 did not parse ({why}) and says nothing of its own", steps)
        steps += (error_step("reasoning 1", f"sample 1 did not parse ({why}): {shorten(texts[0], RAW_SHOWN)}; "
                             "handed to the summarizer"),)
        return self._summarize(question, refs, texts[0], f"sample 1 did not parse ({why}) → summarizer", steps)

    def _summarize(self, question: str, refs: References, raw: str, reason: str, steps: tuple[Step, ...]) -> Decision:
        """The backup summarizer's short answer; when it gives none (and no "I don't know" of its own), a
        direct KG answer stands (reasoner.py's docstring)."""
        reasoning = without_repeats(raw)[:4000]
        template = PROMPTS.load("summarizer")
        prompt, segments = fill_with_segments(
            template, {"question": question_pieces(question), "reasoning": [("reasoning 1", "reasoning", reasoning)]},
            question=question, reasoning=reasoning)
        reply = call_model(self.chat, (Message("user", prompt),), SUMMARY_SETTINGS, role="summarizer",
                           segments=segments)
        steps += reply.steps
        answer, refused, why = summary_answer(reply.text, _vet(question, refs, [template], [reasoning]))
        if refused and one_line(reply.text) and not SAYS_IDK.search(reply.text.lower()):
            steps += (rejected_step("summarizer", f"{why}; refused", reply.text),)
            return _fallback(refs, f"{reason} gave no answer", steps)
        if why and not refused:  # a sentence cut to its short answer
            steps += (rejected_step("summarizer", why, reply.text),)
        return _with(Decision(answer, "summarizer", reason, 0, refused, 0.2), steps, refs)


def _fallback(refs: References, reason: str, steps: tuple[Step, ...]) -> Decision:
    """No answer from the model: a direct KG answer stands when there is one (reasoner.py's docstring), else IDK."""
    if refs.kg_answer:
        return _with(Decision(refs.kg_answer, "kg_answer", f"{reason}; the KG look-up's answer stands: "
                              f"{refs.kg_reason}", 0, confidence=0.2), steps, refs)
    return _with(Decision(IDK, "summarizer", reason, 0, True, 0.2), steps, refs)


def _vet(question: str, refs: References, instructions: Sequence[str], passages: Sequence[str] = ()) -> Vet:
    """The shared vetting (engine/tools/short_answer.py) against this prompt: its question, instructions,
    chunks and any other passage in it (the reasoning handed to the summarizer)."""
    evidence = [*(h.text for h in refs.chunks), *passages]
    return lambda answer: vet_answer(answer, question, evidence, "\n".join(instructions))


def _with(decision: Decision, steps: tuple[Step, ...], refs: References) -> Decision:
    cited = tuple(dict.fromkeys(h.doc_id for h in refs.chunks if decision.answer.lower() in h.text.lower()))
    return replace(decision, steps=steps, citations=cited if not decision.refused else ())
