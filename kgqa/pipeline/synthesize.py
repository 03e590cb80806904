"""Stage 4: answer synthesis (paper, 3.4.4): the final answer from the question, the chain of
thought and the sub-answers. The prompt asks for the answer names on the first line, then a
one-sentence explanation, so that evaluation can read the answer without guessing
(:func:`kgqa.answers.answer_line`)."""

from __future__ import annotations

from collections.abc import Sequence

# Reading the answer line lives in kgqa.answers; the two names stay importable from here for
# callers outside this package's reach (tests/unit/test_stages.py, benchmarks/bench_llm.py).
from kgqa.answers import answer_line as answer_line
from kgqa.answers import answer_names as answer_names
from kgqa.llm.base import LLM, GenParams, stage_cost
from kgqa.pipeline.reformulate import MAX_ANSWER_CHARS, _one_line
from kgqa.prompts import PromptTemplate
from kgqa.types import StageCost, SubAnswer


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
            costs.append(stage_cost("synthesize", out))
        return out.text.strip()
