"""Candidate triple retrieval (paper 3.5.2): every triple within N hops of the topic entities,
bidirectional. The graph store runs the variable-length query
(:meth:`kgqa.graph.neo4j_store.Neo4jStore.candidates`); this module holds what is the same for
every store: the policy, the hop distances and the grouping of the returned rows.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from kgqa.types import Candidates, Triple

MAX_HOPS = 3
_SRO = itemgetter(0, 1, 2)
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


@dataclass(frozen=True)
class ExpandPolicy:
    """How far and how wide to expand. ``hub_cap`` 0 disables the hub rule."""

    hops: int = 3
    hub_cap: int = 500
    max_candidates: int = 20000


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection held off while a burst of acyclic objects is built (a
    candidates query's decoded rows and their triples, ~10k of each at N=3): without it
    CPython runs collections in the middle of the burst, and each full one walks every object
    of the process, the loaded models' included (N=3 retrieval p95 measured in
    docs/benchmarks.md). A nested use leaves collection as the outer one found it; with
    threads, one use ending may end another's pause early, which costs only time."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def hop_distances(
    triples: Sequence[Triple],
    degrees: dict[str, int],
    entities: Sequence[str],
    hub_cap: int,
) -> dict[int, int]:
    """Hop distance of each triple: 1 + the BFS distance of its nearer expandable endpoint
    (a triple no expandable node reaches: ``1 << 30``).

    Mirrors the query's rule: topic entities are always expanded; other nodes only when their
    degree is within ``hub_cap``."""
    ends = [t.subject for t in triples], [t.object for t in triples]
    levels = _levels(*ends, degrees, entities, hub_cap, len(triples))
    return {t.id: level or 1 << 30 for t, level in zip(triples, levels, strict=True)}


def _levels(
    subjects: Sequence[str],
    objects: Sequence[str],
    degrees: dict[str, int],
    entities: Sequence[str],
    hub_cap: int,
    passes: int,
) -> list[int]:
    """The hop distance of each triple (``subjects[i]``, ``objects[i]``) up to ``passes``, 0
    past it.

    Breadth first by level over the triples themselves, not over adjacency lists: pass d takes
    the triples that touch an expandable node d-1 steps out, and their other ends are the nodes d
    steps out. Each pass reads only the triples not yet placed; a caller that puts everything
    past ``passes`` in one group needs no pass for it (for N=3: two passes over ~10k triples
    instead of building and walking adjacency lists, half of the retrieval's time in Python)."""
    start = set(entities)
    levels = [0] * len(subjects)
    seen = set(start)
    level = start
    left = list(range(len(subjects)))
    for d in range(1, passes + 1):
        ends = {n for n in level if n in start or not hub_cap or degrees.get(n, 0) <= hub_cap}
        if not ends or not left:
            break
        reached: set[str] = set()
        rest: list[int] = []
        for i in left:
            s, o = subjects[i], objects[i]
            if s in ends or o in ends:
                levels[i] = d
                reached.add(s)
                reached.add(o)
            else:
                rest.append(i)
        left = rest
        level = reached - seen
        seen |= level
    return levels


def candidates_from_rows(
    rows: Sequence[Sequence[Any]],
    entities: Sequence[str],
    policy: ExpandPolicy,
    started: float,
) -> Candidates:
    """:class:`Candidates` from the rows of a candidates query (``[triple id, subject,
    relation, object, subject degree, object degree]``; at most ``max_candidates + 1`` of
    them, so that a cut can be told): grouped by hop distance, each group in (subject,
    relation, object) order, with the hubs that were reached but not expanded through."""
    truncated = len(rows) > policy.max_candidates
    rows = rows[: policy.max_candidates]
    # Columns, and the dict of degrees from them, built in C (a node's degree is the same in
    # every row it is in).
    ids, subjects, relations, objects, s_degrees, o_degrees = (
        zip(*rows, strict=True) if rows else ((),) * 6
    )
    degrees = dict(zip(subjects, s_degrees, strict=True))
    degrees.update(zip(objects, o_degrees, strict=True))
    # Everything the first hops - 1 passes do not place is in the last group.
    levels = _levels(subjects, objects, degrees, entities, policy.hub_cap, policy.hops - 1)
    last = policy.hops - 1
    groups: list[list[tuple[str, str, str, int]]] = [[] for _ in range(policy.hops)]
    for level, row in zip(levels, zip(subjects, relations, objects, ids, strict=True), strict=True):
        groups[level - 1 if level else last].append(row)
    by_hop = tuple(tuple(Triple(i, s, r, o) for s, r, o, i in sorted(g, key=_SRO)) for g in groups)
    inner = {n for g in groups[:last] for s, _, o, _ in g for n in (s, o)}
    topic = set(entities)
    skipped = sorted(
        (n, d)
        for n, d in degrees.items()
        if policy.hub_cap and d > policy.hub_cap and n in inner and n not in topic
    )
    return Candidates(
        entities=tuple(entities),
        hops=policy.hops,
        by_hop=by_hop,
        truncated=truncated,
        skipped_hubs=tuple(skipped),
        seconds=time.perf_counter() - started,
    )


def lucene_escape(text: str) -> str:
    return _LUCENE_SPECIAL.sub(r"\\\1", text)
