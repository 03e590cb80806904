"""Readable words from relation names, whatever convention the KB uses.

``directed_by`` -> "directed by"; ``birthPlace`` -> "birth place"; Freebase-style
``__people__person__place_of_birth`` or ``people.person.place_of_birth`` -> "place of birth";
IRIs ``http://dbpedia.org/ontology/birthPlace`` or ``<...#knows>`` -> "birth place", "knows";
prefixed names ``dbo:birthPlace`` -> "birth place". A trailing or leading inverse marker
(``plays_in_club_inverse``, ``inverse_of_x``, ``~x``, ``x_reverse``) is reported separately,
so that a profile can read the relation as the other one followed backwards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-\s./]+")
_INVERSE_SUFFIX = re.compile(r"(?:[_\-\s.]+(?:inverse|inv|reverse|rev|reversed))$", re.I)
_INVERSE_PREFIX = re.compile(r"^(?:~|\^|(?:inverse|reverse|inv)[_\-\s.]+(?:of[_\-\s.]+)?)", re.I)
# Looks like an identifier, not a word: P31, r12, m.0abc1, 0x1f...
_ID_LIKE = re.compile(r"^(?:[A-Za-z]{0,2}\d+[A-Za-z0-9]*|m\.[0-9a-z_]+|[0-9a-f]{8,})$")


@dataclass(frozen=True)
class RelationName:
    """What a relation's name says: its readable ``words``, whether it marks itself as the
    inverse of another relation, and whether the name says nothing readable (``cryptic``)."""

    name: str
    words: str
    inverse: bool = False
    cryptic: bool = False


def local_name(name: str) -> str:
    """The last meaningful segment of an IRI, a prefixed name or a Freebase path."""
    text = name.strip().strip("<>")
    if "://" in text or text.startswith("urn:"):
        for sep in ("#", "/", ":"):
            head, _, tail = text.rpartition(sep)
            if head and tail:
                text = tail
                break
    elif re.match(r"^[A-Za-z][\w\-]*:[^/]", text):
        text = text.split(":", 1)[1]
    # Freebase: __people__person__place_of_birth / people.person.place_of_birth / ns0__x
    if "__" in text:
        parts = [p for p in text.split("__") if p]
        text = parts[-1] if parts else text
    elif text.count(".") >= 2 and " " not in text:
        text = text.rsplit(".", 1)[-1]
    return text


def split_words(text: str) -> list[str]:
    """``birthPlaceOf`` / ``place_of_birth`` / ``place-of birth`` -> lower-case words."""
    spaced = _CAMEL.sub(" ", text)
    return [w.lower() for w in _SEPARATORS.split(spaced) if w]


def relation_name(name: str) -> RelationName:
    """Readable words from a relation name (see the module doc)."""
    text = local_name(name)
    inverse = False
    stripped = _INVERSE_SUFFIX.sub("", text)
    if stripped != text and stripped:
        inverse, text = True, stripped
    elif (m := _INVERSE_PREFIX.match(text)) and len(text) > m.end():
        inverse, text = True, text[m.end() :]
    words = split_words(text)
    cryptic = not words or all(_ID_LIKE.match(w) or not re.search(r"[aeiouy]", w) for w in words)
    return RelationName(name, " ".join(words) or name, inverse, cryptic)
