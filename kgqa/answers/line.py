"""The answer line: every mode's final prompt asks for the answer names on the first line, then
at most a one-sentence explanation, so the answer is read from that line."""

from __future__ import annotations

import re

_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:final answer|answer)\s*:?\s*(?:\*\*)?\s*", re.I)


def answer_line(text: str) -> str:
    """The first non-empty line without an ``Answer:`` label: the answer itself."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return _ANSWER_LABEL.sub("", line, count=1).strip()


def answer_names(text: str) -> list[str]:
    """The comma-separated names on the answer line (quotes and final period removed)."""
    names: list[str] = []
    for part in answer_line(text).split(","):
        name = part.strip().strip("\"'`*").strip()
        name = name[:-1] if name.endswith(".") else name
        if name and name.lower() not in (n.lower() for n in names):
            names.append(name)
    return names
