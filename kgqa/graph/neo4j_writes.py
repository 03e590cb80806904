"""The write half of the Neo4j graph store: schema, batched idempotent MERGEs, statistics.

:class:`Neo4jWrites` is a mixin of :class:`kgqa.graph.neo4j_store.Neo4jStore`, which owns the
driver and the database; it is kept in its own file because loading is its own concern (the
readers in ``loaders/`` and :mod:`kgqa.graph.load` are its only callers). Every query is a
named file in ``cypher/`` run with ``$parameters`` in an explicit write transaction (the driver
retries transient failures); every driver failure goes through
:func:`kgqa.graph.neo4j_errors.graph_errors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kgqa.graph.neo4j_errors import graph_errors
from kgqa.graph.queries import query

if TYPE_CHECKING:
    import neo4j

    from kgqa.loaders.base import RawTriple


# Rows written in a first, small transaction when the graph is (almost) empty.
_PLANNER_WARMUP_ROWS = 100


class Neo4jWrites:
    """Writes of the knowledge graph; needs ``_driver``, ``database`` and ``_read`` from the
    store it is mixed into."""

    _driver: neo4j.Driver
    database: str

    def _read(self, name: str, /, **params: Any) -> list[Any]:  # provided by Neo4jStore
        raise NotImplementedError

    def _write(self, name: str, /, **params: Any) -> Any:
        """Run one query in one explicit write transaction; returns its summary counters."""

        def work(tx: neo4j.ManagedTransaction) -> Any:
            return tx.run(query(name), params).consume().counters

        with graph_errors(self.database, name), self._driver.session(database=self.database) as s:
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
        (two when the graph is still empty); returns how many were new. Each row carries its
        relation as a dynamic type.

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
        with graph_errors(self.database), self._driver.session(database=self.database) as s:
            s.run(query("resample_outdated_indexes")).consume()

    def clear(self) -> None:
        """Delete every node and relationship (tests, benchmarks); the schema stays."""
        with graph_errors(self.database), self._driver.session(database=self.database) as s:
            # CALL ... IN TRANSACTIONS needs an auto-commit transaction.
            s.run(query("delete_all")).consume()


def _group_by_relation(
    triples: Sequence[RawTriple],
) -> Iterator[tuple[str, list[RawTriple]]]:
    groups: dict[str, list[RawTriple]] = {}
    for t in triples:
        groups.setdefault(t.relation, []).append(t)
    yield from groups.items()
