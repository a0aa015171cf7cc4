"""Import public multi-hop QA datasets (HotpotQA distractor, adversarial HotpotQA) as knowledge packs."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.codec import loads_bounded
from engine.errors import IngestError, PackError
from engine.knowledge.records import Document, Pack, PackInfo, Question

HOTPOT_LICENSE = "CC BY-SA 4.0 (HotpotQA)"
ADVERSARIAL_TITLE = "added"  # the adversarial set's title for distractors written to mislead
_YES_NO = {"yes", "no"}
# Where a distractor's subject ends: "Dori shoes (Dori: …) is the largest airline…" -> "Dori shoes".
_SUBJECT_END = re.compile(r"\s\(|,|;|\s(?:is|was|are|were|has|had|competed|refers)\s")


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str
    supporting: bool
    adversarial: bool = False


@dataclass(frozen=True)
class Item:
    """One question in a dataset-neutral shape, before paragraphs are pooled into a corpus."""

    source_id: str
    question: str
    answer: str
    type: str
    paragraphs: tuple[Paragraph, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


class ItemProblem(ValueError):
    """One item of a dataset file is malformed; the importer adds the item index."""


@dataclass(frozen=True)
class DatasetFormat:
    name: str
    title: str
    keys: frozenset[str]  # the keys that identify the format, checked on the first item
    parse: Callable[[dict[str, Any]], Item]


FORMATS: dict[str, DatasetFormat] = {}


def dataset_format(name: str, title: str, keys: set[str]) -> Callable[[Callable], Callable]:
    """Register an item parser for a dataset format recognised by `keys`."""
    def register(parse: Callable[[dict[str, Any]], Item]) -> Callable[[dict[str, Any]], Item]:
        FORMATS[name] = DatasetFormat(name=name, title=title, keys=frozenset(keys), parse=parse)
        return parse
    return register


def import_hotpot(path: Path, name: str | None = None) -> Pack:
    """Read a HotpotQA-style JSON file and pool every question's paragraphs into one corpus.

    Raises IngestError listing every problem (`file: item i: problem`); never returns half a pack.
    """
    path = Path(path)
    label = str(path)
    data = _read_json(path)
    if not isinstance(data, list) or not data:
        got = "an empty list" if data == [] else type(data).__name__
        raise IngestError(f"{label}: expected a JSON list of questions, got {got}")
    fmt = _detect(data, label)
    items, problems = _parse_items(data, fmt, label)
    if problems:
        raise IngestError(problems)
    documents, questions = _pool(items)
    return Pack(
        info=PackInfo(name=name or path.stem, title=fmt.title, license=HOTPOT_LICENSE,
                      description=f"{len(questions)} questions over {len(documents)} pooled paragraphs, "
                                  f"imported from {path.name} ({fmt.name})."),
        documents=tuple(documents),
        questions=tuple(questions),
    )


def _read_json(path: Path) -> Any:
    """The file's JSON; deep nesting, over-long integers and lone surrogates are refused with the line (issue 15)."""
    try:
        return loads_bounded(path.read_text(encoding="utf-8-sig"), str(path))
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise IngestError(f"{path}: is a folder; give the dataset's .json file") from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except PackError as exc:
        raise IngestError(exc.problems) from None
    except OSError as exc:
        raise IngestError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _detect(data: list[Any], label: str) -> DatasetFormat:
    first = data[0]
    for fmt in FORMATS.values():
        if isinstance(first, dict) and fmt.keys <= first.keys():
            return fmt
    known = "; ".join(f"{f.name} (keys {', '.join(sorted(f.keys))})" for f in FORMATS.values())
    shown = sorted(first)[:10] if isinstance(first, dict) else type(first).__name__
    raise IngestError(f"{label}: item 0: unknown dataset format (keys {shown}); known: {known}")


def _parse_items(data: list[Any], fmt: DatasetFormat, label: str) -> tuple[list[Item], list[str]]:
    items: list[Item] = []
    problems: list[str] = []
    for index, raw in enumerate(data):
        try:
            if not isinstance(raw, dict):
                raise ItemProblem(f"expected an object, got {type(raw).__name__}")
            items.append(fmt.parse(raw))
        except ItemProblem as exc:
            problems.append(f"{label}: item {index}: {exc}")
    return items, problems


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

@dataset_format("hotpotqa-adversarial", "HotpotQA (adversarial distractors)", {"qas_id", "paragraphs"})
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
    return Item(source_id=_text(raw, "qas_id"), question=question, answer=answer,
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


@dataset_format("hotpotqa", "HotpotQA (distractor setting)", {"_id", "context", "supporting_facts"})
def parse_distractor(raw: dict[str, Any]) -> Item:
    """{_id, question, answer, type, level, supporting_facts: [[title, sent]], context: [[title, [sent]]]}."""
    hotpot_type = _text(raw, "type")
    if hotpot_type not in ("bridge", "comparison"):
        raise ItemProblem(f"unknown type {hotpot_type!r}; allowed: bridge, comparison")
    facts = _supporting_facts(_get(raw, "supporting_facts", list))
    supporting = {title for title, _ in facts}
    paragraphs = _context(_get(raw, "context", list), supporting)
    missing = sorted(supporting - {p.title for p in paragraphs})
    if missing:
        raise ItemProblem(f"supporting title(s) {missing} are not in its context")
    return Item(source_id=_text(raw, "_id"), question=_text(raw, "question"), answer=_text(raw, "answer"),
                type="comparison" if hotpot_type == "comparison" else "multi_hop",
                paragraphs=tuple(paragraphs),
                extra={"dataset": "hotpotqa", "level": str(raw.get("level", "")),
                       "hotpot_type": hotpot_type, "supporting_facts": [list(f) for f in facts]})


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


# --- pooling ----------------------------------------------------------------------------------

def _pool(items: list[Item]) -> tuple[list[Document], list[Question]]:
    """One deduplicated corpus over all questions; questions point at their supporting paragraphs."""
    ids: dict[str, str] = {}  # full content hash -> doc id
    taken: set[str] = set()
    documents: list[Document] = []
    questions: list[Question] = []
    question_ids: set[str] = set()
    for item in items:
        supporting_docs: list[str] = []
        adversarial_docs: list[str] = []
        for paragraph in item.paragraphs:
            digest = hashlib.sha256(f"{paragraph.title}\x1f{paragraph.text}".encode("utf-8")).hexdigest()
            if digest not in ids:
                ids[digest] = _short_id(digest, taken)
                taken.add(ids[digest])
                documents.append(Document(id=ids[digest], title=_display_title(paragraph),
                                          text=paragraph.text))
            bucket = supporting_docs if paragraph.supporting else \
                adversarial_docs if paragraph.adversarial else None
            if bucket is not None and ids[digest] not in bucket:
                bucket.append(ids[digest])
        questions.append(_question(item, _unique(item.source_id, question_ids), supporting_docs,
                                   adversarial_docs))
    return documents, questions


def _question(item: Item, question_id: str, supporting_docs: list[str],
              adversarial_docs: list[str]) -> Question:
    titles = [p.title for p in item.paragraphs if p.supporting and not p.adversarial]
    extra = {**item.extra, "source_id": item.source_id}
    if adversarial_docs:
        extra["adversarial_docs"] = adversarial_docs
    return Question(id=question_id, question=item.question, answers=(item.answer,), type=item.type,
                    hops=2, supporting_docs=tuple(supporting_docs),
                    topic_entities=tuple(dict.fromkeys(titles)), extra=extra)


def _short_id(digest: str, taken: set[str]) -> str:
    """`hp-` and 8 hex digits; longer only in the unlikely case two paragraphs share a prefix."""
    length = 8
    while f"hp-{digest[:length]}" in taken:
        length += 4
    return f"hp-{digest[:length]}"


def _unique(candidate: str, used: set[str]) -> str:
    unique, n = candidate, 2
    while unique in used:
        unique, n = f"{candidate}-{n}", n + 1
    used.add(unique)
    return unique


def _display_title(paragraph: Paragraph) -> str:
    """A distractor titled "added" is named after its subject, as a real page would be.

    Keeping "added" would tell every retriever which paragraphs are fakes and defeat the
    adversarial set; the subject phrase is what the distractor imitates.
    """
    if not paragraph.adversarial and paragraph.title:
        return paragraph.title
    match = _SUBJECT_END.search(paragraph.text)
    subject = paragraph.text[: match.start()].strip() if match else ""
    if not subject or len(subject.split()) > 8:
        words = paragraph.text.split()
        subject = " ".join(words[:6]) + (" …" if len(words) > 6 else "")
    return subject.rstrip(".")
