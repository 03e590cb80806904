"""The write half of the Neo4j graph store: schema, batched idempotent MERGEs, statistics.

:class:`Neo4jWrites` is a mixin of :class:`kgqa.graph.neo4j_store.Neo4jStore`, which owns the
driver and the database; it is kept in its own file because loading is its own concern (the
readers in ``loaders/`` and :mod:`kgqa.graph.load` are its only callers). Every query is a
named file in ``cypher/`` run with ``$parameters`` in an explicit write transaction (the driver
retries transient failures); every driver failure goes through
:func:`kgqa.graph.neo4j_errors.graph_errors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.errors import KBFormatError
from kgqa.graph.neo4j_errors import graph_errors
from kgqa.graph.queries import query

if TYPE_CHECKING:
    import neo4j

    from kgqa.loaders.base import RawTriple


# Rows written in a first, small transaction when the graph is (almost) empty.
_PLANNER_WARMUP_ROWS = 100


@dataclass(frozen=True)
class BatchWritten:
    """What one batch's transaction created."""

    entities: int
    triples: int


class _NameConflict(Exception):
    """Raised inside a write transaction to roll it back (not retried by the driver)."""

    def __init__(self, rows: list[Any]):
        super().__init__(f"{len(rows)} names belong to other IRIs")
        self.rows = rows


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

    def entity_count(self) -> int:
        """How many ``:Entity`` nodes the graph holds."""
        return int(self._read("count_entities")[0]["count"])

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

    def needs_planner_warmup(self) -> bool:
        """True while the graph has (almost) no relationships: a plan made now for the
        triples' MERGE scans every relationship per row, so the first batch should be small
        (see :meth:`merge_triples`)."""
        return bool(self._read("count_relationships")[0]["count"] < _PLANNER_WARMUP_ROWS)

    def write_batch(
        self,
        triples: Sequence[RawTriple],
        known: Mapping[str, str | None] | None = None,
        check_names: bool = True,
    ) -> BatchWritten:
        """MERGE one batch: its triples and the entities they name.

        Usually ONE write transaction and one query per batch (measured ~20% less Neo4j
        CPU than entities first, then triples): a failure rolls the whole batch back. RDF
        triples (with IRIs) also set ``iri`` on new entities and relationships. When
        ``check_names`` (RDF into a graph that had entities before the load), the entities
        go first, in their own transaction, with a check that no name already belongs to
        another IRI: if one does, that transaction is rolled back and
        :class:`~kgqa.errors.KBFormatError` names the lines, before any triple of the batch
        is written; then the triples, in a second transaction.

        ``known``: entities (name -> IRI) that this load has already written; the entity
        transaction leaves them out (hubs such as a genre are in almost every batch)."""
        rdf = any(t.relation_iri is not None for t in triples)
        if not (rdf and check_names):
            return self._write_triples_with_entities(triples, rdf)
        if known is None:
            known = {}
        entities: dict[str, str | None] = {}
        for t in triples:
            for name, iri in ((t.subject, t.subject_iri), (t.object, t.object_iri)):
                if entities.get(name) is None and (
                    name not in known or (iri is not None and known.get(name) != iri)
                ):
                    entities[name] = iri

        def write_entities(tx: neo4j.ManagedTransaction) -> int:
            if not entities:
                return 0
            rows = [{"name": n, "iri": i} for n, i in entities.items()]
            result = tx.run(query("merge_entities_iri"), rows=rows)
            conflicts = list(result)
            if conflicts:
                raise _NameConflict(conflicts)
            return int(result.consume().counters.nodes_created)

        def write_triples(tx: neo4j.ManagedTransaction) -> int:
            rows = [
                {"s": t.subject, "r": t.relation, "o": t.object, "id": t.id, "iri": t.relation_iri}
                for t in triples
            ]
            result = tx.run(query("merge_triples_iri"), rows=rows)
            return int(result.consume().counters.relationships_created)

        try:
            with (
                graph_errors(self.database, "merge_triples"),
                self._driver.session(database=self.database) as s,
            ):
                nodes = s.execute_write(write_entities)
                return BatchWritten(nodes, s.execute_write(write_triples))
        except _NameConflict as e:
            lines: dict[str, int] = {}
            for t in triples:
                lines.setdefault(t.subject, t.line)
                lines.setdefault(t.object, t.line)
            problems = [
                (
                    lines.get(r["name"], 0),
                    f"the name {r['name']!r} of <{r['iri']}> already belongs to "
                    f"<{r['existing']}> in the graph",
                )
                for r in e.rows
            ]
            raise KBFormatError(
                "names already in the graph for other IRIs", problems=sorted(problems)
            ) from None

    def _write_triples_with_entities(self, triples: Sequence[RawTriple], rdf: bool) -> BatchWritten:
        if rdf:
            name = "merge_triples_with_entities_iri"
            rows = [
                {
                    "s": t.subject,
                    "si": t.subject_iri,
                    "r": t.relation,
                    "o": t.object,
                    "oi": t.object_iri,
                    "id": t.id,
                    "iri": t.relation_iri,
                }
                for t in triples
            ]
        else:
            name = "merge_triples_with_entities"
            rows = [{"s": t.subject, "r": t.relation, "o": t.object, "id": t.id} for t in triples]

        def work(tx: neo4j.ManagedTransaction) -> BatchWritten:
            counters = tx.run(query(name), rows=rows).consume().counters
            return BatchWritten(int(counters.nodes_created), int(counters.relationships_created))

        with (
            graph_errors(self.database, "merge_triples"),
            self._driver.session(database=self.database) as s,
        ):
            return s.execute_write(work)

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
