"""The Neo4j graph store: entities are ``(:Entity {name})`` nodes, each triple is one
relationship whose type is the relation name and which carries the stable triple ``id``.

The caller (the factory) builds the driver and passes it in; this class never creates one.
Every query is a named file in ``cypher/`` run with ``$parameters``; reads are routed as reads,
writes run in explicit write transactions (the driver retries transient failures).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.errors import GraphUnavailable, KGQAError
from kgqa.graph.queries import query
from kgqa.types import Triple

if TYPE_CHECKING:
    import neo4j

    from kgqa.loaders.base import RawTriple


# Rows written in a first, small transaction when the graph is (almost) empty.
_PLANNER_WARMUP_ROWS = 100


@dataclass(frozen=True)
class GraphStats:
    """Counts of what is in the graph (``kgqa stats``)."""

    entities: int
    relationships: int
    triple_ids: int
    # (relation name, relationship count), sorted by name.
    by_relation: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "entities": self.entities,
            "relationships": self.relationships,
            "triple_ids": self.triple_ids,
            "by_relation": dict(self.by_relation),
        }


@dataclass(frozen=True)
class DuplicateId:
    """A triple id carried by more than one relationship, with up to two example triples."""

    id: int
    copies: int
    examples: tuple[tuple[str, str, str], ...]


class Neo4jStore:
    """Reads and writes the knowledge graph in one Neo4j database."""

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j"):
        self._driver = driver
        self.database = database

    # -- reads -----------------------------------------------------------------------------
    def _read(self, name: str, /, **params: Any) -> list[Any]:
        from neo4j import RoutingControl

        with _graph_errors(self.database):
            records, _, _ = self._driver.execute_query(
                query(name), params, database_=self.database, routing_=RoutingControl.READ
            )
        return records

    def entity_exists(self, name: str) -> bool:
        """True when an ``:Entity`` with exactly this name exists (case matters)."""
        return bool(self._read("entity_exists", name=name)[0]["exists"])

    def stats(self) -> GraphStats:
        """Entity, relationship and distinct triple-id counts, and relationships per type."""
        by_relation = tuple((r["relation"], r["count"]) for r in self._read("count_by_relation"))
        return GraphStats(
            entities=self._read("count_entities")[0]["count"],
            relationships=self._read("count_relationships")[0]["count"],
            triple_ids=self._read("count_triple_ids")[0]["count"],
            by_relation=by_relation,
        )

    def triples_by_ids(self, ids: Sequence[int]) -> list[Triple]:
        """The triples with these ids, in the order of ``ids``; unknown ids are left out."""
        if not ids:
            return []
        found = {
            r["id"]: Triple(r["id"], r["subject"], r["relation"], r["object"])
            for r in self._read("triples_by_ids", ids=list(ids))
        }
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        """Triple ids that sit on more than one relationship (should never happen)."""
        return [
            DuplicateId(r["id"], r["copies"], tuple(tuple(e) for e in r["examples"]))
            for r in self._read("find_duplicate_triple_ids", limit=limit)
        ]

    # -- writes ----------------------------------------------------------------------------
    def _write(self, name: str, /, **params: Any) -> Any:
        """Run one query in one explicit write transaction; returns its summary counters."""

        def work(tx: neo4j.ManagedTransaction) -> Any:
            return tx.run(query(name), params).consume().counters

        with _graph_errors(self.database), self._driver.session(database=self.database) as s:
            return s.execute_write(work)

    def ensure_schema(self) -> None:
        """Create the uniqueness constraint on entity names and the full-text index used for
        close-name suggestions and entity linking (each only if it does not exist yet)."""
        self._write("create_entity_constraint")
        self._write("create_entity_fulltext_index")

    def merge_entities(self, names: Sequence[str]) -> int:
        """MERGE one batch of entity nodes; returns how many were new."""
        return int(self._write("merge_entities", names=list(names)).nodes_created)

    def merge_triples(self, triples: Sequence[RawTriple], *, group_by_type: bool = False) -> int:
        """MERGE one batch of triples (their entities must exist) in one write transaction
        (two when the graph is still empty); returns how many were new. Each row carries its relation as a dynamic type.

        ``group_by_type`` splits the batch by relation and passes each type once as ``$type``
        (one transaction per type); measured no faster (docs/benchmarks.md), kept for the
        benchmark.
        """
        if not triples:
            return 0
        created = 0
        # In a graph with (almost) no relationships Neo4j plans the MERGE as a scan of all
        # relationships per row, quadratic in the batch. The query is re-planned per batch,
        # so a small first transaction is enough for later ones to expand from the nodes.
        if self._read("count_relationships")[0]["count"] < _PLANNER_WARMUP_ROWS:
            head, triples = triples[:_PLANNER_WARMUP_ROWS], triples[_PLANNER_WARMUP_ROWS:]
            created += self._merge_triples(head, group_by_type)
        return created + self._merge_triples(triples, group_by_type)

    def _merge_triples(self, triples: Sequence[RawTriple], group_by_type: bool) -> int:
        if not triples:
            return 0
        if not group_by_type:
            rows = [{"s": t.subject, "r": t.relation, "o": t.object, "id": t.id} for t in triples]
            return int(self._write("merge_triples", rows=rows).relationships_created)
        created = 0
        for relation, group in _group_by_relation(triples):
            counters = self._write(
                "merge_triples_of_type",
                type=relation,
                rows=[{"s": t.subject, "o": t.object, "id": t.id} for t in group],
            )
            created += counters.relationships_created
        return created

    def refresh_statistics(self) -> None:
        """Schedule a re-sample of outdated index statistics (done within milliseconds for a
        KB's name index), so queries planned after a load seek the name index instead of
        scanning it (the sample of an empty index says "0 entries"). Needs no admin rights."""
        with _graph_errors(self.database), self._driver.session(database=self.database) as s:
            s.run(query("resample_outdated_indexes")).consume()

    def clear(self) -> None:
        """Delete every node and relationship (tests, benchmarks); the schema stays."""
        with _graph_errors(self.database), self._driver.session(database=self.database) as s:
            # CALL ... IN TRANSACTIONS needs an auto-commit transaction.
            s.run(query("delete_all")).consume()


def _group_by_relation(
    triples: Sequence[RawTriple],
) -> Iterator[tuple[str, list[RawTriple]]]:
    groups: dict[str, list[RawTriple]] = {}
    for t in triples:
        groups.setdefault(t.relation, []).append(t)
    yield from groups.items()


@contextmanager
def _graph_errors(database: str) -> Iterator[None]:
    """Driver failures become one-line kgqa errors (chained, so ``-v`` can still show them)."""
    from neo4j.exceptions import (
        AuthError,
        DriverError,
        Neo4jError,
        ServiceUnavailable,
        SessionExpired,
    )

    try:
        yield
    except AuthError as e:
        raise GraphUnavailable("Neo4j refused the credentials; fix NEO4J_PASSWORD") from e
    except (ServiceUnavailable, SessionExpired) as e:
        raise GraphUnavailable("lost the connection to Neo4j; check NEO4J_URI") from e
    except Neo4jError as e:
        raise KGQAError(f"Neo4j ({database}) failed: {e.code}: {e.message}") from e
    except DriverError as e:
        raise GraphUnavailable(f"Neo4j driver error: {e}") from e
