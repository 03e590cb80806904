"""Candidate triple retrieval (paper 3.5.2): every triple within N hops of the topic entities,
bidirectional, from one variable-length Cypher query; and the entity look-ups around it
(exact match, close-name suggestions, entity linking).

All queries run in read transactions with values as parameters.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.errors import AmbiguousEntity, EntityNotFound, KGQAError
from kgqa.graph.queries import query
from kgqa.types import Candidates, Edge, Triple

if TYPE_CHECKING:
    import neo4j

MAX_HOPS = 3
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def _read(driver: neo4j.Driver, database: str, query_name: str, /, **params: Any) -> list[Any]:
    import neo4j

    records, _, _ = driver.execute_query(
        query(query_name), params, database_=database, routing_=neo4j.RoutingControl.READ
    )
    return records


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
        for nxt in adjacency[node]:
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    inf = 1 << 30
    hops: dict[int, int] = {}
    for t in triples:
        ends = [dist.get(x, inf) for x in (t.subject, t.object) if expandable(x)]
        hops[t.id] = min(ends, default=inf) + 1
    return hops


def expand(
    driver: neo4j.Driver, database: str, entities: Sequence[str], policy: ExpandPolicy
) -> Candidates:
    """Every triple within ``policy.hops`` of ``entities`` (which must exist), grouped by hop.

    Past ``policy.max_candidates`` the result is cut and says ``truncated=True``; hubs that
    were reached but not expanded through are listed in ``skipped_hubs``."""
    if not 1 <= policy.hops <= MAX_HOPS:
        raise KGQAError(f"hops must be between 1 and {MAX_HOPS}, got {policy.hops}")
    require_entities(driver, database, entities)
    started = time.perf_counter()
    # Cypher compares degrees as 32-bit integers here: "no cap" is the largest of those.
    hub_cap = policy.hub_cap if policy.hub_cap > 0 else 2**31 - 1
    records = _read(
        driver,
        database,
        f"candidates_hops{policy.hops}",
        entities=list(entities),
        hub_cap=hub_cap,
        limit=policy.max_candidates + 1,
    )
    rows = records[0]["rows"] if records else []
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
    for group in by_hop:
        group.sort(key=lambda t: (t.subject, t.relation, t.object))
    inner = {t.subject for g in by_hop[:-1] for t in g} | {t.object for g in by_hop[:-1] for t in g}
    skipped = sorted(
        (n, d)
        for n, d in degrees.items()
        if policy.hub_cap and d > policy.hub_cap and n in inner and n not in set(entities)
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


def suggest(driver: neo4j.Driver, database: str, name: str, limit: int = 5) -> list[str]:
    """Close entity names: case-insensitive equals first, then full-text (fuzzy) matches."""
    found = [
        r["name"]
        for r in _read(driver, database, "entities_case_insensitive", name=name, limit=limit)
    ]
    words = [w for w in re.split(r"\s+", name.strip()) if w]
    if words:
        fuzzy = " ".join(f"{lucene_escape(w)}~" for w in words)
        import neo4j

        try:
            for r in _read(driver, database, "entities_fulltext", query=fuzzy, limit=limit * 2):
                if r["name"] not in found:
                    found.append(r["name"])
        except neo4j.exceptions.ClientError as e:
            # No full-text index (a graph loaded by other means): suggestions stay partial.
            if "entity_names" not in str(e.message):
                raise
    return found[:limit]


def require_entities(driver: neo4j.Driver, database: str, entities: Sequence[str]) -> None:
    """Raise :class:`EntityNotFound` (with suggestions) for the first name not in the graph."""
    if not entities:
        raise KGQAError("no topic entity: pass --entity or put the entity in [brackets]")
    for r in _read(driver, database, "entities_exact", names=list(entities)):
        if not r["found"]:
            raise EntityNotFound(r["name"], suggest(driver, database, r["name"]))


def link_entity(driver: neo4j.Driver, database: str, mention: str) -> str:
    """Entity linking for one mention: exact, then case-insensitive, then full-text.

    Several equally good candidates are an :class:`AmbiguousEntity` error, never a guess."""
    if _read(driver, database, "entities_exact", names=[mention])[0]["found"]:
        return mention
    ci = [
        r["name"]
        for r in _read(driver, database, "entities_case_insensitive", name=mention, limit=10)
    ]
    if len(ci) == 1:
        return ci[0]
    if len(ci) > 1:
        raise AmbiguousEntity(
            f"{mention!r} matches several entities when case is ignored: "
            f"{', '.join(repr(c) for c in ci)}; pass --entity with the exact name"
        )
    raise EntityNotFound(mention, suggest(driver, database, mention))


def frontier_edges(
    driver: neo4j.Driver, database: str, names: Sequence[str], limit: int = 50000
) -> list[Edge]:
    """Every triple touching ``names``, both directions, seen from the entity it touches."""
    records = _read(driver, database, "frontier_edges", names=list(names), limit=limit)
    rows = records[0]["rows"] if records else []
    return [
        Edge(Triple(tid, s, rel, o), name, outgoing, node_id)
        for name, tid, s, rel, o, outgoing, node_id in rows
    ]


def link_question(driver: neo4j.Driver, database: str, question: str, limit: int = 50) -> str:
    """Entity linking for a question that names no entity explicitly.

    Entities whose whole name occurs in the question (as words; exact case first, then
    ignoring case) are the candidates, found through the full-text index; a name inside a
    longer matching name does not count. One longest match wins; a tie is reported as
    :class:`AmbiguousEntity`, never guessed."""
    import neo4j

    words = [w for w in re.findall(r"\w+", question) if len(w) > 1]
    if not words:
        raise KGQAError("no entity in the question: pass --entity NAME")
    fulltext = " OR ".join(lucene_escape(w) for w in dict.fromkeys(words))
    try:
        rows = _read(driver, database, "entities_fulltext", query=fulltext, limit=limit)
    except neo4j.exceptions.ClientError as e:
        raise KGQAError(
            "entity linking needs the full-text index (created by `kgqa load`); pass --entity NAME"
        ) from e
    names = [r["name"] for r in rows]
    for flags in (0, re.IGNORECASE):
        found = [n for n in names if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", question, flags)]
        found = [n for n in found if not any(n != m and n.lower() in m.lower() for m in found)]
        if found:
            longest = max(len(n) for n in found)
            best = sorted({n for n in found if len(n) == longest})
            if len(best) > 1:
                raise AmbiguousEntity(
                    f"the question names several entities equally well: "
                    f"{', '.join(repr(b) for b in best)}; pass --entity with the one you mean"
                )
            return best[0]
    raise EntityNotFound(question.strip(), names[:5])
