"""Stage 4: answer synthesis (paper, 3.4.4): the final answer from the question, the chain of
thought and the sub-answers. The prompt asks for the answer names on the first line, then a
one-sentence explanation, so that evaluation can read the answer without guessing."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.llm.base import LLM, GenParams
from kgqa.pipeline.reformulate import MAX_ANSWER_CHARS, _one_line
from kgqa.prompts import PromptTemplate
from kgqa.types import StageCost, SubAnswer

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


def render_sub_answers(sub_answers: Sequence[SubAnswer]) -> str:
    return "\n".join(
        f"{s.index}. {s.reformulated} {_one_line(s.answer, MAX_ANSWER_CHARS)}" for s in sub_answers
    )


class Synthesizer:
    """``run(question, reasoning, sub_answers) -> final answer text`` (first line: the answer)."""

    def __init__(self, llm: LLM, params: GenParams, template: PromptTemplate | None = None):
        self.llm = llm
        self.params = params
        self.template = template or PromptTemplate("synthesize")

    def run(
        self,
        question: str,
        reasoning: str,
        sub_answers: Sequence[SubAnswer],
        costs: list[StageCost] | None = None,
    ) -> str:
        prompt = self.template.render(
            question=question,
            reasoning=reasoning or "(none)",
            sub_answers=render_sub_answers(sub_answers),
        )
        out = self.llm.complete(prompt, self.params)
        if costs is not None:
            costs.append(
                StageCost("synthesize", out.seconds, out.prompt_tokens, out.completion_tokens)
            )
        return out.text.strip()
