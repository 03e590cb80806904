"""``[Bracketed]`` names: how a question marks its topic entities (in ``kgqa ask`` and in the
benchmarks' question files)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.errors import BadQuestion

BRACKETED = re.compile(r"\[([^\[\]]+)\]")
EMPTY_BRACKETS = re.compile(r"\[\s*\]")


def bracketed_entities(question: str) -> list[str]:
    """Names inside ``[...]``, stripped, in order, without duplicates or empty ones."""
    seen: dict[str, None] = {}
    for m in BRACKETED.finditer(question):
        seen.setdefault(m.group(1).strip())
    return [s for s in seen if s]


def strip_brackets(question: str) -> str:
    """The question as a person would write it: ``[X]`` -> ``X``."""
    return BRACKETED.sub(lambda m: m.group(1), question)


def topic_names(question: str, entities: Sequence[str] = ()) -> list[str]:
    """The topic entities asked about: ``entities`` when given, else the question's
    ``[bracketed]`` names. Empty brackets (``[]``) without ``entities`` are
    :class:`~kgqa.errors.BadQuestion`: the name meant to be in them is missing."""
    given = list(dict.fromkeys(e for e in entities if e))
    if given:
        return given
    if EMPTY_BRACKETS.search(question):
        raise BadQuestion(
            "the question has empty brackets []: write the topic entity's name inside them "
            "(who directed [Heat]?) or pass --entity NAME"
        )
    return bracketed_entities(question)
