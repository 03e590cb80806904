"""Relation paths over the graph, and the graph reads of the faithfulness check.

A *relation path* is a list of steps ``(relation, outgoing?)``: ``writer_to_movie_to_genre``
is ``[(written_by, in), (has_genre, out)]``, read from a writer. :func:`walk_path` follows it
hop by hop from the topic entities, one query per hop over the whole frontier, with
MetaQA's convention that the topic entities are never part of a hop's result.

:class:`Neo4jRubric` is the small read interface that :mod:`kgqa.eval.faithfulness` checks
answers against (the graph is the rubric): batched exact and case-insensitive name look-ups,
shortest-path distances from the topic entities, the path walk, and support-triple checks.
Every query is a ``cypher/`` file run in a read transaction with parameters only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.errors import GraphUnavailable, KGQAError
from kgqa.graph.queries import query
from kgqa.types import Triple, verbalize_relation

if TYPE_CHECKING:
    import neo4j

# The longest path the distance queries look along (faith_distance_hops{1,2,3}.cypher).
MAX_PATH_HOPS = 3


@dataclass(frozen=True)
class PathStep:
    """One hop of a relation path: follow ``relation`` along (``outgoing``) or against it."""

    relation: str
    outgoing: bool

    def describe(self) -> str:
        rel = verbalize_relation(self.relation)
        return f"-[{rel}]->" if self.outgoing else f"<-[{rel}]-"

    def as_list(self) -> list[str]:
        """``[relation, "out" | "in"]``: the JSON form (``Answer.parameters["path"]``)."""
        return [self.relation, "out" if self.outgoing else "in"]


RelationPath = tuple[PathStep, ...]


def parse_path(spec: Iterable[Sequence[str] | PathStep]) -> RelationPath:
    """A path from its JSON form ``[[relation, "out" | "in"], ...]`` (or from steps)."""
    steps: list[PathStep] = []
    for item in spec:
        if isinstance(item, PathStep):
            steps.append(item)
            continue
        if len(item) != 2 or item[1] not in ("out", "in") or not item[0]:
            raise KGQAError(f"a path step is [relation, 'out' | 'in'], not {list(item)!r}")
        steps.append(PathStep(str(item[0]), item[1] == "out"))
    return tuple(steps)


def describe_path(path: Sequence[PathStep]) -> str:
    """``<-[written by]- -[has genre]->``."""
    return " ".join(step.describe() for step in path)


def _read(driver: neo4j.Driver, database: str, name: str, **params: Any) -> list[Any]:
    import neo4j

    try:
        records, _, _ = driver.execute_query(
            query(name), params, database_=database, routing_=neo4j.RoutingControl.READ
        )
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired) as e:
        raise GraphUnavailable(f"lost the connection to Neo4j while reading ({name})") from e
    except neo4j.exceptions.Neo4jError as e:
        raise KGQAError(f"Neo4j failed on {name}: {e.code}: {e.message}") from e
    return records


def walk_path(
    driver: neo4j.Driver, database: str, topics: Sequence[str], path: Sequence[PathStep]
) -> list[frozenset[str]]:
    """The entities each hop of ``path`` reaches from ``topics``: ``result[i]`` is the frontier
    after hop i+1. The topic entities are removed at each hop (MetaQA's convention: "the films
    that share actors with [X]" does not answer X). An empty frontier ends the walk early
    (the remaining hops are empty)."""
    topic = set(topics)
    frontier = sorted(topic)
    hops: list[frozenset[str]] = []
    for step in path:
        if not frontier:
            hops.append(frozenset())
            continue
        name = "path_step_out" if step.outgoing else "path_step_in"
        records = _read(driver, database, name, names=frontier, rel=step.relation)
        reached = frozenset(records[0]["names"] if records else ()) - topic
        hops.append(reached)
        frontier = sorted(reached)
    return hops


class Neo4jRubric:
    """The graph reads of the faithfulness check, over one Neo4j database.

    Structurally implements :class:`kgqa.eval.faithfulness.KBGraph`; the caller owns the
    driver."""

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j"):
        self._driver = driver
        self.database = database

    def exact(self, names: Iterable[str]) -> set[str]:
        """The names that are entities, exactly (case matters)."""
        wanted = sorted(set(names))
        if not wanted:
            return set()
        records = _read(self._driver, self.database, "entities_exact", names=wanted)
        return {r["name"] for r in records if r["found"]}

    def node_ids(self, names: Iterable[str]) -> dict[str, str]:
        """``{name: Neo4j element id}`` for the names that are entities (exact match)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        records = _read(self._driver, self.database, "entities_exact", names=wanted)
        return {r["name"]: r["node_id"] for r in records if r["found"]}

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        """``{lower-cased name: [entity names equal to it ignoring case]}`` (a scan: call it
        only for names that :meth:`exact` did not find)."""
        lowered = sorted({n.lower() for n in names})
        if not lowered:
            return {}
        records = _read(self._driver, self.database, "faith_entities_ci", lowered=lowered)
        return {r["key"]: sorted(r["names"]) for r in records}

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        """Shortest-path length (at most ``max_hops``, any relation, either direction) from
        the nearest topic entity to each name (all must be entities); ``None``: farther."""
        if not 1 <= max_hops <= MAX_PATH_HOPS:
            raise KGQAError(f"max_hops must be between 1 and {MAX_PATH_HOPS}, got {max_hops}")
        wanted = sorted(set(names) - set(topics))
        out: dict[str, int | None] = {n: 0 for n in set(names) & set(topics)}
        if not wanted or not topics:
            return out | {n: None for n in wanted}
        records = _read(
            self._driver,
            self.database,
            f"faith_distance_hops{max_hops}",
            names=wanted,
            topics=list(topics),
        )
        found = {r["name"]: r["hops"] for r in records}
        return out | {n: found.get(n) for n in wanted}

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        """See :func:`walk_path`."""
        return walk_path(self._driver, self.database, topics, path)

    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        """The triples among ``ids`` that exist. ``names`` (id -> (subject, object)), when the
        answer recorded them, turns each look-up into an index seek; the other ids are found
        by a relationship scan (tens of milliseconds on MetaQA)."""
        wanted = sorted(set(ids))
        names = names or {}
        found: dict[int, Triple] = {}
        rows = [{"id": i, "s": names[i][0], "o": names[i][1]} for i in wanted if i in names]
        if rows:
            for r in _read(self._driver, self.database, "faith_triples_check", rows=rows):
                found[r["id"]] = Triple(r["id"], r["subject"], r["relation"], r["object"])
        rest = [i for i in wanted if i not in found]
        if rest:
            for r in _read(self._driver, self.database, "triples_by_ids", ids=rest):
                found[r["id"]] = Triple(r["id"], r["subject"], r["relation"], r["object"])
        return found
