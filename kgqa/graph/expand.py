"""Candidate triple retrieval (paper 3.5.2): every triple within N hops of the topic entities,
bidirectional. The graph store runs the variable-length query
(:meth:`kgqa.graph.neo4j_store.Neo4jStore.candidates`); this module holds what is the same for
every store: the policy, the hop distances and the grouping of the returned rows.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from kgqa.types import Candidates, Triple

MAX_HOPS = 3
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


@dataclass(frozen=True)
class ExpandPolicy:
    """How far and how wide to expand. ``hub_cap`` 0 disables the hub rule."""

    hops: int = 3
    hub_cap: int = 500
    max_candidates: int = 20000


def hop_distances(
    triples: Sequence[Triple],
    degrees: dict[str, int],
    entities: Sequence[str],
    hub_cap: int,
) -> dict[int, int]:
    """Hop distance of each triple: 1 + the BFS distance of its nearer expandable endpoint.

    Mirrors the query's rule: topic entities are always expanded; other nodes only when their
    degree is within ``hub_cap``."""
    adjacency: dict[str, list[str]] = {}
    for t in triples:
        adjacency.setdefault(t.subject, []).append(t.object)
        adjacency.setdefault(t.object, []).append(t.subject)
    start = set(entities)

    def expandable(node: str) -> bool:
        return node in start or not hub_cap or degrees.get(node, 0) <= hub_cap

    dist = {e: 0 for e in entities if e in adjacency}
    queue = deque(dist)
    while queue:
        node = queue.popleft()
        if not expandable(node):
            continue
        step = dist[node] + 1
        for nxt in adjacency[node]:
            if nxt not in dist:
                dist[nxt] = step
                queue.append(nxt)
    # A triple is as near as its nearer endpoint that the walk may step through (once per node,
    # not per triple: ~10k triples in the slowest questions).
    inf = 1 << 30
    reach = {node: d for node, d in dist.items() if expandable(node)}
    return {t.id: min(reach.get(t.subject, inf), reach.get(t.object, inf)) + 1 for t in triples}


def candidates_from_rows(
    rows: Sequence[Sequence[Any]],
    entities: Sequence[str],
    policy: ExpandPolicy,
    started: float,
) -> Candidates:
    """:class:`Candidates` from the rows of a candidates query (``[triple id, subject,
    relation, object, subject degree, object degree]``; at most ``max_candidates + 1`` of
    them, so that a cut can be told): grouped by hop distance, with the hubs that were reached
    but not expanded through."""
    truncated = len(rows) > policy.max_candidates
    rows = rows[: policy.max_candidates]
    triples = [Triple(tid, s, rel, o) for tid, s, rel, o, _, _ in rows]
    degrees: dict[str, int] = {}
    for _, s, _, o, s_degree, o_degree in rows:
        degrees[s] = s_degree
        degrees[o] = o_degree
    hops = hop_distances(triples, degrees, entities, policy.hub_cap)
    by_hop: list[list[Triple]] = [[] for _ in range(policy.hops)]
    for t in triples:
        by_hop[min(hops[t.id], policy.hops) - 1].append(t)
    order = attrgetter("subject", "relation", "object")
    for group in by_hop:
        group.sort(key=order)
    inner = {t.subject for g in by_hop[:-1] for t in g} | {t.object for g in by_hop[:-1] for t in g}
    topic = set(entities)
    skipped = sorted(
        (n, d)
        for n, d in degrees.items()
        if policy.hub_cap and d > policy.hub_cap and n in inner and n not in topic
    )
    return Candidates(
        entities=tuple(entities),
        hops=policy.hops,
        by_hop=tuple(tuple(g) for g in by_hop),
        truncated=truncated,
        skipped_hubs=tuple(skipped),
        seconds=time.perf_counter() - started,
    )


def lucene_escape(text: str) -> str:
    return _LUCENE_SPECIAL.sub(r"\\\1", text)
