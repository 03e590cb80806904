"""Graph-constrained multi-hop answering: a frontier of real entities moves along real edges.

The answer to step i is the set of KG entities reached from the entities answering step i-1
(the topic entities for i = 1). At each hop the options are the steps (relation, direction)
actually present at the frontier, read as the KB profile's canonical steps (an inverse
relation is its partner followed the other way, so both feed one option). A step the LLM
named in the step vocabulary is followed as named; a free-text step is scored against the
options. Every answer entity is reached by real triples and carries the ids of those on its
path. Several topic entities are answered together: each follows one of its own steps, and
the answer is what all of them reach (:meth:`GraphWalker.intersect`).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from kgqa.graph.paths import PathStep
from kgqa.types import AnswerEntity, Edge, Triple, verbalize_relation


@dataclass(frozen=True)
class Option:
    """A step available at the frontier, with its score for the sub-question and how many
    edges it has there."""

    relation: str
    outgoing: bool
    score: float
    count: int

    @property
    def step(self) -> PathStep:
        return PathStep(self.relation, self.outgoing)

    def describe(self) -> str:
        rel = verbalize_relation(self.relation)
        return f"-[{rel}]->" if self.outgoing else f"<-[{rel}]-"


@dataclass(frozen=True)
class Hop:
    sub_question: str
    chosen: Option | None
    options: tuple[Option, ...]
    entities: tuple[str, ...]
    # The triples the frontier moved along (the chosen option's edges).
    triples: tuple[Triple, ...]
    # True when the best option led only back to the topic entities, so the step was skipped.
    restated: bool = False
    # True for a hop the walker added (see GraphWalker.bridge_margin), not a sub-question.
    bridged: bool = False
    # The step the sub-question named, when the frontier does not have it (skipped).
    missing: PathStep | None = None
    # The topic entity this hop started from (several topic entities: one hop each).
    start: str | None = None
    # True for a hop the walk went back on: the next step's relation was not at its answer
    # but at the frontier it started from (see GraphWalker._hop).
    detour: bool = False

    @property
    def triple_ids(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.triples)


EdgeSource = Callable[[Sequence[str]], list[Edge]]
Groups = dict[PathStep, list[Edge]]
OptionScorer = Callable[[str, Groups], dict[PathStep, float]]


def embedding_scorer(
    embed: Callable[[list[str]], np.ndarray],
    vectors: Callable[[list[int]], np.ndarray],
    per_option: int = 256,
) -> OptionScorer:
    """Score options by max dot(sub-question, triple) over each option's pre-embedded triples."""

    def score(text: str, groups: Groups) -> dict[PathStep, float]:
        q = embed([text])[0]
        keys = list(groups)
        ids: list[int] = []
        bounds = [0]
        for key in keys:
            # Distinct triples only; a sample is enough to recognise what a relation means.
            seen = list(dict.fromkeys(e.triple.id for e in groups[key]))[:per_option]
            ids.extend(seen)
            bounds.append(len(ids))
        sims = vectors(ids) @ q if ids else np.zeros(0, dtype=np.float32)
        return {
            key: float(sims[bounds[i] : bounds[i + 1]].max())
            if bounds[i + 1] > bounds[i]
            else float("-inf")
            for i, key in enumerate(keys)
        }

    return score


@dataclass
class _WalkState:
    """Where a walk is: the frontier, each frontier entity's support (the triple ids of its
    whole path back to the topic), node ids of everything reached, and the hops so far."""

    topic: set[str]
    frontier: list[str]
    support: dict[str, set[int]]
    node_ids: dict[str, str] = field(default_factory=dict)
    hops: list[Hop] = field(default_factory=list)
    # (frontier, support) before each hop that moved it, last one last.
    before: list[tuple[list[str], dict[str, set[int]]]] = field(default_factory=list)

    @property
    def last(self) -> Option | None:
        return next(
            (h.chosen for h in reversed(self.hops) if h.chosen is not None and not h.detour), None
        )

    def move(self, edges: Sequence[Edge]) -> tuple[dict[str, set[int]], tuple[Triple, ...]]:
        """Where ``edges`` lead from the frontier, with support; the topic entities are never
        their own answer (MetaQA's convention, and common sense)."""
        moved: dict[str, set[int]] = defaultdict(set)
        for edge in edges:
            if edge.to_name in self.topic:
                continue
            moved[edge.to_name] |= self.support.get(edge.from_name, set()) | {edge.triple.id}
        used = tuple(sorted({e.triple for e in edges}, key=lambda t: t.id))
        return dict(moved), used

    def advance(self, hop: Hop, edges: Sequence[Edge], support: dict[str, set[int]]) -> None:
        self.before.append((self.frontier, self.support))
        self.hops.append(hop)
        self.frontier = sorted(support)
        self.support = support
        self.node_ids.update({e.to_name: e.to_node_id for e in edges if e.to_node_id})

    def back(self) -> None:
        """Undo the last hop that moved the frontier; it stays in ``hops``, marked a detour."""
        self.frontier, self.support = self.before.pop()
        i = max(i for i, h in enumerate(self.hops) if h.chosen is not None and not h.detour)
        self.hops[i] = replace(self.hops[i], detour=True)


@dataclass(frozen=True)
class _Scored:
    """The options at a frontier for one sub-question."""

    options: list[Option]
    groups: Groups
    # The score of the step that reached the frontier (for "restates the previous step").
    previous_score: float | None
    # The sub-question's best match among every step the scorer knows, here or not.
    ideal: PathStep | None


class GraphWalker:
    """Moves a frontier of entities through the graph, one sub-question per hop.

    ``canonical`` maps a step to the one graph mode reasons with (the KB profile's: an inverse
    relation followed out is its partner followed in). ``bridge_margin``: a small LLM
    sometimes drops the middle step of a 3-hop question ("actors of M", then straight to
    "screenwriters of those movies"); when going back along the previous relation first lets
    the step's best option score this much higher than anything at the current frontier, that
    bridge hop is added and said so in the reasoning. ``None`` disables it.
    """

    def __init__(
        self,
        edges: EdgeSource,
        scorer: OptionScorer,
        bridge_margin: float | None = 0.25,
        known: Sequence[PathStep] = (),
        canonical: Callable[[PathStep], PathStep] | None = None,
        either_direction: bool = False,
    ):
        self.edges = edges
        self.scorer = scorer
        self.bridge_margin = bridge_margin
        # Every step the scorer can judge, available at the frontier or not: the step's best
        # match among them says what it asks for.
        self.known = tuple(PathStep(*k) for k in known)
        self.canonical = canonical or (lambda s: s)
        # From the topic entity, let an option whose reverse the entity lacks take the better
        # of both directions' scores (the entity fixes the direction, not the wording). Off by
        # default: with derived phrasings it chose worse (WC2014 1-hop dev, 100 questions, seed
        # 0: 0.91 with it, 1.00 without; MetaQA 1-hop, 200, seed 0, MetaQA profile: 0.985 with,
        # 0.990 without; benchmarks/bench_relation_signals.py, docs/results.md).
        self.either_direction = either_direction
        # The edges read for this question (the topic's by options_at(), each frontier's by
        # options_along()), by the names read: the walk reads none of them again. options_at()
        # starts a question afresh and walk() / intersect() end it.
        self._read: dict[tuple[str, ...], list[Edge]] = {}

    # -- reading the frontier ---------------------------------------------------------------
    def _edges(self, names: Sequence[str]) -> list[Edge]:
        """``self.edges``, except that edges this question has read already (by
        :meth:`options_at` and :meth:`options_along`) are not read again."""
        key = tuple(names)
        if key not in self._read:
            self._read[key] = self.edges(list(names))
        return self._read[key]

    def _groups(self, names: Sequence[str]) -> Groups:
        groups: Groups = defaultdict(list)
        for edge in self._edges(names):
            groups[self.canonical(PathStep(edge.triple.relation, edge.outgoing))].append(edge)
        return dict(groups)

    def options_at(self, entities: Sequence[str]) -> set[PathStep]:
        """The steps the entities have: what a first step can follow. Their edges are kept
        for the next :meth:`walk` from the same entities."""
        key = tuple(dict.fromkeys(entities))
        self._read = {}
        edges = self._edges(key)
        return {self.canonical(PathStep(e.triple.relation, e.outgoing)) for e in edges}

    def options_along(self, entities: Sequence[str], path: Sequence[PathStep]) -> set[PathStep]:
        """The steps the frontier has after following ``path`` from the entities as
        :meth:`walk` would follow named steps; empty where the path stops before its end (a
        step the frontier lacks, or one that leads only back to the topic). Each frontier is
        read once per question: the walk that follows reuses the edges read here."""
        topic = set(entities)
        frontier = list(dict.fromkeys(entities))
        before: list[list[str]] = []
        for step in path:
            groups = self._groups(frontier)
            if step not in groups and before and step in self._groups(before[-1]):
                frontier = before.pop()  # the walk goes back on a detour (see _hop)
                groups = self._groups(frontier)
            edges = groups.get(step, [])
            before.append(frontier)
            frontier = sorted({e.to_name for e in edges if e.to_name not in topic})
            if not frontier:
                return set()
        return set(self._groups(frontier))

    def first_scores(self, entities: Sequence[str], text: str) -> dict[PathStep, float]:
        """The scorer's score of each step the entities have, for ``text``."""
        return self.scorer(text, self._groups(entities))

    def ranked_first(self, entities: Sequence[str], text: str) -> list[PathStep]:
        """The entities' steps, best first for ``text``, as the walk's first hop ranks them
        when no step is named."""
        return [o.step for o in self._score(text, self._groups(entities), None).options]

    def _score(self, text: str, groups: Groups, previous: PathStep | None) -> _Scored:
        scored: Groups = dict(groups)
        if previous is not None and previous not in scored:
            # Also score the step the frontier was reached by (not available here): if the
            # sub-question matches it best, it restates the previous step.
            scored[previous] = []
        for key in self.known:
            scored.setdefault(key, [])
        scores = self.scorer(text, scored)
        if previous is None and self.either_direction:
            # "what language is the movie [M] in" sounds like "movies in the language X" (in)
            # while a movie only has in_language out.
            scores = {
                k: max(v, scores.get(PathStep(k[0], not k[1]), v))
                if k in groups and PathStep(k[0], not k[1]) not in groups
                else v
                for k, v in scores.items()
            }
        options = sorted(
            (Option(s.relation, s.outgoing, scores[s], len(groups[s])) for s in groups),
            key=lambda o: (-o.score, o.relation, not o.outgoing),
        )
        return _Scored(
            options,
            groups,
            scores.get(previous, float("-inf")) if previous else None,
            max(scores, key=lambda k: scores[k]) if scores else None,
        )

    # -- one hop ----------------------------------------------------------------------------
    def _bridge(self, state: _WalkState, sq: str, here: _Scored) -> _Scored | None:
        """Add the bridge hop (back along the previous relation) when the step fits the
        bridged frontier much better; returns the bridged frontier's options, or ``None``."""
        last = state.last
        if last is None or self.bridge_margin is None:
            return None
        previous = last.step
        key = PathStep(last.relation, not last.outgoing)
        if key not in here.groups:
            return None
        b_support, b_used = state.move(here.groups[key])
        if not b_support:
            return None
        there = self._score(sq, self._groups(sorted(b_support)), None)
        if not there.options:
            return None
        best = there.options[0].step
        # The step asks for a step that the frontier lacks and the bridged frontier has
        # ("screenwriters of those movies" while at actors), or the bridged frontier fits much
        # better; going there and back along the same relation is a restatement instead.
        wants = here.ideal is not None and here.ideal not in here.groups and here.ideal != previous
        fits = there.options[0].score > here.options[0].score + self.bridge_margin
        if best == previous or not ((wants and best == here.ideal) or fits):
            return None
        bridge = next(o for o in here.options if o.step == key)
        text = f"(added) entities linked to those by {verbalize_relation(bridge.relation)}"
        hop = Hop(text, bridge, tuple(here.options), tuple(sorted(b_support)), b_used, bridged=True)
        state.advance(hop, here.groups[key], b_support)
        return there

    def _hop(self, state: _WalkState, sq: str, named: PathStep | None) -> bool:
        """One sub-question; False when the walk cannot go on."""
        if not state.frontier:
            state.hops.append(Hop(sq, None, (), (), ()))
            return False
        last = state.last
        previous = last.step if last is not None else None
        here = self._score(sq, self._groups(state.frontier), previous)
        if not here.options:
            state.hops.append(Hop(sq, None, (), (), ()))
            state.frontier = []
            return False
        if named is not None and named not in here.groups and state.before:
            # The step names a relation the frontier lacks but the frontier before the last
            # hop has ("genres of [X]", then "tags of those genres" for "describe [X] in a few
            # words"): that hop was a detour; the walk goes back and follows the step from
            # there. MetaQA 1-hop dev, seeds 0 and 1: 5 of the 7 walks that went back
            # answer right, 1 did before; no answer lost on any hop's or WC2014's runs
            # (docs/results.md, session 13).
            back = self._groups(state.before[-1][0])
            if named in back and state.move(back[named])[0]:
                state.back()
                last = state.last
                previous = last.step if last is not None else None
                here = self._score(sq, back, previous)
        if named is not None and named not in here.groups:
            # The step names a relation the frontier lacks ("movies starring those genres"),
            # and so did the frontier before: following anything else would guess, so the
            # frontier stays.
            state.hops.append(
                Hop(sq, None, tuple(here.options), tuple(state.frontier), (), missing=named)
            )
            return True
        # A named step is followed as named: no bridge, no restatement guess.
        chosen = next((o for o in here.options if o.step == named), None) if named else None
        bridged = None if chosen is not None else self._bridge(state, sq, here)
        if bridged is not None:
            here = bridged
        elif (
            chosen is None
            and previous is not None
            and previous not in here.groups
            and here.previous_score is not None
            and here.previous_score > here.options[0].score
        ):
            # "movies those directors directed" after "movies directed by X": the step asks
            # for what the frontier already is.
            state.hops.append(
                Hop(sq, None, tuple(here.options), tuple(state.frontier), (), restated=True)
            )
            return True
        chosen = chosen or here.options[0]
        edges = here.groups[chosen.step]
        support, used = state.move(edges)
        if not support:
            # The step leads only back to the question's own entity: it restates an earlier
            # step. Keep the frontier and say so, rather than ending with no answer.
            state.hops.append(
                Hop(sq, None, tuple(here.options), tuple(state.frontier), (), restated=True)
            )
            return True
        state.advance(
            Hop(sq, chosen, tuple(here.options), tuple(sorted(support)), used), edges, support
        )
        return True

    # -- walks ------------------------------------------------------------------------------
    def walk(
        self,
        entities: Sequence[str],
        sub_questions: Sequence[str],
        keys: Sequence[PathStep | tuple[str, bool] | None] | None = None,
    ) -> tuple[list[Hop], list[AnswerEntity]]:
        """``keys[i]``: the step sub-question i names outright (written in the step
        vocabulary); the walk follows it, or skips the step when the frontier lacks it, and
        scores the frontier's options for a sub-question without one."""
        start = list(dict.fromkeys(entities))
        state = _WalkState(set(entities), start, {e: set() for e in start})
        try:
            for i, sq in enumerate(sub_questions):
                named = keys[i] if keys is not None and i < len(keys) else None
                if not self._hop(state, sq, PathStep(*named) if named is not None else None):
                    break
        finally:
            self._read = {}  # a later question reads the graph afresh
        return state.hops, _ranked(
            state.hops, state.support if state.frontier else {}, state.node_ids
        )

    def intersect(
        self, entities: Sequence[str], question: str
    ) -> tuple[list[Hop], list[AnswerEntity]]:
        """Several topic entities ("who plays at position [Forward] for club [Fiorentina]"):
        each follows one of its own steps, chosen together so that their answers meet (the
        best-scoring combination whose intersection is not empty); the answers are what all of
        them reach, supported by one triple from each."""
        topics = list(dict.fromkeys(entities))
        per_entity: list[tuple[str, _Scored]] = []
        for name in topics:
            scored = self._score(question, self._groups([name]), None)
            per_entity.append((name, scored))
        self._read = {}
        if any(not s.options for _, s in per_entity):
            return [Hop(question, None, (), (), (), start=n) for n, _ in per_entity], []
        topic = set(topics)
        reach: dict[tuple[str, PathStep], dict[str, set[int]]] = {}
        for name, scored in per_entity:
            for option in scored.options:
                found: dict[str, set[int]] = defaultdict(set)
                for e in scored.groups[option.step]:
                    if e.to_name not in topic:
                        found[e.to_name].add(e.triple.id)
                reach[(name, option.step)] = found
        # At most 12 options per entity enter the search (the best-scoring ones).
        choices = [[o for o in s.options[:12]] for _, s in per_entity]
        best: tuple[float, tuple[Option, ...], set[str]] | None = None
        for combo in itertools.product(*choices):
            common = set.intersection(
                *(set(reach[(n, o.step)]) for (n, _), o in zip(per_entity, combo, strict=True))
            )
            if not common:
                continue
            total = sum(o.score for o in combo)
            if best is None or total > best[0]:
                best = (total, combo, common)
        if best is None:
            return [
                Hop(question, None, tuple(s.options), (), (), start=n) for n, s in per_entity
            ], []
        _, combo, common = best
        hops: list[Hop] = []
        support: dict[str, set[int]] = {n: set() for n in common}
        node_ids: dict[str, str] = {}
        for (name, scored), option in zip(per_entity, combo, strict=True):
            edges = [e for e in scored.groups[option.step] if e.to_name in common]
            for e in edges:
                support[e.to_name].add(e.triple.id)
                if e.to_node_id:
                    node_ids[e.to_name] = e.to_node_id
            used = tuple(sorted({e.triple for e in edges}, key=lambda t: t.id))
            hops.append(
                Hop(
                    question, option, tuple(scored.options), tuple(sorted(common)), used, start=name
                )
            )
        return hops, _ranked(hops, support, node_ids)


def _ranked(
    hops: Sequence[Hop], support: dict[str, set[int]], node_ids: dict[str, str]
) -> list[AnswerEntity]:
    """Entities reached along more distinct triples first (more evidence), then by name; each
    one's support listed along the path, first hop first."""
    hop_of = {tid: i for i, h in reversed(list(enumerate(hops))) for tid in h.triple_ids}
    ranked = sorted(support.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [
        AnswerEntity(
            name,
            node_ids.get(name),
            float(len(ids)),
            tuple(sorted(ids, key=lambda i: (hop_of.get(i, len(hops)), i))),
        )
        for name, ids in ranked
    ]


def steps_of(hops: Iterable[Hop]) -> list[PathStep]:
    """The steps a walk followed (bridges included, detours not), in order."""
    return [h.chosen.step for h in hops if h.chosen is not None and not h.detour]
