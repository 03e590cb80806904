"""The modes: the paper's full system and its three baselines (section 4.3), one class.

- ``kgrag``  decompose -> candidates once -> per sub-question: reformulate with the earlier
             answers, top-K triples, answer -> synthesize (the full KG-RAG system)
- ``kaping`` candidates + top-K for the whole question -> answer (LLM+KG, no decomposition)
- ``qd``     decompose -> reformulate -> answer each sub-question closed-book -> synthesize
             (LLM+QD, no graph)
- ``llm``    the question alone, one zero-shot call
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kgqa.answers import split_cut_line
from kgqa.errors import ConfigError, KGQAError
from kgqa.llm.base import LLM, GenParams
from kgqa.modes import MODES as ALL
from kgqa.modes import PAPER_MODES, RETRIEVING
from kgqa.pipeline.answer import SubQuestionAnswerer
from kgqa.pipeline.base import Retriever
from kgqa.pipeline.decompose import Decomposer
from kgqa.pipeline.ground import AnswerGrounder
from kgqa.pipeline.reformulate import Reformulator
from kgqa.pipeline.synthesize import Synthesizer
from kgqa.prompts import PromptTemplate
from kgqa.types import Answer, Candidates, ScoredTriple, StageCost, SubAnswer

if TYPE_CHECKING:
    from kgqa.profile.model import KBProfile
    from kgqa.settings import Settings

# This class's modes, the ones that retrieve, and every mode (kgqa.modes: defined once).
MODES = PAPER_MODES
GRAPH_MODES = RETRIEVING
ALL_MODES = ALL


@dataclass(frozen=True)
class PipelineParams:
    """Everything a run depends on besides the question; recorded in ``Answer.parameters``."""

    hops: int = 3
    top_k: int = 30
    model: str = ""
    seed: int = 0
    max_sub_questions: int = 4
    # The paper's Table 2 sampling, shared by all stages; stage specifics are added below.
    gen: GenParams = field(default_factory=GenParams)
    synthesis_max_tokens: int = 512
    answer_repeat_penalty: float = 1.1
    # How the answer prompt writes its facts (kgqa.pipeline.answer.FACTS).
    facts: str = "triples"
    prompts_dir: Path | None = None
    # What the LLM backend adds to the answer's parameters (which server, which constraint),
    # asked when the answer is made.
    llm_record: Callable[[], Mapping[str, object]] | None = field(
        default=None, compare=False, repr=False
    )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        model: str | None = None,
        llm_record: Callable[[], Mapping[str, object]] | None = None,
    ) -> PipelineParams:
        s = settings.llm
        return cls(
            hops=settings.retrieval.hops,
            top_k=settings.retrieval.top_k,
            model=model or s.model,
            seed=s.seed,
            gen=GenParams(
                max_tokens=s.max_tokens,
                temperature=s.temperature,
                top_k=s.top_k,
                min_p=s.min_p,
                seed=s.seed,
            ),
            prompts_dir=s.prompts_dir,
            facts=settings.retrieval.facts,
            llm_record=llm_record,
        )

    def as_dict(self, mode: str) -> dict[str, object]:
        backend = dict(self.llm_record()) if self.llm_record is not None else {}
        return (
            backend
            | {
                "mode": mode,
                "hops": self.hops,
                "top_k": self.top_k,
                "model": self.model,
                "seed": self.seed,
                "max_tokens": self.gen.max_tokens,
                "temperature": self.gen.temperature,
                "sampling_top_k": self.gen.top_k,
                "min_p": self.gen.min_p,
                "repeat_penalty": self.gen.repeat_penalty,
            }
            | ({"facts": self.facts} if mode in ("kgrag", "kaping") else {})
        )


def decomposition_turns(profile: KBProfile) -> list[tuple[str, str]]:
    """The profile's examples as turns of the paper's decomposition prompt: the question, then
    the reasoning and the numbered sub-questions.

    No more unsplit (one-fact) examples than split ones, in the profile's order: a prompt that
    is mostly "needs no splitting" teaches a small model not to split. On the sample KB (derived
    profile: 9 one-fact, 4 longer examples; Qwen2.5-Coder-1.5B; its sample questions) all 13
    gave 2-hop 6/8 and 3-hop 3/8 answer hits, mostly from 2-hop questions asked as one sub-question;
    one unsplit per two split gave 2-hop 8/8 but split 1-hop questions in two (5/8); one for one
    gave 4/6, 5/6, 6/6 (docs/results.md, session 11). A KB whose examples are all one fact
    keeps them all.
    """
    with_subs = [e for e in profile.examples if e.sub_questions]
    split = sum(1 for e in with_subs if len(e.sub_questions) > 1)
    unsplit_left = split if split else len(with_subs)
    turns = []
    for e in with_subs:
        if len(e.sub_questions) == 1:
            if unsplit_left == 0:
                continue
            unsplit_left -= 1
        subs = "\n".join(f"{i}. {q}" for i, q in enumerate(e.sub_questions, 1))
        turns.append(
            (f"Question: {e.question}", f"Reasoning: {e.reasoning}\nSub-questions:\n{subs}\n<END>")
        )
    return turns


class KGRAGPipeline:
    """Implements :class:`kgqa.pipeline.base.QAPipeline` for one of :data:`MODES`.

    The LLM and the retriever come in through the constructor; ``retriever`` may be ``None``
    for the modes that do not read the graph (``qd``, ``llm``). Prompts are loaded (and their
    placeholders checked) here, before the first question.
    """

    def __init__(
        self,
        llm: LLM,
        retriever: Retriever | None,
        params: PipelineParams | None = None,
        mode: str = "kgrag",
        grounder: AnswerGrounder | None = None,
        *,
        profile: KBProfile | None = None,
    ):
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
        if mode in GRAPH_MODES and retriever is None:
            raise ConfigError(f"mode {mode!r} needs the graph retriever")
        self.llm = llm
        self.retriever = retriever
        self.params = params or PipelineParams()
        self.mode = mode
        # Reads the KG entities the answer names (with node ids and supporting triples).
        self.grounder = grounder
        p, pdir = self.params, self.params.prompts_dir
        # The decomposition's in-context examples are the KB's own (its profile's).
        examples = decomposition_turns(profile) if profile is not None else []
        self.decomposer = Decomposer(
            llm,
            p.gen,
            PromptTemplate("decompose", pdir, examples=examples),
            max_sub_questions=p.max_sub_questions,
        )
        self.reformulator = Reformulator(llm, p.gen, PromptTemplate("reformulate", pdir))
        self.answerer = SubQuestionAnswerer(
            llm,
            p.gen.with_(repeat_penalty=p.answer_repeat_penalty),
            PromptTemplate("answer", pdir),
            PromptTemplate("answer_llm", pdir),
            facts=p.facts,
        )
        self.synthesizer = Synthesizer(
            llm, p.gen.with_(max_tokens=p.synthesis_max_tokens), PromptTemplate("synthesize", pdir)
        )
        # The decomposition, reformulation and synthesis prompts start with fixed instructions
        # and examples (~580, ~200 and ~150 tokens), the answer prompt with its instructions
        # (~60); an LLM that can keep such a prefix evaluated (LlamaCppLLM.pin_prefix) skips
        # re-reading them for every question and sub-question.
        pin = getattr(llm, "pin_prefix", None)
        if pin is not None:
            if mode in ("kgrag", "qd"):
                pin(self.decomposer.template.render(question=""))
                pin(self.reformulator.template.render(sub_question="", previous=""))
                pin(self.synthesizer.template.render(question="", reasoning="", sub_answers=""))
            pin(self.answerer.prompt("", [] if mode in GRAPH_MODES else None))

    def answer(self, question: str, entities: Sequence[str]) -> Answer:
        entities = tuple(entities)
        if self.mode in GRAPH_MODES and not entities:
            raise KGQAError(
                "no topic entity: pass --entity NAME or write it in [brackets] in the question"
            )
        costs: list[StageCost] = []
        candidates: Candidates | None = None
        reasoning = ""
        # Top-K triples left out of answer prompts so that they fit the context window.
        left_out: list[int] = []
        if self.mode == "llm":
            text = self.answerer.run(question, None, costs)
            subs: tuple[SubAnswer, ...] = ()
        elif self.mode == "kaping":
            candidates = self._candidates(entities, costs)
            top = self._fit(question, self._top_k(question, candidates, costs), left_out)
            text = self.answerer.run(question, top, costs)
            subs = (SubAnswer(1, question, question, text, tuple(top), cut=costs[-1].cut),)
        else:
            decomposition = self.decomposer.run(question, costs)
            reasoning = decomposition.reasoning
            if self.mode == "kgrag":
                candidates = self._candidates(entities, costs)
            subs = self._sub_answers(decomposition.sub_questions, candidates, costs, left_out)
            text = self.synthesizer.run(question, reasoning, subs, costs)
        # The call that wrote ``text`` (answer or synthesize) is the last one recorded.
        text_cut = costs[-1].cut
        evidence = dict.fromkeys(st.triple.id for s in subs for st in s.evidence)
        # A sub-answer cut mid-name ("Paul" of "Paul Verhoeven") that the synthesis repeats
        # must not be linked to whichever node has that name either.
        suspect = [split_cut_line(s.answer)[1] for s in subs if s.cut]
        grounded = (
            self.grounder.ground(
                text,
                entities,
                [st.triple for s in subs for st in s.evidence],
                cut=text_cut,
                suspect=[n for n in suspect if n],
            )
            if self.grounder is not None
            else ()
        )
        parameters = self.params.as_dict(self.mode)
        if self.mode in GRAPH_MODES:
            parameters["triples_cut_to_fit"] = sum(left_out)
        return Answer(
            question=question,
            entities_in=entities,
            mode=self.mode,
            text=text,
            reasoning=reasoning,
            sub_answers=subs,
            answer_entities=grounded,
            evidence_ids=tuple(evidence),
            costs=tuple(costs),
            candidates_count=len(candidates) if candidates is not None else 0,
            truncated=candidates.truncated if candidates is not None else False,
            parameters=parameters,
            from_text=True,
        )

    def _sub_answers(
        self,
        sub_questions: Sequence[str],
        candidates: Candidates | None,
        costs: list[StageCost],
        left_out: list[int],
    ) -> tuple[SubAnswer, ...]:
        done: list[SubAnswer] = []
        for i, sub in enumerate(sub_questions, 1):
            previous = [(s.reformulated, s.answer) for s in done]
            asked = self.reformulator.run(sub, previous, costs)
            top = (
                self._fit(asked, self._top_k(asked, candidates, costs), left_out)
                if candidates is not None
                else None
            )
            text = self.answerer.run(asked, top, costs)
            done.append(SubAnswer(i, sub, asked, text, tuple(top or ()), cut=costs[-1].cut))
        return tuple(done)

    def _candidates(self, entities: Sequence[str], costs: list[StageCost]) -> Candidates:
        assert self.retriever is not None
        start = time.perf_counter()
        candidates = self.retriever.candidates(entities, self.params.hops)
        costs.append(StageCost("candidates", time.perf_counter() - start))
        return candidates

    def _fit(
        self, question: str, top: list[ScoredTriple], left_out: list[int]
    ) -> list[ScoredTriple]:
        """``top`` cut to what the answer prompt can hold; how many were left out is appended
        to ``left_out`` (recorded in the answer's parameters, shown by ``kgqa ask``)."""
        kept = self.answerer.fit(question, top)
        left_out.append(len(top) - len(kept))
        return kept

    def _top_k(
        self, text: str, candidates: Candidates, costs: list[StageCost]
    ) -> list[ScoredTriple]:
        assert self.retriever is not None
        start = time.perf_counter()
        top = self.retriever.top_k(text, candidates, self.params.top_k)
        costs.append(StageCost("top_k", time.perf_counter() - start))
        return top
