"""``[Bracketed]`` names: how a question marks its topic entities (in ``kgqa ask`` and in the
benchmarks' question files)."""

from __future__ import annotations

import re

BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def bracketed_entities(question: str) -> list[str]:
    """Names inside ``[...]``, stripped, in order, without duplicates or empty ones."""
    seen: dict[str, None] = {}
    for m in BRACKETED.finditer(question):
        seen.setdefault(m.group(1).strip())
    return [s for s in seen if s]


def strip_brackets(question: str) -> str:
    """The question as a person would write it: ``[X]`` -> ``X``."""
    return BRACKETED.sub(lambda m: m.group(1), question)
