"""Stage 3a: reformulate sub-question i with the answers to sub-questions < i (paper, 3.4.3),
so that "those movies" becomes the movies, and retrieval can find their triples."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.llm.base import LLM, GenParams, stage_cost
from kgqa.prompts import PromptTemplate
from kgqa.types import StageCost

# An answer longer than this is shortened in the prompt: prompt tokens are the cost on CPU.
MAX_ANSWER_CHARS = 600
MAX_QUESTION_CHARS = 1000
_PREFIX = re.compile(r"^\s*(?:rewritten question|question|reformulated question)\s*:\s*", re.I)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip(" ,") + "…"


def render_previous(previous: Sequence[tuple[str, str]]) -> str:
    """``1. <question> <answer>`` lines, as in the prompt's examples."""
    return "\n".join(
        f"{i}. {_one_line(q, MAX_QUESTION_CHARS)} {_one_line(a, MAX_ANSWER_CHARS)}"
        for i, (q, a) in enumerate(previous, 1)
    )


def clean_reformulation(original: str, text: str) -> str:
    """The model's rewrite with labels and quotes removed, ``?`` restored (the stop string
    eats it); the original when the output is empty, runaway or has no words."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _PREFIX.sub("", line).strip().strip("\"'`*").strip()
    if not re.search(r"[A-Za-z]", line) or len(line) > MAX_QUESTION_CHARS:
        return original
    return line.rstrip("?").rstrip() + "?"


class Reformulator:
    """``run(sub_question, previous) -> str``; the first sub-question is returned as is."""

    def __init__(self, llm: LLM, params: GenParams, template: PromptTemplate | None = None):
        self.llm = llm
        # Stop at "?" (the paper) and at a newline: one question, never a second one.
        stops = tuple(dict.fromkeys((*params.stop, "?", "\n")))
        self.params = params.with_(stop=stops)
        self.template = template or PromptTemplate("reformulate")

    def run(
        self,
        sub_question: str,
        previous: Sequence[tuple[str, str]],
        costs: list[StageCost] | None = None,
    ) -> str:
        if not previous:
            return sub_question
        prompt = self.template.render(sub_question=sub_question, previous=render_previous(previous))
        out = self.llm.complete(prompt, self.params)
        if costs is not None:
            costs.append(stage_cost("reformulate", out))
        return clean_reformulation(sub_question, out.text)
