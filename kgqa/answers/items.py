"""The answers a free-text answer lists: split, re-joined where the pieces name a known entity,
cleaned (docs/eval.md, "Reading free text"). The metrics, the faithfulness check and the
grounder all read answers through :func:`answer_items`, so that they agree on what an answer
said.

Every comparison is case-insensitive after stripping whitespace (:func:`norm`): a KB may hold
names that differ only by case, and gold answers cannot tell them apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass


def norm(text: str) -> str:
    """The comparison form of a name or an answer: stripped and lower-cased."""
    return text.strip().lower()


class EntityNames(frozenset[str]):
    """Names in comparison form (lower-cased once; a KB may have tens of thousands)."""

    @classmethod
    def of(cls, names: Iterable[str]) -> EntityNames:
        return cls(norm(n) for n in names if norm(n))


@dataclass(frozen=True)
class Item:
    """One answer read out of free text; ``known`` when it names a gold answer or KB entity."""

    text: str
    known: bool


# Separators between listed answers: comma, semicolon, newline, and the word "and".
_SEPARATOR = re.compile(r"(\s*[,;\n]\s*|\s+and\s+)", re.IGNORECASE)
# A label before the answer proper, as small models like to write it.
_LABEL = re.compile(r"^\s*(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:\-]\s*", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")
_QUOTES = "\"'`\u201c\u201d\u2018\u2019*"
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d]+)[\"\u201d]")
# How many separator-split pieces may be joined back into one name ("Paris, Texas",
# "Pride and Prejudice", "Crouching Tiger, Hidden Dragon").
_MAX_JOIN = 4


def clean_item(text: str, punctuation: bool = True) -> str:
    """Strip list markers, surrounding quotes and brackets, and (``punctuation``) trailing
    sentence punctuation."""
    text = _LIST_MARKER.sub("", text.strip())
    previous = None
    while previous != text:
        previous = text
        text = text.strip().strip(_QUOTES).strip()
        if text[:1] in "([" and text[-1:] in ")]":
            text = text[1:-1]
        if punctuation:
            text = text.rstrip(".!?:")
    return text.strip()


def _clean_known(raw: str, is_known: Callable[[str], bool]) -> str:
    """The cleaned item, keeping trailing punctuation when that makes it a known name
    ("Hatari!", "With Friends Like These...")."""
    kept = clean_item(raw, punctuation=False)
    return kept if kept and is_known(kept) else clean_item(raw)


def _matcher(gold: Iterable[str], entity_names: Collection[str] | None) -> Callable[[str], bool]:
    known = EntityNames.of(gold)
    if entity_names:
        names = (
            entity_names if isinstance(entity_names, EntityNames) else EntityNames.of(entity_names)
        )
        return lambda s: norm(s) in known or norm(s) in names
    return lambda s: norm(s) in known


def answer_items(
    text: str, gold: Iterable[str] = (), entity_names: Collection[str] | None = None
) -> list[Item]:
    """The answers a free-text answer names, in order (see docs/eval.md, "Reading free text").

    1. A leading label ("Answer:", "The final answer is:") is dropped.
    2. The text is split on commas, semicolons, newlines and the word "and".
    3. Scanning left to right, up to 4 consecutive pieces are joined back (longest first) when
       the joined text names a gold answer or KB entity, so "Paris, Texas" stays one name.
    4. Each item is cleaned: list markers ("-", "*", "1."), quotes, brackets and trailing
       ".!?:" are stripped.
    5. A piece that is not a known name yields instead the quoted spans that start in it
       ("..." or \u201c...\u201d in the whole text) and are known names, if there are any.

    ``known`` is True when the item equals (case-insensitively) a gold answer or one of
    ``entity_names``."""
    is_known = _matcher(gold, entity_names)
    text = _LABEL.sub("", text.strip(), count=1)
    # Pieces between separators, with their offsets, so that quoted spans (found in the whole
    # text: a quote may enclose a comma, as in '"The Crow," which ...') map to the piece they
    # start in.
    bounds: list[tuple[int, int]] = []
    start = 0
    for m in _SEPARATOR.finditer(text):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(text)))
    quoted = [(m.start(), clean_item(m.group(1))) for m in _QUOTED.finditer(text)]
    items: list[Item] = []
    i = 0
    while i < len(bounds):
        taken = 0
        for width in range(min(_MAX_JOIN, len(bounds) - i), 1, -1):
            candidate = _clean_known(text[bounds[i][0] : bounds[i + width - 1][1]], is_known)
            if candidate and is_known(candidate):
                items.append(Item(candidate, True))
                taken = width
                break
        if not taken:
            lo, hi = bounds[i]
            candidate = _clean_known(text[lo:hi], is_known)
            if candidate:
                if is_known(candidate):
                    items.append(Item(candidate, True))
                else:
                    inside = [q for pos, q in quoted if lo <= pos < hi and q and is_known(q)]
                    items.extend(Item(q, True) for q in inside)
                    if not inside:
                        items.append(Item(candidate, False))
            taken = 1
        i += taken
    return items


def first_entity(
    text: str, gold: Iterable[str], entity_names: Collection[str] | None = None
) -> str | None:
    """The first item of a free-text answer that names a gold answer or a KB entity."""
    for item in answer_items(text, gold, entity_names):
        if item.known:
            return item.text
    return None
