"""``--mode graph``: the LLM writes the question's steps in the KB's own vocabulary under a
grammar over the real schema; the graph answers each step with real entities
(:mod:`kgqa.graphmode.walk`); an LLM synthesis is optional.

The LLM spends tokens only where it adds understanding: splitting the question into steps.
A one-step question's relation is chosen by the cheaper signal that measured best
(``one_step``: the question's embedding against each step's phrasings, or the LLM's own
first step); several topic entities are answered together, each along one of its own steps,
where their answers meet. The answer set is read off the graph, so it cannot contain an
entity that no triple supports.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from kgqa.errors import ConfigError, KGQAError
from kgqa.graph.paths import PathStep
from kgqa.graphmode.asked import AskedKinds, asked_phrase
from kgqa.graphmode.mentions import RelationMentions
from kgqa.graphmode.vocabulary import ANSWER_LABEL, END, END_LINE, StepVocabulary
from kgqa.graphmode.walk import GraphWalker, Hop, Option, steps_of
from kgqa.llm.base import LLM
from kgqa.pipeline.decompose import Decomposer
from kgqa.pipeline.pipeline import PipelineParams
from kgqa.pipeline.synthesize import Synthesizer
from kgqa.profile.model import KBProfile
from kgqa.profile.steps import PLACEHOLDER, question_phrase
from kgqa.prompts import PromptTemplate
from kgqa.types import Answer, AnswerEntity, ScoredTriple, StageCost, SubAnswer

# Token budget of the step decomposition.
STEP_TOKENS = 96
# How many answer names the prose answer lists before "and N more".
_SHOWN = 10
ONE_STEP_CHOICES = ("auto", "phrases", "llm")

_BRACKETED = re.compile(r"\[[^\]]*\]")
_ANSWER_LINE = re.compile(rf"{ANSWER_LABEL}\s*(.+?)\s*$", re.I | re.M)
# Words that glue a step together but ask for nothing; the KB profile adds the names of its
# kinds of node ("film [Saw V]?" asks for nothing in a movie graph).
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


def asks_something(step: str, stop_words: Iterable[str] = ()) -> bool:
    """False for a step that only names the entity ("film [Saw V]?"): small models sometimes
    open with one, which would send the walk along an arbitrary relation."""
    empty = _EMPTY_WORDS | frozenset(stop_words)
    words = re.findall(r"[a-z']+", _BRACKETED.sub(" ", step).lower())
    return any(w not in empty for w in words)


def render_answer(entities: Sequence[AnswerEntity]) -> str:
    names = [e.name for e in entities[:_SHOWN]]
    more = len(entities) - len(names)
    return ", ".join(names) + (f" (and {more} more)" if more > 0 else "")


def describe_hops(hops: Sequence[Hop]) -> str:
    steps = []
    for i, hop in enumerate(hops, 1):
        start = f"from [{hop.start}]: " if hop.start else ""
        if hop.restated:
            best = hop.options[0].describe() if hop.options else "?"
            steps.append(
                f"{i}. {hop.sub_question} -> {best} leads only back to the question's entity: "
                "a restatement of the previous step, skipped"
            )
            continue
        if hop.missing is not None:
            arrow = Option(hop.missing.relation, hop.missing.outgoing, 0.0, 0).describe()
            steps.append(f"{i}. {hop.sub_question} -> {arrow} is not at the frontier: skipped")
            continue
        if hop.chosen is None:
            steps.append(f"{i}. {start}{hop.sub_question} -> no relation found at the frontier")
            continue
        detour = (
            "; a detour: the next step's relation is not at them but where this step "
            "started, so the walk goes on from there"
            if hop.detour
            else ""
        )
        steps.append(
            f"{i}. {start}{hop.sub_question} -> follow {hop.chosen.describe()} "
            f"(score {hop.chosen.score:.2f}) -> {len(hop.entities)} entities{detour}"
        )
    return "\n".join(steps)


def _topic(question: str) -> str:
    """The first [bracketed] entity of an example question, without its brackets."""
    return next(iter(_BRACKETED.findall(question)), "[?]")[1:-1]


def step_example_turns(
    profile: KBProfile,
    vocabulary: StepVocabulary | None,
    hints: bool = False,
    answer: bool = False,
) -> list[tuple[str, str]]:
    """The profile's examples as (question, numbered steps) turns of the step prompt, written
    exactly as the grammar writes them; ``hints``: each question followed by its topic
    entity's first steps (as every question is then, :func:`with_hint`)."""
    turns = []
    for e in profile.examples:
        if not e.steps and not e.path:
            continue  # an example for the paper's prompts only
        topic = _topic(e.question)
        steps = (
            vocabulary.write(e.path, topic)
            if vocabulary is not None and e.path and all(s in vocabulary for s in e.path)
            else list(e.steps)
        )
        if answer and vocabulary is not None and not _ends_at_first_arrival(vocabulary, e.path):
            continue  # a path the answer grammar cannot write
        body = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
        if answer and vocabulary is not None and e.path:
            body = f"{ANSWER_LABEL} {vocabulary.answer_noun(e.path[-1])}\n{body}"
        question = (
            with_hint(e.question, vocabulary, e.first) if hints and vocabulary else e.question
        )
        turns.append((question, f"{body}\n{END}"))
    return turns


def _ends_at_first_arrival(vocabulary: StepVocabulary, path: Sequence[PathStep]) -> bool:
    """Whether no step before the last reaches nodes called as the last one's are: the paths
    that a declared answer lets the grammar write."""
    nouns = [vocabulary.answer_noun(s) for s in path]
    return bool(nouns) and nouns[-1] not in nouns[:-1]


def with_hint(question: str, vocabulary: StepVocabulary, first: Sequence[PathStep]) -> str:
    """The question and the first steps its topic entity has ("first step, one of: clubs of,
    countries of, ..."): a small model held to a grammar writes better when it has seen the
    words it may use, instead of being forced off the words it wanted mid-step."""
    options = vocabulary.first_texts(first)
    return f"{question}\n(first step, one of: {'; '.join(options)})" if options else question


def resolved_examples(
    profile: KBProfile,
    vocabulary: StepVocabulary,
    options_at: Callable[[Sequence[str]], set[PathStep]],
) -> KBProfile:
    """``profile`` with each hand-written example whose steps the grammar can write given the
    path they name and the first steps its topic has (:class:`StepExample`'s ``path`` and
    ``first``), as derived examples have them: then every example can show the hint that
    every question shows (:func:`with_hint`). The topic's first steps are read from the
    graph; for a topic the graph lacks, the steps of a kind of node that has the example's
    first step. An example that does not parse is kept as written."""
    everything = list(vocabulary.steps)
    examples = []
    changed = False
    for e in profile.examples:
        if e.path or not e.steps:
            examples.append(e)
            continue
        keys = vocabulary.keys(list(e.steps), everything)
        if not keys or any(k is None for k in keys):
            examples.append(e)
            continue
        path = tuple(k for k in keys if k is not None)
        topic = _topic(e.question)
        first = {s for s in options_at([topic]) if s in vocabulary}
        if path[0] not in first:
            first = next(
                (set(nxt) for nxt in profile.transitions.values() if path[0] in nxt), {path[0]}
            )
        examples.append(replace(e, path=path, first=tuple(sorted(first, key=str))))
        changed = True
    return replace(profile, examples=tuple(examples)) if changed else profile


def uses_hints(profile: KBProfile) -> bool:
    """Hints need every step example to know its topic's first steps (derived examples do; a
    profile file's do once :func:`resolved_examples` has read them back into paths)."""
    shown = [e for e in profile.examples if e.steps or e.path]
    return bool(shown) and all(e.first for e in shown)


@dataclass(frozen=True)
class Plan:
    """What the walk follows: the (sub-)questions, the step each one names (``None``: the
    walk scores the question's words), and the decomposition's reasoning."""

    sub_questions: Sequence[str]
    keys: list[PathStep | None] | None
    reasoning: str


class GraphPipeline:
    """Implements :class:`kgqa.pipeline.base.QAPipeline` for ``mode == "graph"``."""

    mode = "graph"

    def __init__(
        self,
        llm: LLM | None,
        walker: GraphWalker,
        params: PipelineParams | None = None,
        *,
        profile: KBProfile | None = None,
        decompose: bool = True,
        synthesize: bool = False,
        prompt: str = "decompose_steps",
        grammar: bool = True,
        one_step: str = "auto",
        one_step_margin: float = 0.3,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        cut_steps: bool = True,
        later_margin: float | None = None,
        cut_loops: bool = False,
        answer_type: bool = False,
        asked: AskedKinds | None = None,
        mentions: bool = False,
    ):
        if (decompose or synthesize) and llm is None:
            raise KGQAError("graph mode needs an LLM for decomposition or synthesis")
        if one_step not in ONE_STEP_CHOICES:
            raise ConfigError(f"one_step must be one of {', '.join(ONE_STEP_CHOICES)}")
        self.params = params or PipelineParams()
        self.walker = walker
        self.profile = profile
        self.decompose = decompose
        self.synthesize = synthesize
        # "auto": the LLM's own first step, unless the profile's phrasings were written by
        # hand (a profile file's), which chose better than the LLM on the KB they were written
        # for. Measured (benchmarks/bench_relation_signals.py, 1-hop dev, seed 0): derived
        # profile, WC2014 LLM 1.00 vs phrasings 0.91 (100 questions), MetaQA 0.95 vs 0.88 (100);
        # MetaQA profile, phrasings 0.985 (200).
        if one_step == "auto":
            by_hand = profile is not None and profile.phrases_from == "file"
            one_step = "phrases" if by_hand else "llm"
        self.one_step = one_step
        # ... unless the phrasings prefer another of the topic's steps by more than this: a
        # small model took "people married [X]" for "what is the nationality of [X]" when the
        # step to nationality read "countries of [X]" (phrasings: 0.95 against 0.55). On the
        # 1-hop dev figures above, a margin of 0.3 changes no answer (0.1-0.25: one fewer on
        # MetaQA).
        self.one_step_margin = one_step_margin
        # With an embedder, a decomposition is cut to the prefix that reads most like the
        # question (see cut_to_question): a small model writes a second step after "which
        # soccer club is based in [Mexico]" (WC2014 1-hop dev, 50 questions, seed 0: 0.96 ->
        # 1.00 with the cut) but the cut also drops needed steps (2-hop: 0.84 -> 0.68), so the
        # factory passes cut_steps=False unless graph.cut_steps is set.
        self.embed = embed
        self.cut_steps = cut_steps and embed is not None
        # With an embedder and a margin, the last step of a written path may be swapped for
        # another step from the same frontier to a kind the question asks for (or the same
        # kind) where the path's composed phrase then reads more like the question by more
        # than the margin (see checked_later).
        self.later_margin = later_margin if embed is not None else None
        # ... and where the question's words name every relation of another such path but not
        # of the written one, that path is taken (kgqa.graphmode.mentions).
        self.mentions = (
            RelationMentions(profile)
            if mentions and profile is not None and self.later_margin is not None
            else None
        )
        # ... and a path that goes out and straight back after reaching what the question asks
        # for may be cut before that loop (see cut_loop).
        self.cut_loops = cut_loops and embed is not None
        # With a vocabulary the decomposition is held by a grammar to steps that each name one
        # (relation, direction) the frontier can have; without one, steps are free text and
        # the walk scores what they mean.
        self.vocabulary = StepVocabulary(profile) if profile is not None and grammar else None
        if profile is not None and self.vocabulary is not None:
            # A profile file's examples are written as text: read back into paths, they show
            # the same hints as derived ones.
            profile = self.profile = resolved_examples(profile, self.vocabulary, walker.options_at)
        pdir = self.params.prompts_dir
        # Greedy: the steps must follow the examples' shapes, not vary from run to run. Terse
        # steps take 10-40 tokens; the cap bounds a runaway generation at a few seconds.
        self.step_params = self.params.gen.with_(
            temperature=0.0, max_tokens=min(self.params.gen.max_tokens, STEP_TOKENS)
        )
        self.hints = profile is not None and self.vocabulary is not None and uses_hints(profile)
        # The LLM first names what the question asks for ("answer: clubs"), among the nouns
        # the topic's steps reach; the grammar ends the path where it first reaches it (and
        # steps written after the last one that reaches it are dropped).
        self.answer_type = (
            answer_type
            and profile is not None
            and self.vocabulary is not None
            and all(e.path for e in profile.examples if e.steps or e.path)
        )
        # The kind of thing the question's wording asks for ("which team", "where") holds the
        # path's end (kgqa.graphmode.asked); not with a declared answer kind.
        self.asked = asked if not self.answer_type else None
        examples = (
            step_example_turns(profile, self.vocabulary, self.hints, self.answer_type)
            if profile is not None
            else []
        )
        self.decomposer = (
            Decomposer(
                llm,
                self.step_params,
                PromptTemplate(prompt, pdir, examples=examples),
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

    def first_steps(self, entities: Sequence[str]) -> list[PathStep]:
        """The steps the topic entities have that the vocabulary can write."""
        if self.vocabulary is None:
            return []
        return [s for s in self.walker.options_at(entities) if s in self.vocabulary]

    def step_grammar(self, entities: Sequence[str]) -> str | None:
        """The step grammar for a question about ``entities``: its first step follows a step
        they have. ``None`` (free steps) without a vocabulary or when the entities have no
        step the vocabulary knows."""
        if self.vocabulary is None:
            return None
        first = self.first_steps(entities)
        return self.vocabulary.grammar(first, self.params.hops) if first else None

    def checked_step(
        self,
        question: str,
        entities: Sequence[str],
        chosen: PathStep,
        allowed: Sequence[PathStep] | None = None,
    ) -> PathStep:
        """The LLM's step for a one-step question, or the step whose phrasings match the
        question best where they beat the LLM's by more than ``one_step_margin`` (among
        ``allowed`` steps, when given)."""
        scores = self.walker.first_scores(entities, question)
        own = scores.get(chosen, float("-inf"))
        if allowed:
            scores = {s: v for s, v in scores.items() if s in allowed}
        if not scores:
            return chosen
        best = max(scores, key=lambda s: scores[s])
        if scores[best] > own + self.one_step_margin:
            return best
        return chosen

    def reaching(self, steps: Sequence[PathStep], nouns: Sequence[str]) -> list[PathStep]:
        """Those of ``steps`` that reach nodes called one of ``nouns`` or of their kinds."""
        if self.vocabulary is None or self.profile is None:
            return []
        kinds = set().union(*(self.vocabulary.kinds_of(n) for n in nouns))
        return [
            s
            for s in steps
            if self.vocabulary.answer_noun(s) in nouns
            or ((k := self.profile.kind_of(s)) is not None and k.name in kinds)
        ]

    def direct_step(
        self,
        question: str,
        entities: Sequence[str],
        chosen: PathStep,
        first: Sequence[PathStep],
        noun: str,
    ) -> PathStep | None:
        """A first step of the topic that reaches the asked ``noun``'s kind at once, where its
        phrasings match the question better than the LLM's first step (``chosen``) by more
        than ``one_step_margin``: held to "countries", a small model wrote "people married
        [X]" then "countries of those people" for "what is the nationality of [X]" (phrasings
        0.95 against 0.55). ``None`` otherwise (the written path stands)."""
        direct = self.reaching(first, [noun])
        if not direct or chosen in direct:
            return None
        scores = self.walker.first_scores(entities, question)
        best = max(direct, key=lambda s: scores.get(s, float("-inf")))
        if (
            scores.get(best, float("-inf"))
            > scores.get(chosen, float("-inf")) + self.one_step_margin
        ):
            return best
        return None

    def cut_to_answer(
        self, reasoning: str, steps: list[str], keys: list[PathStep | None]
    ) -> tuple[list[str], list[PathStep | None]]:
        """The written steps up to the last one that reaches the kind the LLM said the question
        asks for ("answer: clubs"); all of them when none does."""
        assert self.vocabulary is not None
        m = _ANSWER_LINE.search(reasoning)
        if m is None:
            return steps, keys
        declared = m.group(1).strip().lower()
        last = None
        for i, key in enumerate(keys):
            if key is not None and self.vocabulary.answer_noun(key).lower() == declared:
                last = i
        if last is None:
            return steps, keys
        return steps[: last + 1], keys[: last + 1]

    def cut_to_question(
        self, question: str, topic: str, steps: list[str], keys: list[PathStep | None]
    ) -> tuple[list[str], list[PathStep | None]]:
        """The written steps cut to the prefix whose composed phrase ("the countries of the
        clubs of [X]") is most similar to the question (embedding dot product): the steps the
        question asks for, not the ones a small model adds after them. Only named steps are
        composed; a prefix is never longer than what was written."""
        assert self.embed is not None and self.profile is not None
        named = [k for k in keys if k is not None]
        if len(named) < 2 or len(named) != len(keys):
            return steps, keys
        phrases = [self._composed(topic, named[: n + 1]) for n in range(len(named))]
        vectors = self.embed([question, *phrases])
        sims = vectors[1:] @ vectors[0]
        best = int(np.argmax(sims)) + 1
        return steps[:best], keys[:best]

    def _composed(self, topic: str, path: Sequence[PathStep]) -> str:
        """The phrase a path composes from ``[topic]``: "the countries of the clubs of [X]"."""
        assert self.profile is not None
        phrase = f"[{topic}]"
        for step in path:
            phrase = question_phrase(step, self.profile.words(step.relation), phrase)
        return phrase

    def _asked_composed(self, topic: str, path: Sequence[PathStep]) -> str:
        """The profile's question for the last step of ``path`` asked of what the steps before
        it compose: "who wrote X" of "the movies directed by [X]" gives "who wrote the movies
        directed by [X]". The composed phrase where the relation has no such question."""
        assert self.profile is not None
        step = path[-1]
        words = self.profile.words(step.relation)
        ask = words.ask_object if step.outgoing else words.ask_subject
        if not re.search(rf"\b{PLACEHOLDER}\b", ask):
            return self._composed(topic, path)
        inner = self._composed(topic, path[:-1])
        return re.sub(rf"\b{PLACEHOLDER}\b", lambda _: inner, ask, count=1)

    def checked_later(
        self,
        question: str,
        topic: str,
        steps: list[str],
        keys: list[PathStep | None],
        ends: Sequence[str],
    ) -> tuple[list[str], list[PathStep | None], list[str]]:
        """The written path with its last step replaced by another step the same frontier
        really has where the whole path's composed phrase ("the authors of the movies written
        by [X]") is then more similar to the question (embedding dot product) than the
        written one's by more than ``later_margin`` (by any amount when the frontier lacks
        the written step). The replacement reaches a kind the
        question asks for (``ends``), or the written step's kind when none is read. A small
        model wrote "actors of those movies" for "who is listed as screenwriter of [X]
        starred movies". Only the last step: swapping a middle one took the question's
        words for the wrong step (MetaQA 3-hop dev, "who acted in the films directed by the
        director of [X]": the director's movies swapped for those he starred in; right
        paths 0.967 -> 0.867). Returns the steps, their keys and a reasoning line per swap."""
        assert self.embed is not None and self.profile is not None
        assert self.vocabulary is not None and self.later_margin is not None
        if len(keys) < 2 or any(k is None for k in keys):
            return steps, keys, []
        path = [k for k in keys if k is not None]

        def kind(step: PathStep) -> str | None:
            k = self.profile.kind_of(step) if self.profile is not None else None
            return k.name if k is not None else None

        chosen = path[-1]
        # The grammar's transitions are by node kind; the frontier's nodes may lack some of
        # them (MetaQA's derived profile has directors and writers as one kind, and the
        # grammar offered "movies starred those authors" for three writers who starred in
        # nothing; the walk skipped it). Only steps the frontier really has are candidates.
        real = self.walker.options_along([topic], path[:-1])
        options = [s for s in self.vocabulary.options_after(path[-2]) if s in real]
        alternatives = (
            self.reaching(options, ends)
            if ends
            else [s for s in options if kind(s) == kind(chosen)]
        )
        # A written step the frontier has gives way only past the margin; one it lacks (the
        # walk would skip it, leaving the previous step's answer) to the best real one.
        unreal = chosen not in real
        if not unreal and chosen not in alternatives:
            return steps, keys, []
        others = [s for s in alternatives if s != chosen]
        if not others:
            return steps, keys, []
        # Each candidate reads as the composed phrase ("the authors of the movies directed by
        # [X]") and as its relation's question asked of the rest ("who wrote the movies
        # directed by [X]"); the closer of the two counts. MiniLM put "the directors of ..."
        # above "the authors of ..." for "which person wrote the films acted by the actors in
        # [X]"; the question form separates them. Last steps of MetaQA dev graph-mode runs
        # (2- and 3-hop, seeds 0 and 1, 168 questions where the candidates disagree): right
        # 157 as followed, 161 with both readings, none lost (docs/results.md, session 12).
        candidates = [chosen, *others]
        paths = [[*path[:-1], s] for s in candidates]
        vectors = self.embed(
            [
                question,
                *(self._composed(topic, p) for p in paths),
                *(self._asked_composed(topic, p) for p in paths),
            ]
        )
        reads = vectors[1:] @ vectors[0]
        sims = np.maximum(reads[: len(candidates)], reads[len(candidates) :])
        own, best = float(sims[0]), int(np.argmax(sims[1:]))
        # The question's words name every relation of some candidate's path but not of the
        # written one ("who co-wrote films with [X]": written by, written by; not written by,
        # starred): the best-named path wins, by any reading (kgqa.graphmode.mentions). The
        # same MetaQA dev last steps as above (2- and 3-hop, seeds 0 and 1, on 677b026):
        # right 161 -> 168 of 169, one lost (docs/results.md, session 13).
        named: list[int] = []
        if self.mentions is not None and (
            unreal or self.mentions.covers(question, paths[0]) is None
        ):
            named = [i - 1 for i in self.mentions.best(question, paths) if i > 0]
        renamed = bool(named)
        if renamed:
            best = max(named, key=lambda i: float(sims[1 + i]))
        elif not unreal and float(sims[1 + best]) <= own + self.later_margin:
            return steps, keys, []
        path[-1] = others[best]
        reads = f"the path reads like it {float(sims[1 + best]):.2f} against {own:.2f}"
        if unreal:
            why = "is not at the frontier"
        elif renamed:
            why = "names a relation the question does not"
        else:
            why = "reads less like the question"
        if renamed and self.mentions is not None:
            # The question's words that chose it ("co-wrote" names written by), not a reading
            # that did not decide it.
            mentions = self.mentions
            named_by = sorted(set().union(*(mentions.naming(question, s.relation) for s in path)))
            quoted = ", ".join(f"'{w}'" for w in named_by)
            reads = f"the question's words {quoted} name every relation of the path"
        swap = (
            f"step {len(path)}: {chosen.describe()} -> {path[-1].describe()} "
            f"(the written step {why}; {reads})"
        )
        return self.vocabulary.write(path, topic), list(path), [swap]

    def cut_loop(
        self,
        question: str,
        topic: str,
        steps: list[str],
        keys: list[PathStep | None],
        ends: Sequence[str],
    ) -> tuple[list[str], list[PathStep | None], str | None]:
        """A written path that goes out and straight back along one relation is cut where the
        path without the loop composes a phrase more similar to the question than the whole
        path's. At the end, after a kind the question asks for (``ends``) is reached ("people
        plays in [X]", "countries of those people", "people of those countries": the people
        of the same countries), the loop is dropped. Before the last step ("tags of [Super
        Fly]", "movies of those tags", "release years of those movies" for "what year was
        [Super Fly] released"), the loop is taken out where the graph has the rest of the
        path without it, unless the question names another relation to go out and back
        along there (:meth:`named_loop`), which then replaces the loop. Returns the steps,
        their keys and a reasoning line when cut or replaced."""
        assert self.embed is not None and self.profile is not None
        if len(keys) < 3 or any(k is None for k in keys):
            return steps, keys, None
        path = [k for k in keys if k is not None]
        for i in range(len(path) - 1):
            out, back = self.profile.canonical(path[i]), self.profile.canonical(path[i + 1])
            if out.relation != back.relation or out.outgoing == back.outgoing:
                continue
            if i + 2 < len(path):
                named = self.named_loop(question, topic, path, i)
                if named is not None:
                    assert self.vocabulary is not None
                    loop, words = named
                    note = (
                        f"steps {i + 1}-{i + 2} go out and back along {path[i].describe()}, "
                        f"which no word of the question names; {words} name "
                        f"{loop.describe()}: followed out and back along it instead"
                    )
                    swapped = [*path[:i], loop, PathStep(loop.relation, not loop.outgoing)]
                    swapped += path[i + 2 :]
                    return self.vocabulary.write(swapped, topic), list(swapped), note
            shorter = path[:i] + path[i + 2 :]
            if i + 2 == len(path):
                # At the end: only once the asked kind is reached.
                if not ends or not self.reaching(shorter[-1:], ends):
                    continue
            elif shorter[i] not in self.walker.options_along([topic], shorter[:i]):
                continue  # the frontier before the loop lacks the step after it
            vectors = self.embed(
                [question, self._composed(topic, shorter), self._composed(topic, path)]
            )
            short, whole = float(vectors[1] @ vectors[0]), float(vectors[2] @ vectors[0])
            if short <= whole:
                continue
            note = (
                f"steps {i + 1}-{i + 2} go out and back along one relation: cut "
                f"(the path without them reads like the question {short:.2f} against {whole:.2f})"
            )
            if i + 2 == len(path):
                return steps[:i], list(shorter), note
            assert self.vocabulary is not None
            return self.vocabulary.write(shorter, topic), list(shorter), note
        return steps, keys, None

    def named_loop(
        self, question: str, topic: str, path: Sequence[PathStep], i: int
    ) -> tuple[PathStep, str] | None:
        """The step to go out and back along instead of the written loop at steps ``i`` and
        ``i + 1`` of ``path``, with the question's words that name it: where no word of the
        question names the loop's relation but words other than those naming the rest of the
        path name exactly one relation that the frontier before the loop has, and the graph
        has the rest of the path after going out and back along it ("the films that share
        actors with the film [X] are directed by who", written as tags of X, movies of those
        tags, directors: the question's "actors" names none of the directors' relation).
        ``None`` otherwise, and without the question-words reader."""
        mentions, profile = self.mentions, self.profile
        if mentions is None or profile is None or mentions.naming(question, path[i].relation):
            return None
        rest = [*path[:i], *path[i + 2 :]]
        taken = set().union(*(mentions.naming(question, s.relation) for s in rest))
        written = profile.canonical(path[i]).relation
        found: dict[str, tuple[PathStep, set[str]]] = {}
        for step in sorted(self.walker.options_along([topic], path[:i])):
            base = profile.canonical(step).relation
            spare = mentions.naming(question, step.relation) - taken
            if spare and base != written and base not in found:
                found[base] = (step, spare)
        real = [
            (step, spare)
            for step, spare in found.values()
            if path[i + 2]
            in self.walker.options_along(
                [topic], [*path[:i], step, PathStep(step.relation, not step.outgoing)]
            )
        ]
        if len(real) != 1:
            return None
        step, spare = real[0]
        return step, ", ".join(f"'{w}'" for w in sorted(spare))

    def cut_return(
        self, question: str, steps: list[str], keys: list[PathStep | None]
    ) -> tuple[list[str], list[PathStep | None], str | None]:
        """A written path whose last step goes straight back along the relation the step
        before followed ("tags of [X]", "movies of those tags": the other movies that share a
        tag with X) loses that step where nothing the question asks for was read and none of
        its words but its entity's label names what the step reaches ("what are some words
        that describe movie [X]": "movie" is what X is). A question that wants the other
        nodes names them ("the scriptwriter of [X] also wrote movies"). Returns the steps,
        their keys and a reasoning line when cut."""
        assert self.profile is not None and self.vocabulary is not None
        assert self.asked is not None
        if len(keys) < 2 or any(k is None for k in keys):
            return steps, keys, None
        path = [k for k in keys if k is not None]
        out, back = self.profile.canonical(path[-2]), self.profile.canonical(path[-1])
        if out.relation != back.relation or out.outgoing == back.outgoing:
            return steps, keys, None
        noun = self.vocabulary.answer_noun(path[-1])
        if self.asked.named(question, noun):
            return steps, keys, None
        note = (
            f"step {len(path)} goes straight back along the relation of step {len(path) - 1} "
            f"to {noun}, which no word of the question names but its entity's label: dropped"
        )
        return steps[:-1], keys[:-1], note

    def asked_for(self, question: str, first: Sequence[PathStep]) -> tuple[list[str], bool]:
        """The nouns ``question`` asks for among those its topic's paths reach, and whether
        the path is held to end where it first reaches one (:mod:`kgqa.graphmode.asked`);
        no nouns when the wording names none clearly or the reader is off."""
        if self.asked is None or self.vocabulary is None or not first:
            return [], False
        phrase = asked_phrase(question)
        if phrase is None:
            return [], False
        among = self.vocabulary.reachable_nouns(first, self.params.hops)
        return self.asked.choose(phrase, among), phrase.held

    def plan(self, question: str, entities: Sequence[str], costs: list[StageCost]) -> Plan:
        """The steps a one-entity question is answered by: the LLM's decomposition under the
        step grammar (held to the kind the question asks for, where its wording says), cut
        as configured; a one-step question as the question itself with the LLM's (checked)
        first step, or with no step (its words choose the relation)."""
        if self.decomposer is None:
            return Plan((question,), None, "")
        first = self.first_steps(entities)
        ends, held = self.asked_for(question, first)
        grammar = (
            self.vocabulary.grammar(
                first, self.params.hops, answer=self.answer_type, ends=ends, held=held
            )
            if first and self.vocabulary is not None
            else None
        )
        asked = (
            with_hint(question, self.vocabulary, first)
            if self.hints and self.vocabulary is not None
            else question
        )
        decomposition = self.decomposer.run(
            asked, costs, grammar=grammar, stop=(END_LINE,) if grammar is not None else ()
        )
        decomposition = replace(decomposition, question=question)
        reasoning = decomposition.reasoning
        if ends and grammar is not None:
            how = "ends where it first reaches" if held else "may end only at"
            reasoning = f"asks for: {', '.join(ends)} (the path {how} them)\n{reasoning}"
        steps = list(decomposition.sub_questions)
        parsed = None
        if grammar is not None and self.vocabulary is not None:
            parsed = self.vocabulary.keys(steps, first)
        else:
            # Free steps: drop one that only names the entity ("film [Saw V]?").
            stop = self.profile.stop_words if self.profile is not None else ()
            steps = [q for q in steps if asks_something(q, stop)]
        if len(steps) > 1 and parsed and self.answer_type:
            steps, parsed = self.cut_to_answer(decomposition.reasoning, steps, parsed)
        if len(steps) > 1 and parsed and self.cut_steps:
            steps, parsed = self.cut_to_question(question, entities[0], steps, parsed)
        if len(steps) > 1 and parsed and parsed[0] is not None and held and ends:
            direct = self.direct_step(question, entities, parsed[0], first, ends[0])
            if direct is not None:
                return Plan((question,), [direct], reasoning)
        if len(steps) > 1 and parsed and self.cut_loops and not ends and self.asked is not None:
            steps, parsed, note = self.cut_return(question, steps, parsed)
            if note:
                reasoning = f"{reasoning}\n{note}"
        looped = False
        if len(steps) > 2 and parsed and self.cut_loops and self.embed is not None:
            steps, parsed, note = self.cut_loop(question, entities[0], steps, parsed, ends)
            if note:
                reasoning = f"{reasoning}\n{note}"
                looped = True
        if len(steps) > 1 and parsed and self.later_margin is not None:
            steps, parsed, swaps = self.checked_later(question, entities[0], steps, parsed, ends)
            if swaps:
                reasoning = f"{reasoning}\n" + "\n".join(swaps)
        if len(steps) > 1:
            return Plan(tuple(steps), parsed, reasoning)
        if self.one_step == "llm" and parsed and parsed[0] is not None:
            # The LLM's own first step, chosen under the grammar among the topic's (and among
            # those reaching what the question asks for, when its wording says).
            allowed = self.reaching(first, ends) if ends else None
            step = self.checked_step(question, entities, parsed[0], allowed)
            return Plan((question,), [step], reasoning)
        if looped and parsed and parsed[0] is not None:
            # What a loop cut left of a longer written path is that path, not a one-hop
            # question whose own words (which tell of every step) should choose the relation.
            return Plan((question,), [parsed[0]], reasoning)
        # Otherwise a question that needs one hop is not decomposed (paper, 3.5.1): its own
        # words choose the relation among the topic entity's, among those reaching what the
        # question asks for when its wording says ("what language is the movie [X] in" read
        # closest to the genre step's phrasings).
        allowed = self.reaching(first, ends) if ends else []
        if allowed:
            ranked = self.walker.ranked_first(entities, question)
            own = next((s for s in ranked if s in allowed), None)
            if own is not None:
                return Plan((question,), [own], reasoning)
        return Plan((question,), None, reasoning)

    def answer(self, question: str, entities: Sequence[str]) -> Answer:
        entities = tuple(dict.fromkeys(entities))
        if not entities:
            raise KGQAError(
                "no topic entity: pass --entity NAME or write it in [brackets] in the question"
            )
        costs: list[StageCost] = []
        reasoning = ""
        if len(entities) > 1:
            start = time.perf_counter()
            hops, answer_entities = self.walker.intersect(entities, question)
            costs.append(StageCost("graph_walk", time.perf_counter() - start))
        else:
            plan = self.plan(question, entities, costs)
            reasoning, sub_questions, keys = plan.reasoning, plan.sub_questions, plan.keys
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
        # The steps the walk followed, [[relation, "out" | "in"], ...]: what the faithfulness
        # check walks for omissions when no gold path is known (ask --check). Several topic
        # entities follow one step each from their own entity: no single path.
        followed = [h.chosen for h in hops if not h.restated and h.missing is None and not h.detour]
        path = (
            {"path": [s.as_list() for s in steps_of(hops)]}
            if hops and all(followed) and len(entities) == 1
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
                "one_step": self.one_step,
                "one_step_margin": self.one_step_margin,
                "step_hints": self.hints,
                "cut_steps": self.cut_steps,
                "later_margin": self.later_margin,
                "relation_mentions": self.mentions is not None,
                "cut_loops": self.cut_loops,
                "answer_type": self.answer_type,
                "asked_kind": self.asked is not None,
                "profile": self.profile.source if self.profile is not None else None,
            }
            | path,
        )
