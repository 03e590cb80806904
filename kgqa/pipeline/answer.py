"""Stage 3b: answer one (sub-)question from its top-K triples (paper, 3.4.3), zero-shot, or
from the model alone when there is no graph (the LLM and LLM+QD baselines)."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.llm.base import (
    LLM,
    GenParams,
    Prompt,
    context_error,
    context_window,
    prompt_budget,
    stage_cost,
)
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

    def prompt(self, question: str, triples: Sequence[ScoredTriple] | None) -> Prompt:
        if triples is None:
            return self.closed_book.render(question=question)
        return self.template.render(question=question, triples=render_triples(triples))

    def fit(self, question: str, triples: Sequence[ScoredTriple]) -> list[ScoredTriple]:
        """The best-first prefix of ``triples`` whose prompt fits the LLM's context window with
        room for the answer (all of them for an LLM that does not say its window). A prompt
        that cannot hold even one triple is :class:`~kgqa.errors.PromptTooLong`."""
        triples = list(triples)
        window = context_window(self.llm)
        if window is None or not triples:
            return triples
        n_ctx, count = window
        budget = prompt_budget(n_ctx, self.params)

        def size(n: int) -> int:
            return count(self.prompt(question, triples[:n]))

        if size(len(triples)) <= budget:
            return triples
        # Line by line from the prompt without facts; a text's count includes one token for
        # the start of the text, which stands in for the line's newline.
        used, kept = size(0), 0
        while kept < len(triples):
            used += count(triples[kept].triple.verbalize())
            if used > budget:
                break
            kept += 1
        while kept > 0 and size(kept) > budget:
            kept -= 1
        while kept < len(triples) and size(kept + 1) <= budget:
            kept += 1  # the estimate is a bound: a few more may fit
        if kept == 0:
            raise context_error(size(1), n_ctx, "the answer prompt with one triple")
        return triples[:kept]

    def run(
        self,
        question: str,
        triples: Sequence[ScoredTriple] | None,
        costs: list[StageCost] | None = None,
    ) -> str:
        """The answer text; ``triples`` go into the prompt as given (:meth:`fit` them first)."""
        out = self.llm.complete(self.prompt(question, triples), self.params)
        if costs is not None:
            costs.append(stage_cost("answer", out))
        return out.text.strip()
