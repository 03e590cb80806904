"""Topic entities named in a question: MetaQA marks them with ``[brackets]``."""

from __future__ import annotations

import re

_BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def bracketed_entities(question: str) -> list[str]:
    """Names inside ``[...]``, in order, without duplicates."""
    seen: dict[str, None] = {}
    for m in _BRACKETED.finditer(question):
        seen.setdefault(m.group(1).strip())
    return [s for s in seen if s]


def strip_brackets(question: str) -> str:
    """The question as a person would write it: ``[X]`` -> ``X``."""
    return _BRACKETED.sub(lambda m: m.group(1), question)
