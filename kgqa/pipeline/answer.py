"""Stage 3b: answer one (sub-)question from its top-K triples (paper, 3.4.3), zero-shot, or
from the model alone when there is no graph (the LLM and LLM+QD baselines)."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.llm.base import LLM, GenParams
from kgqa.prompts import PromptTemplate
from kgqa.types import ScoredTriple, StageCost

NO_FACTS = "(no facts found)"


def render_triples(triples: Sequence[ScoredTriple]) -> str:
    """One verbalized ``(subject, relation, object)`` per line, best first."""
    return "\n".join(t.triple.verbalize() for t in triples) or NO_FACTS


class SubQuestionAnswerer:
    """``run(question, triples) -> answer text``; ``triples=None`` answers closed-book."""

    def __init__(
        self,
        llm: LLM,
        params: GenParams,
        template: PromptTemplate | None = None,
        closed_book_template: PromptTemplate | None = None,
    ):
        self.llm = llm
        self.params = params
        self.template = template or PromptTemplate("answer")
        self.closed_book = closed_book_template or PromptTemplate("answer_llm")

    def run(
        self,
        question: str,
        triples: Sequence[ScoredTriple] | None,
        costs: list[StageCost] | None = None,
    ) -> str:
        if triples is None:
            prompt = self.closed_book.render(question=question)
        else:
            prompt = self.template.render(question=question, triples=render_triples(triples))
        out = self.llm.complete(prompt, self.params)
        if costs is not None:
            costs.append(StageCost("answer", out.seconds, out.prompt_tokens, out.completion_tokens))
        return out.text.strip()
