"""Stage 3b: answer one (sub-)question from its top-K triples (paper, 3.4.3), zero-shot, or
from the model alone when there is no graph (the LLM and LLM+QD baselines)."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.errors import ConfigError
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
from kgqa.types import ScoredTriple, StageCost, verbalize_relation

NO_FACTS = "(no facts found)"
# How the answer prompt writes its facts: one triple per line as the paper does, or the
# triples that share a subject and relation (or a relation and object) on one line.
FACTS = ("triples", "grouped")


def render_triples(triples: Sequence[ScoredTriple], facts: str = "triples") -> str:
    """The facts of an answer prompt, best first: one verbalized ``(subject, relation,
    object)`` per line, or ``grouped`` (:func:`grouped_lines`)."""
    if facts == "grouped":
        return "\n".join(grouped_lines(triples)) or NO_FACTS
    return "\n".join(t.triple.verbalize() for t in triples) or NO_FACTS


def grouped_lines(triples: Sequence[ScoredTriple]) -> list[str]:
    """The triples with one subject and relation on one line, their objects joined by "; "
    ("(Heat, starred actors, Al Pacino; Robert De Niro)"), and the rest with one relation and
    object on one line, their subjects joined ("(Heat; Thief, directed by, Michael Mann)"):
    the same facts in fewer tokens, each line where its best triple ranked."""
    by_subject: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for i, st in enumerate(triples):
        t = st.triple
        by_subject.setdefault((t.subject, t.relation), (i, []))[1].append(t.object)
    lines: list[tuple[int, str]] = []
    by_object: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for (subject, relation), (i, objects) in by_subject.items():
        if len(objects) > 1:
            lines.append((i, _line([subject], relation, objects)))
        else:
            by_object.setdefault((relation, objects[0]), (i, []))[1].append(subject)
    for (relation, obj), (i, subjects) in by_object.items():
        lines.append((i, _line(subjects, relation, [obj])))
    return [line for _, line in sorted(lines)]


def _line(subjects: Sequence[str], relation: str, objects: Sequence[str]) -> str:
    return f"({'; '.join(subjects)}, {verbalize_relation(relation)}, {'; '.join(objects)})"


class SubQuestionAnswerer:
    """``run(question, triples) -> answer text``; ``triples=None`` answers closed-book."""

    def __init__(
        self,
        llm: LLM,
        params: GenParams,
        template: PromptTemplate | None = None,
        closed_book_template: PromptTemplate | None = None,
        facts: str = "triples",
    ):
        if facts not in FACTS:
            raise ConfigError(f"facts must be one of {', '.join(FACTS)}")
        self.facts = facts
        self.llm = llm
        self.params = params
        self.template = template or PromptTemplate("answer")
        self.closed_book = closed_book_template or PromptTemplate("answer_llm")

    def prompt(self, question: str, triples: Sequence[ScoredTriple] | None) -> Prompt:
        if triples is None:
            return self.closed_book.render(question=question)
        return self.template.render(question=question, triples=render_triples(triples, self.facts))

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
