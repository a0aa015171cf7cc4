"""The retrieval-aware prompt (spec §2.4) as token ids with one placeholder slot per document.

Pieces are tokenised one by one, so every slot's position and every document's token span are
known exactly; nothing is found by searching for a token id (spec §7.7). When the prompt is too
long, document text is cut, never a slot or the question (spec §7.15).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import BackendError
from engine.llm.attention import text_title
from engine.tools.prompts import PromptFolder
from engine.trace import Segment

PROMPTS = PromptFolder.beside(__file__)

SLOT_TEXT = "<R>"  # how a slot is shown to people; the model gets a vector there, not this text
_FIELD = re.compile(r"\{([a-z_]+)\}")
_SENTINEL = "\x00r2ag-content\x00"


@dataclass(frozen=True)
class PromptDoc:
    title: str
    text: str


@dataclass(frozen=True)
class Piece:
    text: str
    kind: str = "other"  # other | placeholder | document | question
    label: str = ""
    title: str = ""  # the document's title, for the heatmap's columns


@dataclass(frozen=True)
class SlottedPrompt:
    """Token ids, the slot position of each document (document order) and labelled token spans."""

    ids: tuple[int, ...]
    slots: tuple[int, ...]
    segments: tuple[Segment, ...]
    text: str          # readable form, slots shown as <R>
    cut_tokens: int = 0  # document tokens dropped to fit `max_tokens`


def document_text(doc: PromptDoc) -> str:
    return f"(Title: {doc.title}) {doc.text}" if doc.title else doc.text


def prompt_pieces(question: str, docs: Sequence[PromptDoc], slots: bool) -> list[Piece]:
    """The user message as pieces: r2ag_prompt with a slot per document, or r2ag_plain without."""
    outer = PROMPTS.load("prompt" if slots else "plain")
    line = PROMPTS.load("document" if slots else "plain_document")
    pieces: list[Piece] = []
    for literal, name in _split(outer):
        pieces.append(Piece(literal))
        if name == "question":
            pieces.append(Piece(question, "question", "question"))
        elif name == "documents":
            for i, doc in enumerate(docs, start=1):
                if i > 1:
                    pieces.append(Piece("\n"))
                for part, field in _split(line):
                    pieces.append(Piece(part))
                    if field == "n":
                        pieces.append(Piece(str(i)))
                    elif field == "slot":
                        pieces.append(Piece(SLOT_TEXT, "placeholder", f"e_R {i}", f"{_title(doc)} (injected)"))
                    elif field == "document":
                        pieces.append(Piece(document_text(doc), "document", f"doc {i}", _title(doc)))
    return [p for p in pieces if p.text]


def _title(doc: PromptDoc) -> str:
    return doc.title or text_title(doc.text)


def _split(template: str) -> list[tuple[str, str]]:
    """(literal text, following field name or "") pairs in order."""
    out, last = [], 0
    for match in _FIELD.finditer(template):
        out.append((template[last:match.start()], match.group(1)))
        last = match.end()
    out.append((template[last:], ""))
    return out


def wrap(tokenizer: Any) -> tuple[str, str, bool]:
    """Text before and after the user message, and whether to add BOS.

    [decide 8] a chat template when the tokenizer has one, else the code's Alpaca-style wrapper;
    BOS is added the same way at training and inference.
    """
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template([{"role": "user", "content": _SENTINEL}], tokenize=False,
                                             add_generation_prompt=True)
        before, _, after = text.partition(_SENTINEL)
        return before, after, False
    before, _, after = PROMPTS.load("instruction").partition("{prompt}")
    return before, after, tokenizer.bos_token_id is not None


def slot_token_id(tokenizer: Any) -> int:
    """Any valid id: the row is overwritten by the injected vector, so only in-range matters."""
    for candidate in (tokenizer.unk_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0


def tokenize_prompt(tokenizer: Any, pieces: Sequence[Piece], max_tokens: int) -> SlottedPrompt:
    """Token ids of the wrapped prompt within `max_tokens`, cutting document text only."""
    before, after, bos = wrap(tokenizer)
    framed = [Piece(before), *pieces, Piece(after)]
    encoded = [[slot_token_id(tokenizer)] if p.kind == "placeholder" else _encode(tokenizer, p.text) for p in framed]
    head = [tokenizer.bos_token_id] if bos else []
    fixed = len(head) + sum(len(e) for p, e in zip(framed, encoded) if p.kind != "document")
    docs = [len(e) for p, e in zip(framed, encoded) if p.kind == "document"]
    cap = _cap(docs, max_tokens - fixed)
    if cap < 0:
        raise BackendError(f"the R2AG prompt needs {fixed} tokens without any document text but the model takes "
                           f"{max_tokens}; shorten the question or lower k")
    ids: list[int] = list(head) + encoded[0]
    slots: list[int] = []
    segments: list[Segment] = []
    text: list[str] = [before]
    cut = 0
    for piece, tokens in zip(framed[1:], encoded[1:]):
        shown = piece.text
        if piece.kind == "document" and len(tokens) > cap:
            cut += len(tokens) - cap
            tokens = tokens[:cap]
            shown = tokenizer.decode(tokens) + " …"
        start = len(ids)
        ids += tokens
        if piece.kind == "placeholder":
            slots.append(start)
        if piece.kind != "other" and tokens:
            segments.append(Segment(label=piece.label, start=start, end=len(ids), kind=piece.kind, title=piece.title))
        text.append(shown)
    return SlottedPrompt(ids=tuple(ids), slots=tuple(slots), segments=tuple(segments), text="".join(text),
                         cut_tokens=cut)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def _cap(lengths: Sequence[int], budget: int) -> int:
    """Largest per-document token cap c with Σ min(len, c) ≤ budget (longest documents cut first)."""
    if budget < 0:
        return -1
    if sum(lengths) <= budget:
        return max(lengths, default=0)
    low, high = 0, max(lengths)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            low = mid
        else:
            high = mid - 1
    return low
