"""ToG-2's LLM twins: topic prune, relation prune, reasoning and query re-formulation as prompted calls.

Prompts live in prompts/topic.txt, relations.txt, reason.txt and requery.txt (spec §2.3); their few-shot
demos are the paper's own (ToG/ToG-2 prompt demos), never a pack's question. Exploration calls (topic and
relation prune) sample at temperature 0.4, reasoning and re-formulation at 0 (spec §4, paper). Every call
passes the prompt's segments (question, entities, relations, triples, documents, clue) for attention
capture. Every parser is tolerant and falls back with an `error` step, never an exception (DESIGN §3, §12).

Small models (issue 23): each role stops where its prompt would start a new block and has a budget sized to
its reply (relation prune: a header and `width` lines per entity listed); a reply that is only the verdict
word ('No') is that verdict; a {Yes} answer that echoes the prompt (`vet_answer`), that only a demo holds,
that the question names or that is a question is no answer (read as {No}, with an error step), and a
re-formulated query copied from the demo is no query. The reasoning prompt's references are the chunks'
best sentences ([code]), not whole chunks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.graph.linking import EntityLink
from engine.knowledge.records import Triple
from engine.llm.chat import ChatModel, GenerationSettings, Message, PromptSegment
from engine.methods.tog2.offline import PER_ENTITY_FLOOR, fallback_query, keep_top, lexical_relation_scores
from engine.methods.tog2.tools import Reasoning, Reformulation, RelationChoice, RelationScore, TopicChoice
from engine.retrieval.embedder import Embedder
from engine.text import alnum_words, split_sentences
from engine.tools.base import IDK, Reading
from engine.tools.llm_call import call_model, error_step, locate_segments, one_line, shorten
from engine.tools.prompts import PromptFolder, fill_spans
from engine.tools.short_answer import copied_example, hop_not_taken, vet_answer
from engine.trace import Hit, Step

PROMPTS = PromptFolder.beside(__file__)
MAX_REFERENCE_CHARS = 600
REASON_SENTENCES = 10  # spec §4 [code]: num_sents_for_reasoning
MAX_TRIPLES = 40
# `{rel (Score: X)}` as the spec's regex; the braces may be missing and a list number may lead the relation
_SCORE = re.compile(r"(?:^|\{)\s*(?:\d+\s*[.)]\s*)?([^{}()\n]+?)\s*\(\s*score\s*:?\s*([0-9]+(?:\.[0-9]+)?)\s*\)"
                    r"\s*\}?", re.IGNORECASE)
_ENTITY_LINE = re.compile(r"^\W*entity\s*(\d+)\s*[:.)-]\s*(.*?)\W*$", re.IGNORECASE)
_BRACES = re.compile(r"\{([^{}]*)\}")
_REFUSAL = re.compile(r"^(?:i\s+)?(?:do\s*n[o'’]?t\s+know|cannot|unknown|not\s+(?:known|enough|sure))|^n/?a$",
                      re.IGNORECASE)
EXPLORE_TEMPERATURE = 0.4  # spec §4 (paper): topic and relation prune; the released code uses 0
# where each prompt would begin its next block: a reply that goes on past them is the model writing a new demo
NEXT_BLOCK = ("\nQuestion:", "\nExample", "\nEntities:", "\nKnowledge triplets:", "\nReferences:")
TOPIC_SETTINGS = GenerationSettings(max_new_tokens=96, temperature=EXPLORE_TEMPERATURE, stop=NEXT_BLOCK)
RELATION_SETTINGS = GenerationSettings(max_new_tokens=192, temperature=EXPLORE_TEMPERATURE,
                                       stop=(*NEXT_BLOCK, "\nAvailable Relations"))
REASON_SETTINGS = GenerationSettings(max_new_tokens=96, temperature=0.0, stop=(*NEXT_BLOCK, "\nAnswer:"))
REQUERY_SETTINGS = GenerationSettings(max_new_tokens=64, temperature=0.0, stop=(*NEXT_BLOCK, "\nClues so far:"))
RELATION_HEADER_TOKENS, RELATION_LINE_TOKENS = 8, 24  # 'Entity 1: name' / '1. {rel (Score: 7)}: a few words'
MAX_ERROR_CHARS = 400  # raw model output quoted in a reasoning/re-formulation error step


def _prompt(name: str, pieces: Sequence[tuple[str, str, str]],
            **values: object) -> tuple[str, tuple[PromptSegment, ...]]:
    """The filled prompt and the spans of its pieces, looked for from the question on (after the demos)."""
    message, spans = fill_spans(PROMPTS.load(name), **values)
    start = spans["question"][0] if "question" in spans else 0
    found = locate_segments(message[start:], pieces)
    return message, tuple(replace(s, start=s.start + start, end=s.end + start) for s in found)


@dataclass(frozen=True)
class LlmTopicPruner:
    chat: ChatModel
    settings: GenerationSettings = TOPIC_SETTINGS

    def prune(self, question: str, links: Sequence[EntityLink], width: int) -> TopicChoice:
        names = [link.entity for link in links]
        entities = json.dumps({n: n for n in names}, ensure_ascii=False)
        pieces = [("question", "question", question)] + [
            (f"entity {n}", "entity", json.dumps(name, ensure_ascii=False)) for n, name in enumerate(names, start=1)]
        prompt, segments = _prompt("topic", pieces, question=question, entities=entities)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="topic prune",
                           segments=segments)
        kept, ok = parse_topic_output(reply.text, names)
        steps = reply.steps
        if not ok and not reply.failed:
            steps += (error_step("topic prune", f"topic prune output had no JSON subset of the entities; got "
                                 f"{shorten(reply.text)}; kept all {len(names)} linked entities"),)
        if not kept:
            kept = tuple(names)  # spec §2.1.2 [code]: on a failure every entity is kept
        return TopicChoice(tuple(kept[:width]), tuple((n, 1.0 if n in kept else 0.0) for n in names), steps)


def parse_topic_output(text: str, names: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """Entities the model kept, in the linker's order, and whether it kept to the JSON format."""
    by_lower = {n.lower(): n for n in names}
    for raw in re.findall(r"\{[^{}]*\}", text or ""):
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict):
            picked = {by_lower[str(v).lower()] for kv in data.items() for v in kv if str(v).lower() in by_lower}
            if picked or not data:
                return tuple(n for n in names if n in picked), True
    mentioned = {n for n in names if n.lower() in (text or "").lower()}
    return tuple(n for n in names if n in mentioned), False


@dataclass(frozen=True)
class LlmRelationPruner:
    """One call for all entities ('combined', the default) or one call per entity ('per-entity')."""

    chat: ChatModel
    settings: GenerationSettings = RELATION_SETTINGS

    def prune(self, question: str, clue: str, paths: Mapping[str, str], relations: Mapping[str, Sequence[str]],
              width: int, mode: str) -> RelationChoice:
        relations = {e: r for e, r in relations.items() if r}  # an entity with nothing to follow is not listed
        groups = [relations] if mode != "per-entity" else [{e: r} for e, r in relations.items()]
        scores: list[RelationScore] = []
        steps: tuple[Step, ...] = ()
        for group in groups:
            if not any(group.values()):
                continue
            got, more = self._one_call(question, clue, group, width)
            scores += got
            steps += more
        return RelationChoice(keep_top(scores, width, PER_ENTITY_FLOOR if mode == "per-entity" else 0.0), steps)

    def _one_call(self, question: str, clue: str, relations: Mapping[str, Sequence[str]],
                  width: int) -> tuple[list[RelationScore], tuple[Step, ...]]:
        pieces = [("question", "question", question), ("clue", "clue", clue)]
        for n, (entity, rels) in enumerate(relations.items(), start=1):
            pieces.append((f"entity {n}", "entity", f"Entity {n}: {entity}"))
            pieces += [(f"relation {n}.{i}", "relation", f"{i}. {r}") for i, r in enumerate(rels, start=1)]
        prompt, segments = _prompt("relations", pieces, width=width, question=question,
                                   clue=f"Clues so far: {clue}\n" if clue else "",
                                   entities=format_relations(relations))
        budget = min(self.settings.max_new_tokens,
                     len(relations) * (RELATION_HEADER_TOKENS + width * RELATION_LINE_TOKENS))
        reply = call_model(self.chat, (Message("user", prompt),), replace(self.settings, max_new_tokens=budget),
                           role="relation prune", segments=segments)
        scores = parse_relation_output(reply.text, relations)
        if scores:
            return scores, reply.steps
        fallback = lexical_relation_scores(question, relations)
        message = (f"relation prune output had no '{{relation (Score: X)}}' lines for the listed relations; got "
                   f"{shorten(reply.text)}; ranked relations by word overlap with the question instead")
        return fallback, reply.steps + (() if reply.failed else (error_step("relation prune", message),))


def format_relations(relations: Mapping[str, Sequence[str]]) -> str:
    blocks = []
    for n, (entity, rels) in enumerate(relations.items(), start=1):
        lines = "\n".join(f"{i}. {r}" for i, r in enumerate(rels, start=1))
        blocks.append(f"Entity {n}: {entity}\nAvailable Relations:\n{lines}")
    return "\n\n".join(blocks)


def parse_relation_output(text: str, relations: Mapping[str, Sequence[str]]) -> list[RelationScore]:
    """`{rel (Score: X)}: why` lines, attributed to the `Entity n: name` section they sit in (spec §2.2.2)."""
    entities = list(relations)
    current: str | None = entities[0] if len(entities) == 1 else None
    found: dict[tuple[str, str], RelationScore] = {}
    for line in (text or "").splitlines():
        header = _ENTITY_LINE.match(line)
        if header:
            current = _section_entity(header, entities) or current
            continue
        for match in _SCORE.finditer(line):
            reason = one_line(line[match.end():]).lstrip(":- ").strip()
            for entity in ([current] if current else entities):
                relation = _match_relation(match.group(1), relations.get(entity, ()))
                if relation and (entity, relation) not in found:
                    found[(entity, relation)] = RelationScore(entity, relation, float(match.group(2)), reason[:200])
                    break
    scores = list(found.values())
    # some demos score 0..1 (spec §8.10): all scores <= 1 with a fraction among them means that scale
    if scores and max(s.score for s in scores) <= 1.0 and any(not s.score.is_integer() for s in scores):
        scores = [replace(s, score=round(s.score * 10, 2)) for s in scores]
    return [replace(s, score=min(s.score, 10.0)) for s in scores]


def _section_entity(header: re.Match[str], entities: list[str]) -> str | None:
    name = header.group(2).strip().lower()
    by_name = next((e for e in entities if e.lower() == name), None)
    if by_name:
        return by_name
    n = int(header.group(1))
    return entities[n - 1] if 1 <= n <= len(entities) else None


def _match_relation(written: str, relations: Sequence[str]) -> str | None:
    def norm(r: str) -> str:
        return "_".join(alnum_words(r))

    key = norm(written)
    incoming = written.strip().startswith("~")
    exact = [r for r in relations if norm(r) == key and r.startswith("~") == incoming]
    loose = [r for r in relations if norm(r) == key]
    return (exact or loose or [None])[0]


@dataclass(frozen=True)
class LlmReasoner:
    """With an embedder, the references are the best REASON_SENTENCES sentences of the chunks ([code]:
    top-10 sentences re-scored against the question, spec §2.2.6), not whole chunks: a quarter of the
    prompt, which a small model reads far better and every model reads faster."""

    chat: ChatModel
    settings: GenerationSettings = REASON_SETTINGS
    embedder: Embedder | None = None

    def reason(self, question: str, facts: Sequence[Triple], evidence: Sequence[Hit], clue: str,
               final: bool) -> Reasoning:
        shown = best_sentences(question, evidence, self.embedder) if self.embedder else evidence
        prompt, segments = build_reason_prompt_segments(question, facts, shown, clue, final)
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="reasoning",
                           segments=segments)
        verdict, content, ok = parse_reason_output(reply.text)
        steps = reply.steps
        if reply.failed:
            return Reasoning(False, Reading(IDK, refused=True, rationale="the reasoning model failed"), steps=steps)
        rationale = one_line(reply.text)[:500]
        if not ok and not verdict:  # spec §2.2.6: no {Yes}/{No} verdict is never an answer nor a clue
            steps += (error_step("reasoning", "reasoning output had no {Yes}/{No} verdict; read it as {No} "
                                 f"with no clue; got {shorten(reply.text, MAX_ERROR_CHARS)}"),)
            return Reasoning(False, Reading(IDK, refused=True, rationale=rationale or "no verdict"), steps=steps)
        if verdict and (not content or _REFUSAL.search(content)):
            steps += (error_step("reasoning", "reasoning said {Yes} without an answer; read it as {No} with no "
                                 f"clue; got {shorten(reply.text, MAX_ERROR_CHARS)}"),)
            return Reasoning(False, Reading(IDK, refused=True, rationale=rationale), steps=steps)
        if verdict:
            answer, problem = _vetted(content, question, facts, evidence)
            if not answer:
                steps += (error_step("reasoning", f"reasoning said {{Yes}} but {problem}; read it as {{No}} with no "
                                     f"clue; got {shorten(reply.text, MAX_ERROR_CHARS)}"),)
                return Reasoning(False, Reading(IDK, refused=True, rationale=rationale), steps=steps)
            if problem:
                steps += (error_step("reasoning", f"{problem}; got {shorten(reply.text, MAX_ERROR_CHARS)}"),)
            reading = Reading(answer, _citations(answer, evidence), 0.5 if ok and not problem else 0.2,
                              rationale=rationale)
            return Reasoning(True, reading, steps=steps)
        return Reasoning(False, Reading(IDK, refused=True, rationale=rationale), clue=content[:300], steps=steps)


def _vetted(answer: str, question: str, facts: Sequence[Triple], evidence: Sequence[Hit]) -> tuple[str, str]:
    """(answer, problem): '' with why when the {Yes} answer is the prompt handed back (the question, an
    instruction, a passage, a demo's answer) or a name the question gives; a sentence cut to its short
    answer, saying so."""
    given = "\n".join([question, *(f"{t.head} {t.relation} {t.tail}" for t in facts),
                       *(f"{h.title} {h.text}" for h in evidence)])
    if answer.endswith("?"):
        return "", f"its answer {answer!r} is a question"
    if copied_example(answer, PROMPTS.load("reason"), given):
        return "", f"its answer {answer!r} is a demo's, held by neither the triples nor the references"
    vetted = vet_answer(answer, question, [h.text for h in evidence], PROMPTS.load("reason"))
    if hop_not_taken(question, vetted.answer):  # as the offline twin: a hop not taken
        return "", f"its answer {vetted.answer!r} is named by the question itself"
    return vetted.answer, (f"its answer {answer!r} is not taken as written: {vetted.problem}" if vetted.problem else "")


def best_sentences(question: str, evidence: Sequence[Hit], embedder: Embedder,
                   k: int = REASON_SENTENCES) -> tuple[Hit, ...]:
    """The chunks cut to their `k` sentences best matching the question over all of them, each kept in
    its own order; a chunk left with none is left out."""
    sentences = [(n, sentence) for n, h in enumerate(evidence) for sentence in split_sentences(h.text)]
    if len(sentences) <= k:
        return tuple(evidence)
    sims = embedder.encode_queries([s for _, s in sentences]) @ embedder.encode_queries([question])[0]  # (n,)
    kept = set(sorted(range(len(sentences)), key=lambda i: -float(sims[i]))[:k])
    return tuple(replace(h, text=" ".join(s for i, (m, s) in enumerate(sentences) if m == n and i in kept))
                 for n, h in enumerate(evidence) if any(sentences[i][0] == n for i in kept))


def build_reason_prompt(question: str, facts: Sequence[Triple], evidence: Sequence[Hit], clue: str,
                        final: bool) -> str:
    return build_reason_prompt_segments(question, facts, evidence, clue, final)[0]


def build_reason_prompt_segments(question: str, facts: Sequence[Triple], evidence: Sequence[Hit], clue: str,
                                 final: bool) -> tuple[str, tuple[PromptSegment, ...]]:
    """The reasoning prompt and where its question, clue, each triple and each reference sit."""
    lines = [f"({t.head}, {t.relation}, {t.tail})" for t in list(facts)[:MAX_TRIPLES]]
    refs = [f"[{n}] {one_line(h.title)} — {one_line(h.text)[:MAX_REFERENCE_CHARS]}"
            for n, h in enumerate(evidence, start=1)]
    last = ("This is the last round: answer {Yes} with your best answer even if the knowledge is incomplete.\n"
            if final else "")
    pieces = ([("question", "question", question), ("clue", "clue", clue)]
              + [(f"triple {n}", "triple", line) for n, line in enumerate(lines, start=1)]
              + [(f"doc {n}", "document", ref) for n, ref in enumerate(refs, start=1)])
    return _prompt("reason", pieces, question=question, clue=f"Clues so far: {clue}\n" if clue else "",
                   triples="\n".join(lines) or "(none)", references="\n".join(refs) or "(none)", final=last)


def parse_reason_output(text: str) -> tuple[bool, str, bool]:
    """(sufficient, answer-or-clue, kept the format).

    The verdict is the first brace, {Yes} or {No}, with the answer or clue in the next brace (else the
    rest of that line); a reply that is the verdict word alone ('No', '{No}.') is that verdict with nothing
    after it. Lenient, as the released code: "yes" before any "no" in the first 100 words
    counts, but only with the answer in braces; anything else is (False, '', False): neither an answer
    nor a clue.
    """
    body = (text or "").strip()
    braces = [b.strip() for b in _BRACES.findall(body)]
    if body.lower().strip(" .!{}") in ("yes", "no"):  # the verdict alone, as a weak model often answers
        return body.lower().strip(" .!{}") == "yes", "", True
    if braces and braces[0].lower().strip(" .!") in ("yes", "no"):
        verdict = braces[0].lower().strip(" .!") == "yes"
        rest = braces[1] if len(braces) > 1 else body.split("}", 1)[1].strip().split("\n", 1)[0]
        return verdict, _content(rest), True
    words = [w for w in alnum_words(body)[:100] if w in ("yes", "no")]
    answers = [b for b in braces if b and b.lower().strip(" .!") not in ("yes", "no")]
    if words and words[0] == "yes" and answers:
        return True, _content(answers[0]), False
    return False, "", False


def _content(text: str) -> str:
    """The answer or clue, without quotes, trailing dots or a 'clue:'/'answer:' label the demos use."""
    flat = one_line(text).strip(" .:\"'")
    return re.sub(r"^(?:clue|answer)\s*:\s*", "", flat, flags=re.IGNORECASE).strip(" .:\"'")


@dataclass(frozen=True)
class LlmQueryReformer:
    chat: ChatModel
    settings: GenerationSettings = REQUERY_SETTINGS

    def reform(self, question: str, clue: str, facts: Sequence[Triple]) -> Reformulation:
        lines = [f"({t.head}, {t.relation}, {t.tail})" for t in list(facts)[:MAX_TRIPLES]]
        pieces = ([("question", "question", question), ("clue", "clue", clue)]
                  + [(f"triple {n}", "triple", line) for n, line in enumerate(lines, start=1)])
        prompt, segments = _prompt("requery", pieces, question=question, clue=clue or "(none)",
                                   triples="\n".join(lines) or "(none)")
        reply = call_model(self.chat, (Message("user", prompt),), self.settings, role="query re-formulation",
                           segments=segments)
        query, missing = parse_requery_output(reply.text)
        given = "\n".join([question, clue, *lines])
        if query and not copied_example(query, PROMPTS.load("requery"), given):
            return Reformulation(query, missing, reply.steps)
        problem = f"its query {query!r} is the demo's" if query else "no {query} in braces"
        fallback = fallback_query(question, clue)
        steps = reply.steps + (() if reply.failed else (error_step(
            "query re-formulation", f"query re-formulation output had {problem}; searched with the question and "
            f"the clue instead; got {shorten(reply.text, MAX_ERROR_CHARS)}"),))
        return Reformulation(fallback, "", steps)


def parse_requery_output(text: str) -> tuple[str, str]:
    """(new query, missing evidence): the last non-empty brace, and the 'Missing:' line ('' if none)."""
    braces = [one_line(b).strip(" .:\"'") for b in _BRACES.findall(text or "")]
    query = next((b for b in reversed(braces) if b), "")
    missing = re.search(r"missing\s*:\s*(.+)", text or "", re.IGNORECASE)
    return query[:300], (one_line(missing.group(1))[:300] if missing else "")


def _citations(answer: str, evidence: Sequence[Hit]) -> tuple[str, ...]:
    containing = [h.doc_id for h in evidence if answer.lower() in h.text.lower()]
    return tuple(dict.fromkeys(containing or [h.doc_id for h in evidence[:1]]))
