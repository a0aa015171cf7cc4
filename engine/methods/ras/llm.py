"""RAS's LLM twins: planner, text-to-triples and answerer, with tolerant parsers.

Prompts: prompts/plan.txt, t2t.txt, answer.txt (spec §2.3, the Sonnet prompts' layout: instruction, the
paper's example kinds with our own topics, then the input). Every call passes prompt segments (sub-queries,
triples, passage, question) so a backend that captures attention can attribute it. Every parser is
tolerant and falls back with an `error` step that quotes the raw model output, never an exception.

[decide] choices that live here:
- planner: a reply without a usable control token is never read as a sub-query; the tool falls back to
  the question as sub-query in round 0 (q_0 is the question anyway, spec §2.8) and to [SUFFICIENT] later
  (never loop on garbage), and marks the plan `fallback`; a repeated sub-query, or [NO_RETRIEVAL] after
  round 0 (spec §2.2), also falls back to [SUFFICIENT].
- planner: the sub-query is the rest of the [SUBQ] line (or the next line when [SUBQ] ends its line), never
  a later line holding another token nor a bare 'Output'/'Input' label the model copied from the prompt;
  a sub-query copied from a demonstration (its names in neither the question nor the graph) falls back
  as a repeated one does.
- t2t parsing: one malformed triple drops only itself, not the round (spec §8 notes the [code] loses the
  whole round's graph); a triple without its `O>`/`P>` marker is read by position. A triple whose subject
  or object the passage does not hold, or that links a name to itself, is dropped as unsupported: a weak
  model fills the demonstration's triples with the passage's subject ('Birth date| November 27, 1953').
- answerer: the first non-empty line that is not a question, without an 'Answer:'/'Output:' label or
  control tokens; nothing left means a refusal with an error step, never a control token or an empty
  string as the answer. An answer that echoes the prompt (the question, an instruction, the graph
  information: `vet_answer`), that only a demonstration holds, or that the question itself names (unless
  offered as a choice) is not an answer either; a sentence is cut to its short answer.
- every role stops at the prompt's own next-block markers and has a budget sized to its reply (a plan is
  one line, an answer a short phrase), so a weak model that keeps writing costs no more than that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.knowledge.records import Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.ras.query_graph import QueryGraph, fold
from engine.methods.ras.tools import (
    MAX_TRIPLES_PER_CHUNK,
    NO_RETRIEVAL,
    Extraction,
    Plan,
    Round,
    render_history,
)
from engine.retrieval.index import embedding_text
from engine.text import STOPWORDS, words
from engine.tools.base import IDK, Reading
from engine.tools.llm_call import call_model, error_step, fill_with_segments, one_line
from engine.tools.prompts import PromptFolder
from engine.tools.short_answer import copied_example, hop_not_taken, rejected_step, vet_answer
from engine.trace import Hit, Step

PROMPTS = PromptFolder.beside(__file__)

MAX_PASSAGE_CHARS = 2000
MAX_RAW_SHOWN = 500  # characters of unusable model output quoted in an error step
# where the prompts' next block would begin: a reply that goes on past them is the model writing a new example
NEXT_BLOCK = ("\nOutput", "\nInput", "\nQuestion", "\nExample", "\n----", "\n[PREV_", "Now your turn")
PLAN_SETTINGS = GenerationSettings(max_new_tokens=48, stop=NEXT_BLOCK)  # [SUBQ] outputs average 18 tokens (§3.1)
T2T_SETTINGS = GenerationSettings(max_new_tokens=160, stop=NEXT_BLOCK)  # ~ MAX_TRIPLES_PER_CHUNK
ANSWER_SETTINGS = GenerationSettings(max_new_tokens=32, stop=NEXT_BLOCK)  # a short phrase
_TRIPLE = re.compile(r"\(?\s*S>\s*([^|()]*?)\s*\|\s*(?:P>)?\s*([^|()]*?)\s*\|\s*(?:O>)?\s*([^|()]*?)\s*"
                     r"(?:\)|$|,\s*\(|\n)", re.IGNORECASE)
_TOKEN = re.compile(r"\[\s*(NO_RETRIEVAL|SUBQ|SUFFICIENT)\s*\]", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:answer|output)\s*:\s*", re.IGNORECASE)
_BLOCK_LABEL = re.compile(r"^(?:question|input|retrieved graph information)\s*:", re.IGNORECASE)
_BARE_LABEL = re.compile(r"^(?:output|input|question|answer)\s*(?::|$)\s*", re.IGNORECASE)


def raw(text: str) -> str:
    """The model's output as written (newlines escaped), for an error step; long output is cut."""
    body = text if len(text) <= MAX_RAW_SHOWN else text[: MAX_RAW_SHOWN - 1] + "…"
    return repr(body)


def history_pieces(rounds: Sequence[Round]) -> list[tuple[str, str, str]]:
    """(label, kind, text) of each sub-query and triple of the history, in prompt order."""
    pieces, n = [], 0
    for i, r in enumerate(rounds, 1):
        pieces.append((f"sub-query {i}", "subquery", r.subquery))
        for t in r.triples:
            n += 1
            pieces.append((f"triple {n}", "triple", t.render()))
    return pieces


def _prompt(name: str, pieces: dict[str, list[tuple[str, str, str]]], **values: str,
            ) -> tuple[str, tuple[PromptSegment, ...]]:
    return fill_with_segments(PROMPTS.load(name), pieces, **values)


def parse_plan(text: str) -> tuple[str, str, bool]:
    """(action, sub-query, kept the format). The first control token wins; case-insensitive ([code])."""
    body = text or ""
    match = _TOKEN.search(body)
    if not match:
        return "", "", False
    token = match.group(1).upper()
    if token == "SUBQ":
        line, _, after = body[match.end():].partition("\n")
        if not line.strip():  # '[SUBQ]' ends its line: the sub-query may stand on the next one
            line = next((text for text in after.splitlines() if text.strip()), "")
        query = _BARE_LABEL.sub("", one_line(_TOKEN.split(line)[0]).strip(" :-\"'")).strip(" :-\"'")
        return ("subq", query, True) if query else ("", "", False)
    return ("sufficient" if token == "SUFFICIENT" else "no_retrieval"), "", True


@dataclass(frozen=True)
class LlmPlanner:
    chat: ChatModel
    settings: GenerationSettings = PLAN_SETTINGS

    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan:
        history = render_history(rounds, "[PREV_SUBQ]", "[PREV_GRAPH_INFO]")
        prompt, segments = _prompt("plan", {"history": history_pieces(rounds),
                                            "question": [("question", "question", question)]},
                                   history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="planner", segments=segments)
        action, query, ok = parse_plan(reply.text)
        steps = reply.steps
        then = "retrieving for the question itself" if not rounds else "answering from the graph so far"
        if ok and action == "no_retrieval" and rounds:
            problem = "[NO_RETRIEVAL] is valid only as the first plan (spec §2.2)"
        elif ok and action == "subq" and fold(query) in {fold(r.subquery) for r in rounds}:
            problem = f"the planner repeated the sub-query {query!r}"
        elif ok and action == "subq" and copied_example(query, PROMPTS.load("plan"), f"{history}\n{question}"):
            problem = f"the sub-query {query!r} is a demonstration's, about nothing in the question or the graph"
        elif not ok:
            problem = "the planner's output had no usable [SUBQ] <sub-query> / [SUFFICIENT] / [NO_RETRIEVAL]"
        else:
            return Plan(action, query, steps=steps)
        if not reply.failed:  # a failed call already left its own error step
            steps += (error_step("planner", f"{problem}; got {raw(reply.text)}; {then}"),)
        action, query = ("subq", question) if not rounds else ("sufficient", "")
        return Plan(action, query, f"fallback: {problem}; {then}", steps=steps, fallback=True)


def supported(triple: Triple, passage: str) -> bool:
    """Subject and object each stand in the passage (most of their content words) and differ."""
    known = set(words(passage))

    def held(name: str) -> bool:
        own = [w for w in words(name) if w not in STOPWORDS] or words(name)
        return bool(own) and 2 * sum(w in known for w in own) >= len(own)

    return held(triple.head) and held(triple.tail) and fold(triple.head) != fold(triple.tail)


def parse_triples(text: str) -> tuple[tuple[Triple, ...], int]:
    """`(S> s| P> p| O> o)` pieces, once each, and how many `S>` pieces could not be read (a repeat was read)."""
    body = text or ""
    found = [Triple(s.strip(), p.strip(), o.strip().rstrip(",")) for s, p, o in _TRIPLE.findall(body)]
    read = [t for t in found if t.head and t.relation and t.tail]
    return tuple(dict.fromkeys(read)), max(len(re.findall(r"S>", body, re.IGNORECASE)) - len(read), 0)


@dataclass(frozen=True)
class LlmExtractor:
    chat: ChatModel
    settings: GenerationSettings = T2T_SETTINGS

    def extract(self, hit: Hit) -> Extraction:
        passage = one_line(embedding_text(hit))[:MAX_PASSAGE_CHARS]
        prompt, segments = _prompt("t2t", {"passage": [("passage", "document", passage)]}, passage=passage)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="text-to-triples",
                           segments=segments)
        parsed, bad = parse_triples(reply.text)
        triples = tuple(t for t in parsed if supported(t, passage))
        unsupported = len(parsed) - len(triples)
        steps = reply.steps
        if (bad or unsupported or not triples) and not reply.failed:
            steps += (error_step("text-to-triples", f"{bad} malformed triple(s), {unsupported} not supported by the "
                                 f"passage (a subject or object it does not hold, or a name linked to itself), "
                                 f"{len(triples)} kept from chunk {hit.chunk_id}; got {raw(reply.text)}"),)
        return Extraction(triples[:MAX_TRIPLES_PER_CHUNK], steps)


def parse_answer(text: str) -> str:
    """The first non-empty line without an 'Answer:'/'Output:' label or control tokens; '' when none.
    A question, or a line opening one of the prompt's blocks ('Question: …'), is the model writing a new
    example, never the answer."""
    for line in (text or "").splitlines():
        answer = one_line(_TOKEN.sub(" ", _LABEL.sub("", line)))
        if answer and not answer.endswith("?") and not _BLOCK_LABEL.match(answer):
            return answer
    return ""


@dataclass(frozen=True)
class LlmAnswerer:
    chat: ChatModel
    settings: GenerationSettings = ANSWER_SETTINGS

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        history = render_history(rounds) if rounds else f"{NO_RETRIEVAL}\n"
        prompt, segments = _prompt("answer", {"history": history_pieces(rounds),
                                              "question": [("question", "question", question)]},
                                   history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="answerer", segments=segments)
        text, rejected = _vetted(parse_answer(reply.text), question, history, reply.text)
        steps = reply.steps + rejected
        if not text:
            steps += (() if reply.failed or rejected else (
                error_step("answerer", f"the answerer's output held no answer; got {raw(reply.text)}"),))
            return Reading(IDK, refused=True, rationale="the model gave no usable answer", steps=steps)
        cited = tuple(dict.fromkeys(t.doc_id for t in graph.triples if t.doc_id and text.lower() in
                                    f"{t.head} {t.tail}".lower()))
        return Reading(text, cited or tuple(dict.fromkeys(h.doc_id for h in evidence))[:1], 0.5,
                       rationale=one_line(reply.text)[:500], steps=steps)


def _vetted(answer: str, question: str, history: str, reply: str) -> tuple[str, tuple[Step, ...]]:
    """The answer unless it is the prompt handed back; a sentence cut to its short answer (short_answer.py)."""
    if not answer:
        return "", ()
    template = PROMPTS.load("answer")
    if copied_example(answer, template, f"{history}\n{question}"):
        return "", (rejected_step("answerer", f"the answer {answer!r} is a demonstration's, held neither by the "
                                  "graph information nor by the question", reply),)
    vetted = vet_answer(answer, question, history.splitlines(), template)
    if hop_not_taken(question, vetted.answer):
        return "", (rejected_step("answerer", f"the answer {vetted.answer!r} is named by the question itself, a "
                                  "hop not taken", reply),)
    return vetted.answer, ((rejected_step("answerer", vetted.problem, reply),) if vetted.problem else ())
