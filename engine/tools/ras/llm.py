"""RAS's LLM twins: planner, text-to-triples and answerer, with tolerant parsers.

Prompts: ../prompts/ras_plan.txt, ras_t2t.txt, ras_answer.txt (spec §2.3). Every parser is tolerant and
falls back with an `error` step, never an exception.

[decide] choices that live here:
- planner: a reply without a control token falls back to the question as sub-query in round 0 and to
  [SUFFICIENT] later (never loop on garbage); a repeated sub-query counts as [SUFFICIENT].
- t2t parsing: one malformed triple drops only itself, not the round (spec §8 notes the [code] loses the
  whole round's graph).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.query_graph import QueryGraph, fold
from engine.knowledge.records import Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.tools.base import IDK, Reading
from engine.tools.llm_call import call_model, error_step, one_line, shorten
from engine.tools.prompts import fill, load_prompt
from engine.tools.ras.base import (
    MAX_TRIPLES_PER_CHUNK, NO_RETRIEVAL, Answerer, Extraction, Extractor, Plan, Planner, Round, render_history,
)
from engine.trace import Hit

MAX_PASSAGE_CHARS = 2000
PLAN_SETTINGS = GenerationSettings(max_new_tokens=64)
T2T_SETTINGS = GenerationSettings(max_new_tokens=200)
ANSWER_SETTINGS = GenerationSettings(max_new_tokens=64)
_TRIPLE = re.compile(r"\(?\s*S>\s*([^|()]*?)\s*\|\s*P>\s*([^|()]*?)\s*\|\s*O>\s*([^|()]*?)\s*(?:\)|$|,\s*\(|\n)",
                     re.IGNORECASE)
_TOKEN = re.compile(r"\[\s*(NO_RETRIEVAL|SUBQ|SUFFICIENT)\s*\]", re.IGNORECASE)


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
        prompt = fill(load_prompt("ras_plan"), history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="planner")
        action, query, ok = parse_plan(reply.text)
        steps = reply.steps
        if action == "no_retrieval" and rounds:
            action, ok = "", False  # [NO_RETRIEVAL] is valid only as the first plan (spec §2.2)
        if not ok:
            action, query = ("subq", question) if not rounds else ("sufficient", "")
            if not reply.failed:
                then = "retrieving for the question itself" if not rounds else "answering from the graph so far"
                steps += (error_step("planner", f"planner output had no usable [SUBQ] q / [SUFFICIENT] / "
                                     f"[NO_RETRIEVAL]; got {shorten(reply.text)}; {then}"),)
            return Plan(action, query, "fallback", steps=steps)
        if action == "subq" and fold(query) in {fold(r.subquery) for r in rounds}:
            steps += (error_step("planner", f"planner repeated the sub-query {query!r}; answering instead"),)
            return Plan("sufficient", "", "repeated sub-query", steps=steps)
        return Plan(action, query, "model", steps=steps)


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
        prompt = fill(load_prompt("ras_t2t"), passage=passage)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="text-to-triples")
        triples, bad = parse_triples(reply.text)
        steps = reply.steps
        if (bad or not triples) and not reply.failed:
            steps += (error_step("text-to-triples", f"{bad} malformed triple(s), {len(triples)} read from chunk "
                                 f"{hit.chunk_id}; got {shorten(reply.text)}; kept the well-formed ones"),)
        return Extraction(triples[:MAX_TRIPLES_PER_CHUNK], steps)


@dataclass(frozen=True)
class LlmAnswerer(Answerer):
    chat: ChatModel
    settings: GenerationSettings = ANSWER_SETTINGS

    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading:
        history = render_history(rounds) if rounds else f"{NO_RETRIEVAL}\n"
        prompt = fill(load_prompt("ras_answer"), history=history, question=question)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="answerer")
        text = one_line(reply.text.strip().splitlines()[0] if reply.text.strip() else "")
        text = re.sub(r"^(?:answer\s*:\s*)", "", text, flags=re.IGNORECASE).strip()
        if not text:
            steps = reply.steps + (() if reply.failed else (error_step("answerer", "the answerer gave no text"),))
            return Reading(IDK, refused=True, rationale="the model gave no answer", steps=steps)
        cited = tuple(dict.fromkeys(t.doc_id for t in graph.triples if t.doc_id and text.lower() in
                                    f"{t.head} {t.tail}".lower()))
        return Reading(text, cited or tuple(dict.fromkeys(h.doc_id for h in evidence))[:1], 0.5,
                       rationale=one_line(reply.text)[:500], steps=reply.steps)
