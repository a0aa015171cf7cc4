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
- t2t parsing: one malformed triple drops only itself, not the round (spec §8 notes the [code] loses the
  whole round's graph).
- answerer: the first non-empty line, without an 'Answer:'/'Output:' label or control tokens; nothing
  left means a refusal with an error step, never a control token or an empty string as the answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.knowledge.records import Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.ras.base import (
    MAX_TRIPLES_PER_CHUNK, NO_RETRIEVAL, Answerer, Extraction, Extractor, Plan, Planner, Round, render_history,
)
from engine.methods.ras.query_graph import QueryGraph, fold
from engine.tools.base import IDK, Reading
from engine.tools.llm_call import call_model, error_step, fill_with_segments, one_line
from engine.tools.prompts import PromptFolder
from engine.trace import Hit

PROMPTS = PromptFolder.beside(__file__)

MAX_PASSAGE_CHARS = 2000
MAX_RAW_SHOWN = 500  # characters of unusable model output quoted in an error step
PLAN_SETTINGS = GenerationSettings(max_new_tokens=64)
T2T_SETTINGS = GenerationSettings(max_new_tokens=200)
ANSWER_SETTINGS = GenerationSettings(max_new_tokens=64)
_TRIPLE = re.compile(r"\(?\s*S>\s*([^|()]*?)\s*\|\s*P>\s*([^|()]*?)\s*\|\s*O>\s*([^|()]*?)\s*(?:\)|$|,\s*\(|\n)",
                     re.IGNORECASE)
_TOKEN = re.compile(r"\[\s*(NO_RETRIEVAL|SUBQ|SUFFICIENT)\s*\]", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:answer|output)\s*:\s*", re.IGNORECASE)


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
        rest = body[match.end():].strip()
        rest = _TOKEN.split(rest)[0] if _TOKEN.search(rest) else rest
        query = one_line(rest.splitlines()[0] if rest else "").strip(" :-\"'")
        return ("subq", query, True) if query else ("", "", False)
    return ("sufficient" if token == "SUFFICIENT" else "no_retrieval"), "", True


@dataclass(frozen=True)
class LlmPlanner(Planner):
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
        elif not ok:
            problem = "the planner's output had no usable [SUBQ] <sub-query> / [SUFFICIENT] / [NO_RETRIEVAL]"
        else:
            return Plan(action, query, steps=steps)
        if not reply.failed:  # a failed call already left its own error step
            steps += (error_step("planner", f"{problem}; got {raw(reply.text)}; {then}"),)
        action, query = ("subq", question) if not rounds else ("sufficient", "")
        return Plan(action, query, f"fallback: {problem}; {then}", steps=steps, fallback=True)


def parse_triples(text: str) -> tuple[tuple[Triple, ...], int]:
    """`(S> s| P> p| O> o)` pieces, and how many `S>` pieces could not be read."""
    body = text or ""
    found = [Triple(s.strip(), p.strip(), o.strip().rstrip(",")) for s, p, o in _TRIPLE.findall(body)]
    good = tuple(dict.fromkeys(t for t in found if t.head and t.relation and t.tail))
    return good, max(len(re.findall(r"S>", body, re.IGNORECASE)) - len(good), 0)


@dataclass(frozen=True)
class LlmExtractor(Extractor):
    chat: ChatModel
    settings: GenerationSettings = T2T_SETTINGS

    def extract(self, hit: Hit) -> Extraction:
        passage = one_line(f"{hit.title}. {hit.text}")[:MAX_PASSAGE_CHARS]
        prompt, segments = _prompt("t2t", {"passage": [("passage", "document", passage)]}, passage=passage)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="text-to-triples",
                           segments=segments)
        triples, bad = parse_triples(reply.text)
        steps = reply.steps
        if (bad or not triples) and not reply.failed:
            steps += (error_step("text-to-triples", f"{bad} malformed triple(s), {len(triples)} read from chunk "
                                 f"{hit.chunk_id}; kept the well-formed ones; got {raw(reply.text)}"),)
        return Extraction(triples[:MAX_TRIPLES_PER_CHUNK], steps)


def parse_answer(text: str) -> str:
    """The first non-empty line without an 'Answer:'/'Output:' label or control tokens; '' when none."""
    for line in (text or "").splitlines():
        answer = one_line(_TOKEN.sub(" ", _LABEL.sub("", line)))
        if answer:
            return answer
    return ""


@dataclass(frozen=True)
class LlmAnswerer(Answerer):
    chat: ChatModel
    settings: GenerationSettings = ANSWER_SETTINGS

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        history = render_history(rounds) if rounds else f"{NO_RETRIEVAL}\n"
        prompt, segments = _prompt("answer", {"history": history_pieces(rounds),
                                              "question": [("question", "question", question)]},
                                   history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="answerer", segments=segments)
        text = parse_answer(reply.text)
        if not text:
            steps = reply.steps + (() if reply.failed else (
                error_step("answerer", f"the answerer's output held no answer; got {raw(reply.text)}"),))
            return Reading(IDK, refused=True, rationale="the model gave no usable answer", steps=steps)
        cited = tuple(dict.fromkeys(t.doc_id for t in graph.triples if t.doc_id and text.lower() in
                                    f"{t.head} {t.tail}".lower()))
        return Reading(text, cited or tuple(dict.fromkeys(h.doc_id for h in evidence))[:1], 0.5,
                       rationale=one_line(reply.text)[:500], steps=reply.steps)
