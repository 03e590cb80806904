"""Stage 1: question decomposition (paper, section 3.4.1).

In-context examples, chain of thought first, then numbered sub-questions, then ``<END>``. A
question that asks for one fact keeps itself as its only sub-question. Output that cannot be
parsed falls back to the question itself, flagged, so the pipeline always has something to
answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.llm.base import LLM, GenParams, stage_cost
from kgqa.prompts import PromptTemplate
from kgqa.types import Decomposition, StageCost

END = "<END>"
# "1. …", "2) …", "Sub-question 3: …" — the shapes small models produce.
_ITEM = re.compile(r"^\s*(?:\*\*)?(?:sub-?question\s*)?(\d+)\s*[.):]\s*(.*?)\s*$", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:\*\*)?(reasoning|chain of thought|thought)\s*:?\s*(?:\*\*)?\s*", re.I)
_HEADER = re.compile(r"^\s*(?:\*\*)?sub-?questions?\s*:?\s*(?:\*\*)?\s*$", re.IGNORECASE)
MAX_SUB_QUESTION_CHARS = 300


def parse_decomposition(
    question: str, raw: str, *, max_sub_questions: int = 4, cut: bool = False
) -> Decomposition:
    """Reasoning and sub-questions from the model's output.

    ``cut`` says the output hit ``max_tokens``: then a last sub-question without its ``?``
    was cut mid-sentence and is dropped. Numbering must run 1, 2, 3…; the list ends at the
    first line that breaks it (a runaway model that starts a new example or list). Longer
    lists are capped at ``max_sub_questions``: the first steps are the ones anchored on the
    question's entity.
    """
    text = raw.split(END, 1)[0]
    reasoning_lines: list[str] = []
    items: list[str] = []
    for line in text.splitlines():
        m = _ITEM.match(line)
        if m and int(m.group(1)) == len(items) + 1:
            items.append(m.group(2).strip("*\"' \t"))
            continue
        if items:
            if line.strip():
                break  # the list is over; anything after it is not ours
            continue
        if not _HEADER.match(line):
            reasoning_lines.append(_LABEL.sub("", line, count=1))
    if cut and items and not items[-1].endswith("?"):
        items.pop()
    subs: list[str] = []
    for item in items:
        if not item or len(item) > MAX_SUB_QUESTION_CHARS or not re.search(r"\w", item):
            continue
        sub = item if item.endswith("?") else item + "?"
        if sub.lower() not in (s.lower() for s in subs):
            subs.append(sub)
    reasoning = " ".join(" ".join(reasoning_lines).split())
    if not subs:
        return Decomposition(
            question, reasoning="", sub_questions=(question,), raw=raw, fallback=True
        )
    return Decomposition(question, reasoning, tuple(subs[:max_sub_questions]), raw=raw)


class Decomposer:
    """``run(question) -> Decomposition`` with the ``decompose`` prompt."""

    def __init__(
        self,
        llm: LLM,
        params: GenParams,
        template: PromptTemplate | None = None,
        *,
        max_sub_questions: int = 4,
    ):
        self.llm = llm
        self.params = params if END in params.stop else params.with_(stop=(*params.stop, END))
        self.template = template or PromptTemplate("decompose")
        self.max_sub_questions = max_sub_questions

    def run(
        self,
        question: str,
        costs: list[StageCost] | None = None,
        *,
        grammar: str | None = None,
        stop: Sequence[str] = (),
    ) -> Decomposition:
        """``grammar``: GBNF that holds this call's output to it (graph mode's step
        vocabulary, which depends on the question's entity); ``stop``: more stop strings for
        this call (what the grammar makes sure only its end begins)."""
        params = self.params if grammar is None else self.params.with_(grammar=grammar)
        if stop:
            params = params.with_(stop=(*params.stop, *stop))
        out = self.llm.complete(self.template.render(question=question), params)
        if costs is not None:
            costs.append(stage_cost("decompose", out))
        return parse_decomposition(
            question,
            out.text,
            max_sub_questions=self.max_sub_questions,
            cut=out.finish_reason == "length",
        )
