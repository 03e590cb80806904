"""``--mode graph``: decomposition by the LLM, then a graph walk that answers each sub-question
with real entities (:mod:`kgqa.pipeline.graph_walk`), then (optionally) an LLM synthesis.

The LLM spends tokens only where it adds understanding: splitting the question into
sub-questions. Choosing the relation at each hop uses a cheaper signal, the dot product between
the embedded sub-question and the frontier's triples (embedded at load time); the answer set is
read off the graph, so it cannot contain an entity that no triple supports.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from kgqa.errors import KGQAError
from kgqa.llm.base import LLM
from kgqa.pipeline.decompose import Decomposer
from kgqa.pipeline.graph_walk import GraphWalker, Hop, Option
from kgqa.pipeline.pipeline import PipelineParams
from kgqa.pipeline.relations import StepVocabulary
from kgqa.pipeline.synthesize import Synthesizer
from kgqa.prompts import PromptTemplate
from kgqa.types import Answer, AnswerEntity, ScoredTriple, StageCost, SubAnswer

# Token budget of the step decomposition.
STEP_TOKENS = 96
# How many answer names the prose answer lists before "and N more".
_SHOWN = 10


_BRACKETED = re.compile(r"\[[^\]]*\]")
# Words that name the entity's kind or glue a step together, but ask for nothing.
_EMPTY_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "about",
        "in",
        "on",
        "by",
        "movie",
        "movies",
        "film",
        "films",
        "that",
        "this",
        "those",
        "it",
        "its",
        "is",
        "was",
        "are",
        "what",
        "which",
        "who",
        "whom",
    ]
)


def asks_something(step: str) -> bool:
    """False for a step that only names the entity ("film [Saw V]?"): small models sometimes
    open with one, which would send the walk along an arbitrary relation."""
    words = re.findall(r"[a-z']+", _BRACKETED.sub(" ", step).lower())
    return any(w not in _EMPTY_WORDS for w in words)


def render_answer(entities: Sequence[AnswerEntity]) -> str:
    names = [e.name for e in entities[:_SHOWN]]
    more = len(entities) - len(names)
    return ", ".join(names) + (f" (and {more} more)" if more > 0 else "")


def describe_hops(hops: Sequence[Hop]) -> str:
    steps = []
    for i, hop in enumerate(hops, 1):
        if hop.restated:
            best = hop.options[0].describe() if hop.options else "?"
            steps.append(
                f"{i}. {hop.sub_question} -> {best} leads only back to the question's entity: "
                "a restatement of the previous step, skipped"
            )
            continue
        if hop.missing is not None:
            rel, out = hop.missing
            arrow = Option(rel, out, 0.0, 0).describe()
            steps.append(f"{i}. {hop.sub_question} -> {arrow} is not at the frontier: skipped")
            continue
        if hop.chosen is None:
            steps.append(f"{i}. {hop.sub_question} -> no relation found at the frontier")
            continue
        steps.append(
            f"{i}. {hop.sub_question} -> follow {hop.chosen.describe()} "
            f"(score {hop.chosen.score:.2f}) -> {len(hop.entities)} entities"
        )
    return "\n".join(steps)


class GraphPipeline:
    """Implements :class:`kgqa.pipeline.base.QAPipeline` for ``mode == "graph"``."""

    mode = "graph"

    def __init__(
        self,
        llm: LLM | None,
        walker: GraphWalker,
        params: PipelineParams | None = None,
        *,
        decompose: bool = True,
        synthesize: bool = False,
        prompt: str = "decompose_steps",
        vocabulary: StepVocabulary | None = None,
    ):
        if (decompose or synthesize) and llm is None:
            raise KGQAError("graph mode needs an LLM for decomposition or synthesis")
        self.params = params or PipelineParams()
        self.walker = walker
        self.decompose = decompose
        self.synthesize = synthesize
        # With a vocabulary the decomposition is held by a grammar to steps that each name one
        # (relation, direction) the frontier can have; without one, steps are free text and
        # the walk scores what they mean.
        self.vocabulary = vocabulary
        pdir = self.params.prompts_dir
        # Greedy: the steps must follow the examples' shapes, not vary from run to run. Terse
        # steps take 10-40 tokens (524 dev questions: max 34); the cap bounds a runaway
        # generation at a few seconds.
        self.step_params = self.params.gen.with_(
            temperature=0.0, max_tokens=min(self.params.gen.max_tokens, STEP_TOKENS)
        )
        self.decomposer = (
            Decomposer(
                llm,
                self.step_params,
                PromptTemplate(prompt, pdir),
                max_sub_questions=self.params.max_sub_questions,
            )
            if decompose and llm is not None
            else None
        )
        # The fixed instructions and examples are evaluated once, not for every question.
        pin = getattr(llm, "pin_prefix", None)
        if pin is not None and self.decomposer is not None:
            pin(self.decomposer.template.render(question=""))
        self.synthesizer = (
            Synthesizer(
                llm,
                self.params.gen.with_(max_tokens=self.params.synthesis_max_tokens),
                PromptTemplate("synthesize", pdir),
            )
            if synthesize and llm is not None
            else None
        )

    def step_grammar(self, entities: Sequence[str]) -> str | None:
        """The step grammar for a question about ``entities``: its first step follows a
        relation they have. ``None`` (free steps) without a vocabulary or when the entities
        have no relation the vocabulary knows."""
        if self.vocabulary is None:
            return None
        first = [k for k in self.walker.options_at(entities) if k[0] in self.vocabulary.words]
        if not first:
            return None
        return self.vocabulary.grammar(first, self.params.hops)

    def answer(self, question: str, entities: Sequence[str]) -> Answer:
        entities = tuple(entities)
        if not entities:
            raise KGQAError(
                "no topic entity: pass --entity NAME or write it in [brackets] in the question"
            )
        costs: list[StageCost] = []
        reasoning = ""
        sub_questions: Sequence[str] = (question,)
        keys: list[tuple[str, bool] | None] | None = None
        if self.decomposer is not None:
            grammar = self.step_grammar(entities)
            decomposition = self.decomposer.run(question, costs, grammar=grammar)
            reasoning = decomposition.reasoning
            steps = [q for q in decomposition.sub_questions if asks_something(q)]
            # A question that needs one hop is not decomposed (paper, 3.5.1): its own words say
            # more about the relation than a terse step written from them.
            if len(steps) > 1:
                sub_questions = tuple(steps)
                if grammar is not None and self.vocabulary is not None:
                    keys = [self.vocabulary.key(q) for q in steps]
        start = time.perf_counter()
        hops, answer_entities = self.walker.walk(entities, sub_questions, keys)
        costs.append(StageCost("graph_walk", time.perf_counter() - start))
        subs = tuple(
            SubAnswer(
                i,
                hop.sub_question,
                hop.sub_question,
                render_answer([AnswerEntity(n) for n in hop.entities]),
                evidence=tuple(ScoredTriple(t, hop.chosen.score) for t in hop.triples)
                if hop.chosen
                else (),
                entities=hop.entities,
            )
            for i, hop in enumerate(hops, 1)
        )
        walk = describe_hops(hops)
        reasoning = f"{reasoning}\n{walk}".strip() if reasoning else walk
        text = render_answer(answer_entities) if answer_entities else "no answer found in the graph"
        if self.synthesizer is not None and answer_entities:
            text = self.synthesizer.run(question, reasoning, subs, costs)
        evidence = sorted({tid for a in answer_entities for tid in a.support})
        # The relation path the walk followed, [[relation, "out" | "in"], ...]: what the
        # faithfulness check walks for omissions when no gold path is known (ask --check).
        followed = [h.chosen for h in hops if not h.restated and h.missing is None]
        path = (
            {"path": [[o.relation, "out" if o.outgoing else "in"] for o in followed if o]}
            if hops and all(followed)
            else {}
        )
        return Answer(
            question=question,
            entities_in=entities,
            mode=self.mode,
            text=text,
            reasoning=reasoning,
            sub_answers=subs,
            answer_entities=tuple(answer_entities),
            evidence_ids=tuple(evidence),
            costs=tuple(costs),
            candidates_count=sum(len(h.triple_ids) for h in hops),
            parameters=self.params.as_dict(self.mode)
            | {
                "decompose": self.decompose,
                "synthesize": self.synthesize,
                "decompose_temperature": self.step_params.temperature,
                "decompose_max_tokens": self.step_params.max_tokens,
                "step_grammar": self.vocabulary is not None,
            }
            | path,
        )
