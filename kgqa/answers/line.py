"""The answer line: every mode's final prompt asks for the answer names on the first line, then
at most a one-sentence explanation, so the answer is read from that line."""

from __future__ import annotations

import re

_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:final answer|answer)\s*:?\s*(?:\*\*)?\s*", re.I)
# Between two items of an answer line (as kgqa.answers.items splits them).
_ITEM_SEPARATOR = re.compile(r"\s*[,;]\s*|\s+and\s+", re.I)


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


def split_cut_line(text: str) -> tuple[str, str]:
    """The answer line of a text the LLM stopped writing at its token limit, as ``(complete,
    last)``: when it stopped while still on the answer line (no line follows it), the last
    item may be a name cut mid-way ("Paul" of "Paul Thomas Anderson") and ``complete`` holds
    only the items before it; otherwise the line was finished and ``last`` is empty."""
    line = answer_line(text)
    if not line or text.strip().split(line, 1)[-1].strip():
        return line, ""
    ends = list(_ITEM_SEPARATOR.finditer(line))
    if not ends:
        return "", line
    return line[: ends[-1].start()].strip(), line[ends[-1].end() :].strip()


def complete_answer_line(text: str, cut: bool) -> str:
    """The answer line, less its last item when that may be cut short (``cut``: the LLM
    stopped at its token limit; see :func:`split_cut_line`)."""
    return split_cut_line(text)[0] if cut else answer_line(text)
