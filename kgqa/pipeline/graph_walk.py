"""Graph-constrained multi-hop answering (``--mode graph``).

The answer to sub-question i is a set of real KG entities, found among the triples that touch
the entities answering sub-question i-1 (the topic entities for i = 1). At each hop the options
are the (relation, direction) pairs actually present at the frontier; each option is scored by
the best dot product between the embedded sub-question and the option's triples, whose vectors
were embedded once at load time. The frontier then moves along the chosen option. Errors
cannot drift away from the graph: every answer entity is reached by real triples, and each
carries the ids of the triples on its path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kgqa.types import AnswerEntity, Edge, Triple, verbalize_relation


@dataclass(frozen=True)
class Option:
    relation: str
    outgoing: bool
    score: float
    count: int

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
    # The relation the step named, when the frontier does not have it (the step was skipped).
    missing: tuple[str, bool] | None = None

    @property
    def triple_ids(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.triples)


EdgeSource = Callable[[Sequence[str]], list[Edge]]
OptionScorer = Callable[[str, dict[tuple[str, bool], list[Edge]]], dict[tuple[str, bool], float]]


def embedding_scorer(
    embed: Callable[[list[str]], np.ndarray],
    vectors: Callable[[list[int]], np.ndarray],
    per_option: int = 256,
) -> OptionScorer:
    """Score options by max dot(sub-question, triple) over each option's pre-embedded triples."""

    def score(
        text: str, groups: dict[tuple[str, bool], list[Edge]]
    ) -> dict[tuple[str, bool], float]:
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


def _node_ids(edges: Iterable[Edge]) -> dict[str, str]:
    """The element id of the far node of each edge the frontier moved along."""
    return {e.to_name: e.to_node_id for e in edges if e.to_node_id}


class GraphWalker:
    """Moves a frontier of entities through the graph, one sub-question per hop.

    ``bridge_margin``: a small LLM sometimes drops the middle step of a 3-hop question
    ("actors of M", then straight to "screenwriters of those movies"). When going back along
    the previous relation first (actors -> their movies) lets the step's best option score
    this much higher than anything at the current frontier, that bridge hop is added and said
    so in the reasoning. ``None`` disables it.
    """

    def __init__(
        self,
        edges: EdgeSource,
        scorer: OptionScorer,
        bridge_margin: float | None = 0.25,
        known: Sequence[tuple[str, bool]] = (),
    ):
        self.edges = edges
        self.scorer = scorer
        self.bridge_margin = bridge_margin
        # Every (relation, direction) the scorer can judge, available at the frontier or not:
        # the step's best match among them says what it asks for (see walk()).
        self.known = tuple(known)
        self.last_previous_score: float | None = None
        self.last_ideal: tuple[str, bool] | None = None
        self.last_ideal_here: tuple[str, bool] | None = None
        # (topic entities, their edges) from options_at(), used once by the next walk().
        self._topic_edges: tuple[tuple[str, ...], list[Edge]] | None = None

    def _options(
        self, frontier: Sequence[str], text: str, previous: tuple[str, bool] | None = None
    ) -> tuple[list[Option], dict[tuple[str, bool], list[Edge]]]:
        groups: dict[tuple[str, bool], list[Edge]] = defaultdict(list)
        for edge in self._edges(frontier):
            groups[(edge.triple.relation, edge.outgoing)].append(edge)
        if not groups:
            return [], {}
        scored = dict(groups)
        if previous is not None and previous not in scored:
            # Also score the relation the frontier was reached by (not available here): if the
            # step matches it best, the step restates the previous one.
            scored[previous] = []
        for key in self.known:
            scored.setdefault(key, [])
        scores = self.scorer(text, scored)
        if previous is None:
            # From the topic entity the direction is the entity's, not the question's: "what
            # language is the movie [M] in" sounds like "movies in the language X" (in) while a
            # movie only has in_language out. An option whose reverse the entity lacks takes the
            # better of both directions' scores (1-step relation choice on 600 dev questions,
            # seeds 0-1: 596 -> 600 right).
            scores = {
                k: max(v, scores.get((k[0], not k[1]), v))
                if k in groups and (k[0], not k[1]) not in groups
                else v
                for k, v in scores.items()
            }
        self.last_previous_score = scores.get(previous, float("-inf")) if previous else None
        # The step's best match among everything known, available here or not.
        self.last_ideal = max(scores, key=lambda k: scores[k]) if scores else None
        options = sorted(
            (Option(rel, out, scores[(rel, out)], len(groups[(rel, out)])) for rel, out in groups),
            key=lambda o: (-o.score, o.relation, not o.outgoing),
        )
        return options, groups

    @staticmethod
    def _move(
        edges: Sequence[Edge], support: dict[str, set[int]], topic: set[str]
    ) -> tuple[dict[str, set[int]], tuple[Triple, ...]]:
        moved: dict[str, set[int]] = defaultdict(set)
        for edge in edges:
            # MetaQA's convention, and common sense: the topic entity is not its own answer.
            if edge.to_name in topic:
                continue
            moved[edge.to_name] |= support.get(edge.from_name, set()) | {edge.triple.id}
        used = tuple(sorted({e.triple for e in edges}, key=lambda t: t.id))
        return dict(moved), used

    def _edges(self, names: Sequence[str]) -> list[Edge]:
        """``self.edges``, except that the edges of the topic entities read by
        :meth:`options_at` serve the walk's first hop instead of being read again."""
        key = tuple(names)
        if self._topic_edges is not None and self._topic_edges[0] == key:
            return self._topic_edges[1]
        return self.edges(list(names))

    def options_at(self, entities: Sequence[str]) -> set[tuple[str, bool]]:
        """The (relation, direction) pairs the entities have: what a first step can follow.
        Their edges are kept for the next :meth:`walk` from the same entities."""
        key = tuple(dict.fromkeys(entities))
        edges = self.edges(list(key))
        self._topic_edges = (key, edges)
        return {(e.triple.relation, e.outgoing) for e in edges}

    def walk(
        self,
        entities: Sequence[str],
        sub_questions: Sequence[str],
        keys: Sequence[tuple[str, bool] | None] | None = None,
    ) -> tuple[list[Hop], list[AnswerEntity]]:
        """``keys[i]``: the (relation, direction) sub-question i names outright (a step the
        LLM wrote in the step vocabulary); the walk follows it, or skips the step when the
        frontier lacks it, and scores the frontier's options for a step without one."""
        topic = set(entities)
        frontier: list[str] = list(dict.fromkeys(entities))
        # Neo4j element id of every entity the walk reached (the far node of each edge).
        node_ids: dict[str, str] = {}
        # Triple ids supporting each frontier entity (its whole path back to the topic).
        support: dict[str, set[int]] = {e: set() for e in frontier}
        hops: list[Hop] = []
        for i, sq in enumerate(sub_questions):
            named = keys[i] if keys is not None and i < len(keys) else None
            if not frontier:
                hops.append(Hop(sq, None, (), (), ()))
                break
            last = next((h.chosen for h in reversed(hops) if h.chosen is not None), None)
            previous = (last.relation, last.outgoing) if last is not None else None
            options, groups = self._options(frontier, sq, previous)
            prev_score = self.last_previous_score
            self.last_ideal_here = self.last_ideal
            if not options:
                hops.append(Hop(sq, None, (), (), ()))
                frontier = []
                break
            if named is not None and named not in groups:
                # The step names a relation the frontier lacks ("movies starring those
                # genres"): following anything else would guess, so the frontier stays.
                hops.append(Hop(sq, None, tuple(options), tuple(frontier), (), missing=named))
                continue
            # A named step is followed as named: no bridge, no restatement guess.
            chosen = (
                next(o for o in options if (o.relation, o.outgoing) == named)
                if named is not None
                else None
            )
            bridged = False
            if chosen is None and last is not None and self.bridge_margin is not None:
                key = (last.relation, not last.outgoing)
                if key in groups:
                    b_support, b_used = self._move(groups[key], support, topic)
                    b_options, b_groups = (
                        self._options(sorted(b_support), sq) if b_support else ([], {})
                    )
                    ideal = self.last_ideal_here
                    # The step asks for a relation that the frontier lacks and the bridged
                    # frontier has ("screenwriters of those movies" while at actors), or the
                    # bridged frontier fits much better.
                    wants_bridge = (
                        ideal is not None
                        and ideal not in groups
                        and ideal != previous
                        and bool(b_options)
                        and (b_options[0].relation, b_options[0].outgoing) == ideal
                    )
                    if (
                        b_options
                        and (
                            wants_bridge
                            or b_options[0].score > options[0].score + self.bridge_margin
                        )
                        # Going there and back along the same relation is a restatement of
                        # the previous step, not a missing middle step.
                        and (b_options[0].relation, b_options[0].outgoing) != previous
                    ):
                        bridge = next(o for o in options if (o.relation, o.outgoing) == key)
                        text = f"(added) entities linked to those by {verbalize_relation(bridge.relation)}"
                        hops.append(
                            Hop(
                                text,
                                bridge,
                                tuple(options),
                                tuple(sorted(b_support)),
                                b_used,
                                bridged=True,
                            )
                        )
                        frontier, support = sorted(b_support), b_support
                        node_ids.update(_node_ids(groups[key]))
                        options, groups = b_options, b_groups
                        bridged = True
            if (
                chosen is None
                and not bridged
                and previous is not None
                and previous not in groups
                and prev_score is not None
                and prev_score > options[0].score
            ):
                # "movies those directors directed" after "movies directed by X": the step
                # asks for what the frontier already is.
                hops.append(Hop(sq, None, tuple(options), tuple(frontier), (), restated=True))
                continue
            chosen = chosen or options[0]
            chosen_edges = groups[(chosen.relation, chosen.outgoing)]
            new_support, used = self._move(chosen_edges, support, topic)
            node_ids.update(_node_ids(chosen_edges))
            if not new_support:
                # The step leads only back to the question's own entity: it restates an earlier
                # step ("movies those directors directed" after "movies directed by X"). Keep
                # the frontier and say so, rather than ending with no answer.
                hops.append(Hop(sq, None, tuple(options), tuple(frontier), (), restated=True))
                continue
            frontier = sorted(new_support)
            support = new_support
            hops.append(Hop(sq, chosen, tuple(options), tuple(frontier), used))
        self._topic_edges = None  # a later question reads the graph afresh
        # Rank: entities reached along more distinct triples first (more evidence), then by name.
        # Support triples are listed along the path: first hop first.
        hop_of = {tid: i for i, h in reversed(list(enumerate(hops))) for tid in h.triple_ids}
        ranked = sorted(support.items(), key=lambda kv: (-len(kv[1]), kv[0])) if frontier else []
        answers = [
            AnswerEntity(
                name,
                node_ids.get(name),
                float(len(ids)),
                tuple(sorted(ids, key=lambda i: (hop_of.get(i, len(hops)), i))),
            )
            for name, ids in ranked
        ]
        return hops, answers
