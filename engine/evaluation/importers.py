"""Import public multi-hop QA datasets (HotpotQA, 2WikiMultiHopQA, MuSiQue) as knowledge packs."""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from engine.errors import IngestError, UnknownNameError
from engine.evaluation.importers_json import Record, read_records
from engine.knowledge.records import Document, Pack, PackInfo, Question, Triple

ADVERSARIAL_TITLE = "added"  # the adversarial set's title for distractors written to mislead
_YES_NO = {"yes", "no"}
# Where a distractor's subject ends: "Dori shoes (Dori: …) is the largest airline…" -> "Dori shoes".
_SUBJECT_END = re.compile(r"\s\(|,|;|\s(?:is|was|are|were|has|had|competed|refers)\s")
_HOP_REFERENCE = re.compile(r"#\d")  # MuSiQue's "#1 >> spouse": a step built on an earlier step's answer


@dataclass(frozen=True)
class Dataset:
    """What one `import-<name>` command reads; its formats (below) are told apart by their keys."""

    name: str
    title: str
    license: str
    id_prefix: str  # document ids read `<prefix>-<8 hex digits>`
    json_lines: bool = False  # one question per line is accepted besides a JSON list


DATASETS = {d.name: d for d in (
    Dataset("hotpot", "HotpotQA (distractor or adversarial JSON)", "CC BY-SA 4.0 (HotpotQA)", "hp"),
    Dataset("2wiki", "2WikiMultiHopQA (dev/train JSON)", "Apache 2.0 (2WikiMultiHopQA)", "2w"),
    Dataset("musique", "MuSiQue (.jsonl)", "CC BY 4.0 (MuSiQue)", "mq", json_lines=True),
)}


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str
    supporting: bool
    adversarial: bool = False


@dataclass(frozen=True)
class Item:
    """One question in a dataset-neutral shape, before paragraphs are pooled into a corpus.

    Empty `topic_entities` means the titles of the supporting paragraphs.
    """

    source_id: str
    question: str
    answers: tuple[str, ...]
    type: str
    paragraphs: tuple[Paragraph, ...]
    hops: int = 2
    topic_entities: tuple[str, ...] = ()
    triples: tuple[Triple, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Imported:
    """A pack built from a dataset file, and how many of its questions were left out, by reason."""

    pack: Pack
    skipped: dict[str, int] = field(default_factory=dict)


class ItemProblem(ValueError):
    """One item of a dataset file is malformed; the importer adds the item index."""


class SkipItem(Exception):
    """A well-formed item the pack deliberately leaves out; the message is the reason counted."""


@dataclass(frozen=True)
class DatasetFormat:
    name: str
    title: str
    dataset: str  # the DATASETS entry whose command reads it
    keys: frozenset[str]  # the keys that identify the format, checked on the first item
    parse: Callable[[dict[str, Any]], Item]


FORMATS: dict[str, DatasetFormat] = {}


def dataset_format(name: str, title: str, dataset: str, keys: set[str]) -> Callable[[Callable], Callable]:
    """Register an item parser for a dataset format recognised by `keys`."""
    def register(parse: Callable[[dict[str, Any]], Item]) -> Callable[[dict[str, Any]], Item]:
        FORMATS[name] = DatasetFormat(name=name, title=title, dataset=dataset, keys=frozenset(keys), parse=parse)
        return parse
    return register


def import_dataset(path: Path, dataset: str, name: str | None = None, limit: int = 0) -> Imported:
    """Read a dataset file and pool every question's paragraphs into one deduplicated corpus.

    `limit` keeps the first N questions (0: all) and stops reading there. Raises IngestError listing
    every problem (`file:line: item i: problem`); never returns half a pack.
    """
    if dataset not in DATASETS:
        raise UnknownNameError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    if limit < 0:
        raise IngestError(f"limit {limit} is negative; give a number of questions, or 0 for all")
    spec, path = DATASETS[dataset], Path(path)
    records = read_records(path, json_lines=spec.json_lines)
    first = next(records)
    fmt = _detect(first, spec, str(path))
    problems: list[str] = []
    skipped: Counter[str] = Counter()
    items = _items(chain([first], records), fmt, str(path), problems, skipped, limit)
    documents, questions, triples = _pool(items, spec.id_prefix)
    if problems:
        raise IngestError(problems)
    if not questions:
        reasons = ", ".join(f"{n} {reason}" for reason, n in skipped.items())
        raise IngestError(f"{path}: no question to import; every one was skipped ({reasons})")
    left_out = "".join(f"; skipped {n} {reason}" for reason, n in skipped.items())
    pack = Pack(
        info=PackInfo(name=name or path.stem, title=fmt.title, license=spec.license,
                      description=f"{len(questions)} questions over {len(documents)} pooled paragraphs, "
                                  f"imported from {path.name} ({fmt.name}){left_out}."),
        documents=tuple(documents), triples=tuple(triples), questions=tuple(questions),
    )
    return Imported(pack=pack, skipped=dict(skipped))


def _detect(first: Record, spec: Dataset, label: str) -> DatasetFormat:
    """The most specific format whose keys the first item has (2Wiki's keys include HotpotQA's)."""
    where = f"{label}:{first.line}: item {first.index}"
    keys = first.value.keys() if isinstance(first.value, dict) else set()
    matches = [f for f in FORMATS.values() if f.keys <= keys]
    if matches:
        best = max(matches, key=lambda f: len(f.keys))
        if best.dataset == spec.name:
            return best
        raise IngestError(f"{where}: this is a {best.title} file; import it with `import-{best.dataset}`")
    own = [f for f in FORMATS.values() if f.dataset == spec.name]
    known = "; ".join(f"{f.name} (keys {', '.join(sorted(f.keys))})" for f in own)
    shown = sorted(keys)[:10] if isinstance(first.value, dict) else type(first.value).__name__
    raise IngestError(f"{where}: unknown dataset format (keys {shown}); known: {known}")


def _items(records: Iterable[Record], fmt: DatasetFormat, label: str, problems: list[str],
           skipped: Counter[str], limit: int) -> Iterator[Item]:
    """Parsed items, lazily; malformed ones go to `problems` and deliberate omissions to `skipped`."""
    kept = 0
    for record in records:
        try:
            if not isinstance(record.value, dict):
                raise ItemProblem(f"expected an object, got {type(record.value).__name__}")
            item = fmt.parse(record.value)
        except ItemProblem as exc:
            problems.append(f"{label}:{record.line}: item {record.index}: {exc}")
            continue
        except SkipItem as exc:
            skipped[str(exc)] += 1
            continue
        yield item
        kept += 1
        if kept == limit:
            return


def _get(raw: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in raw:
        raise ItemProblem(f"missing key {key!r}")
    value = raw[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python; only accept it where bool is asked for.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        raise ItemProblem(f"key {key!r} must be {wanted}, got {type(value).__name__}")
    return value


def _text(raw: dict[str, Any], key: str) -> str:
    value = _get(raw, key, str).strip()
    if not value:
        raise ItemProblem(f"key {key!r} is empty")
    return value


# --- formats ----------------------------------------------------------------------------------

@dataset_format("hotpotqa-adversarial", "HotpotQA (adversarial distractors)", "hotpot", {"qas_id", "paragraphs"})
def parse_adversarial(raw: dict[str, Any]) -> Item:
    """{qas_id, question, answer, paragraphs: [{title, context, is_supp}], rationale}."""
    question, answer = _text(raw, "question"), _text(raw, "answer")
    paragraphs = []
    for n, entry in enumerate(_get(raw, "paragraphs", list)):
        if not isinstance(entry, dict):
            raise ItemProblem(f"paragraph {n}: expected an object, got {type(entry).__name__}")
        try:
            title, text = _get(entry, "title", str).strip(), _text(entry, "context")
            supporting = bool(_get(entry, "is_supp", (bool, int)))
        except ItemProblem as exc:
            raise ItemProblem(f"paragraph {n}: {exc}") from None
        paragraphs.append(Paragraph(title=title, text=text, supporting=supporting,
                                    adversarial=title.lower() == ADVERSARIAL_TITLE))
    return Item(source_id=_text(raw, "qas_id"), question=question, answers=(answer,),
                type=_adversarial_type(question, answer), paragraphs=tuple(paragraphs),
                extra={"dataset": "hotpotqa-adversarial"})


def _adversarial_type(question: str, answer: str) -> str:
    """The adversarial set has no type: yes/no answers, or picking one of two named options, compare."""
    normal = _normalise(answer)
    if normal in _YES_NO:
        return "comparison"
    # "Who is older, A or B?" names the answer; "What word or phrase…" does not.
    if " or " in question and normal and normal in _normalise(question):
        return "comparison"
    return "multi_hop"


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


HOTPOT_TYPES = {"bridge": "multi_hop", "comparison": "comparison"}
# 2WikiMultiHopQA (Ho et al., COLING 2020, §2): inference and compositional chain two relations;
# bridge_comparison compares an attribute reached through a bridge entity.
TWOWIKI_TYPES = {"comparison": "comparison", "inference": "multi_hop", "compositional": "multi_hop",
                 "bridge_comparison": "comparison"}


@dataset_format("hotpotqa", "HotpotQA (distractor setting)", "hotpot", {"_id", "context", "supporting_facts"})
def parse_distractor(raw: dict[str, Any]) -> Item:
    """{_id, question, answer, type, level, supporting_facts: [[title, sent]], context: [[title, [sent]]]}."""
    hotpot_type, facts, paragraphs = _with_context(raw, HOTPOT_TYPES)
    return Item(source_id=_text(raw, "_id"), question=_text(raw, "question"), answers=(_text(raw, "answer"),),
                type=HOTPOT_TYPES[hotpot_type], paragraphs=tuple(paragraphs),
                extra={"dataset": "hotpotqa", "level": str(raw.get("level", "")),
                       "hotpot_type": hotpot_type, "supporting_facts": [list(f) for f in facts]})


@dataset_format("2wikimultihopqa", "2WikiMultiHopQA", "2wiki", {"_id", "context", "supporting_facts", "evidences"})
def parse_2wiki(raw: dict[str, Any]) -> Item:
    """HotpotQA's distractor shape with four types and `evidences`: [[subject, relation, object]]."""
    wiki_type, facts, paragraphs = _with_context(raw, TWOWIKI_TYPES)
    evidences = _evidences(_get(raw, "evidences", list))
    objects = {t.tail for t in evidences}
    return Item(source_id=_text(raw, "_id"), question=_text(raw, "question"), answers=(_text(raw, "answer"),),
                type=TWOWIKI_TYPES[wiki_type], paragraphs=tuple(paragraphs),
                hops=len({title for title, _ in facts}),
                # what the question names: subjects no other evidence leads to (the bridge entity is an object)
                topic_entities=tuple(dict.fromkeys(t.head for t in evidences if t.head not in objects)),
                triples=evidences,
                extra={"dataset": "2wikimultihopqa", "2wiki_type": wiki_type,
                       "supporting_facts": [list(f) for f in facts],
                       "evidences": [[t.head, t.relation, t.tail] for t in evidences]})


def _with_context(raw: dict[str, Any], types: dict[str, str]) -> tuple[str, list[tuple[str, int]], list[Paragraph]]:
    """(source type, supporting facts, paragraphs) of a `context` + `supporting_facts` item."""
    source_type = _text(raw, "type")
    if source_type not in types:
        raise ItemProblem(f"unknown type {source_type!r}; allowed: {', '.join(types)}")
    facts = _supporting_facts(_get(raw, "supporting_facts", list))
    supporting = {title for title, _ in facts}
    paragraphs = _context(_get(raw, "context", list), supporting)
    missing = sorted(supporting - {p.title for p in paragraphs})
    if missing:
        raise ItemProblem(f"supporting title(s) {missing} are not in its context")
    return source_type, facts, paragraphs


def _supporting_facts(facts: list[Any]) -> list[tuple[str, int]]:
    parsed = []
    for n, fact in enumerate(facts):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and isinstance(fact[1], int) and not isinstance(fact[1], bool)):
            raise ItemProblem(f"supporting_facts[{n}]: expected [title, sentence index], got {fact!r:.80}")
        parsed.append((fact[0], fact[1]))
    return parsed


def _context(context: list[Any], supporting: set[str]) -> list[Paragraph]:
    paragraphs = []
    for n, entry in enumerate(context):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], list) and all(isinstance(s, str) for s in entry[1])):
            raise ItemProblem(f"context[{n}]: expected [title, [sentences]], got {entry!r:.80}")
        text = " ".join(s.strip() for s in entry[1] if s.strip())
        if text:
            paragraphs.append(Paragraph(title=entry[0], text=text, supporting=entry[0] in supporting))
    return paragraphs


def _evidences(evidences: list[Any]) -> tuple[Triple, ...]:
    """Wikidata facts as triples.tsv lines: whitespace collapsed (a tab or newline would split a line),
    relations in snake_case like every pack's ("date of birth" -> date_of_birth)."""
    triples = []
    for n, evidence in enumerate(evidences):
        if not (isinstance(evidence, list) and len(evidence) == 3 and all(isinstance(p, str) for p in evidence)):
            raise ItemProblem(f"evidences[{n}]: expected [subject, relation, object], got {evidence!r:.80}")
        head, tail = (" ".join(part.split()) for part in (evidence[0], evidence[2]))
        relation = re.sub(r"\W+", "_", evidence[1].lower()).strip("_")
        if not (head and relation and tail):
            raise ItemProblem(f"evidences[{n}]: subject, relation and object must not be empty, got {evidence!r:.80}")
        triples.append(Triple(head=head, relation=relation, tail=tail))
    return tuple(triples)


@dataset_format("musique", "MuSiQue", "musique", {"id", "paragraphs", "question_decomposition"})
def parse_musique(raw: dict[str, Any]) -> Item:
    """{id, question, answer, answer_aliases, answerable, paragraphs: [{idx, title, paragraph_text,
    is_supporting}], question_decomposition: [{id, question, answer, paragraph_support_idx}]}."""
    if "answerable" in raw and not _get(raw, "answerable", bool):
        # The full set pairs each question with a twin whose support was removed from *its*
        # paragraphs; pooled with the other questions' paragraphs, that support is back in the corpus,
        # so an "unanswerable" gold would be wrong there.
        raise SkipItem("unanswerable")
    paragraphs = _musique_paragraphs(_get(raw, "paragraphs", list))
    steps = _get(raw, "question_decomposition", list)
    if not steps:
        raise ItemProblem("key 'question_decomposition' is empty")
    starts = []  # titles read by steps that start from the question itself, not from an earlier answer
    for n, step in enumerate(steps):
        try:
            if not isinstance(step, dict):
                raise ItemProblem(f"expected an object, got {type(step).__name__}")
            question, support = _get(step, "question", str), _get(step, "paragraph_support_idx", (int, type(None)))
            if support is not None and support not in paragraphs:
                raise ItemProblem(f"paragraph_support_idx {support} is not a paragraph idx")
        except ItemProblem as exc:
            raise ItemProblem(f"question_decomposition[{n}]: {exc}") from None
        if support is not None and not _HOP_REFERENCE.search(question):
            starts.append(paragraphs[support].title)
    aliases = _get(raw, "answer_aliases", list) if "answer_aliases" in raw else []
    if not all(isinstance(a, str) for a in aliases):
        raise ItemProblem("key 'answer_aliases' must hold strings only")
    answers: dict[str, str] = {}  # casefolded -> first spelling: "euro" and "Euro" are one answer
    for answer in (_text(raw, "answer"), *(a.strip() for a in aliases if a.strip())):
        answers.setdefault(answer.casefold(), answer)
    return Item(source_id=_text(raw, "id"), question=_text(raw, "question"), answers=tuple(answers.values()),
                type="multi_hop", paragraphs=tuple(paragraphs.values()), hops=len(steps),
                topic_entities=tuple(dict.fromkeys(starts)),
                extra={"dataset": "musique", "question_decomposition": steps})


def _musique_paragraphs(entries: list[Any]) -> dict[int, Paragraph]:
    """Paragraphs by their `idx`, which the decomposition's `paragraph_support_idx` points at."""
    paragraphs: dict[int, Paragraph] = {}
    for n, entry in enumerate(entries):
        try:
            if not isinstance(entry, dict):
                raise ItemProblem(f"expected an object, got {type(entry).__name__}")
            idx = _get(entry, "idx", int)
            if idx in paragraphs:
                raise ItemProblem(f"idx {idx} is repeated")
            paragraphs[idx] = Paragraph(title=_get(entry, "title", str).strip(), text=_text(entry, "paragraph_text"),
                                        supporting=_get(entry, "is_supporting", bool))
        except ItemProblem as exc:
            raise ItemProblem(f"paragraphs[{n}]: {exc}") from None
    return paragraphs


# --- pooling ----------------------------------------------------------------------------------

def _pool(items: Iterable[Item], prefix: str) -> tuple[list[Document], list[Question], list[Triple]]:
    """One deduplicated corpus (and triple set) over all questions; questions point at their supporting paragraphs.

    Items are consumed one at a time, so a full dev set is never held twice.
    """
    ids: dict[str, str] = {}  # full content hash -> doc id
    taken: set[str] = set()
    documents: list[Document] = []
    questions: list[Question] = []
    triples: dict[Triple, None] = {}
    question_ids: set[str] = set()
    for item in items:
        supporting_docs: list[str] = []
        adversarial_docs: list[str] = []
        for paragraph in item.paragraphs:
            digest = hashlib.sha256(f"{paragraph.title}\x1f{paragraph.text}".encode()).hexdigest()
            if digest not in ids:
                ids[digest] = _short_id(prefix, digest, taken)
                taken.add(ids[digest])
                documents.append(Document(id=ids[digest], title=_display_title(paragraph),
                                          text=paragraph.text))
            bucket = supporting_docs if paragraph.supporting else \
                adversarial_docs if paragraph.adversarial else None
            if bucket is not None and ids[digest] not in bucket:
                bucket.append(ids[digest])
        triples.update(dict.fromkeys(item.triples))
        questions.append(_question(item, _unique(item.source_id, question_ids), supporting_docs,
                                   adversarial_docs))
    return documents, questions, list(triples)


def _question(item: Item, question_id: str, supporting_docs: list[str],
              adversarial_docs: list[str]) -> Question:
    titles = [html.unescape(t) for t in item.topic_entities] or [
        _display_title(p) for p in item.paragraphs if p.supporting and not p.adversarial]
    extra = {**item.extra, "source_id": item.source_id}
    if adversarial_docs:
        extra["adversarial_docs"] = adversarial_docs
    return Question(id=question_id, question=item.question, answers=item.answers, type=item.type,
                    hops=item.hops, supporting_docs=tuple(supporting_docs),
                    topic_entities=tuple(dict.fromkeys(titles)), extra=extra)


def _short_id(prefix: str, digest: str, taken: set[str]) -> str:
    """`<prefix>-` and 8 hex digits; longer only in the unlikely case two paragraphs share a prefix."""
    length = 8
    while f"{prefix}-{digest[:length]}" in taken:
        length += 4
    return f"{prefix}-{digest[:length]}"


def _unique(candidate: str, used: set[str]) -> str:
    unique, n = candidate, 2
    while unique in used:
        unique, n = f"{candidate}-{n}", n + 1
    used.add(unique)
    return unique


def _display_title(paragraph: Paragraph) -> str:
    """The title as the texts write it; a distractor titled "added" is named after its subject.

    HotpotQA's titles are HTML-escaped ("Patek Philippe &amp; Co.") while its paragraphs are not, so
    no text ever mentioned such a title (ToG-2's title-mention links, issue 27). Keeping "added" would
    tell every retriever which paragraphs are fakes and defeat the adversarial set; the subject phrase
    is what the distractor imitates.
    """
    if not paragraph.adversarial and paragraph.title:
        return html.unescape(paragraph.title)
    match = _SUBJECT_END.search(paragraph.text)
    subject = paragraph.text[: match.start()].strip() if match else ""
    if not subject or len(subject.split()) > 8:
        words = paragraph.text.split()
        subject = " ".join(words[:6]) + (" …" if len(words) > 6 else "")
    return subject.rstrip(".")
