"""The graph store interface: everything kgqa reads from and writes to the knowledge graph.

One implementation per backend, one file each: :class:`kgqa.graph.neo4j_store.Neo4jStore`
(the product: owns the driver and the database, runs every read as a read transaction, turns
every driver failure into one :class:`~kgqa.errors.KGQAError`) and
:class:`kgqa.graph.memory_store.MemoryStore` (the same reads over triples in memory: unit tests
and benchmarks that need no server). Callers receive a store from the factory and never see a
driver.

Entities are named nodes (the name is their identity in kgqa; case matters); every triple
carries its stable, content-derived id (:func:`kgqa.loaders.base.triple_id`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kgqa.graph.expand import ExpandPolicy
    from kgqa.graph.paths import PathStep
    from kgqa.loaders.base import RawTriple
    from kgqa.types import Answer, Candidates, Edge, Triple


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


@dataclass(frozen=True)
class RelationStats:
    """One relation type of the KB: how many triples, distinct subjects and objects."""

    relation: str
    count: int
    subjects: int
    objects: int


@dataclass(frozen=True)
class SavedRun:
    """One ``:KgqaRun`` (a saved ``kgqa ask``) as :meth:`GraphStore.list_runs` returns it."""

    run_id: str
    created: str
    question: str
    mode: str
    answer: str
    model: str | None
    topic: tuple[str, ...]
    answers: tuple[str, ...]
    evidence_count: int
    element_id: str


class GraphReader(Protocol):
    """The reads of the knowledge graph (what answering and checking need)."""

    def entity_exists(self, name: str) -> bool:
        """True when an entity with exactly this name exists (case matters)."""
        ...

    def node_ids(self, names: Iterable[str]) -> dict[str, str]:
        """``{name: node id}`` for the names that are entities (exact match)."""
        ...

    def exact(self, names: Iterable[str]) -> set[str]:
        """The names that are entities, exactly."""
        ...

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        """``{lower-cased name: entity names equal to it ignoring case}``."""
        ...

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        """Close entity names for an unknown one (case-insensitive equals, then fuzzy)."""
        ...

    def require_entities(self, names: Sequence[str]) -> None:
        """Raise :class:`~kgqa.errors.EntityNotFound` (with suggestions) for the first name
        that is not an entity."""
        ...

    def link_entity(self, mention: str) -> str:
        """The entity a mention names: exact, then ignoring case (one match), else an error."""
        ...

    def link_question(self, question: str) -> str:
        """The entity a question without ``[brackets]`` names (longest whole-name match)."""
        ...

    def candidates(self, entities: Sequence[str], policy: ExpandPolicy) -> Candidates:
        """Every triple within ``policy.hops`` of ``entities``, both directions, by hop."""
        ...

    def frontier_edges(self, names: Sequence[str], limit: int = 50000) -> list[Edge]:
        """Every triple touching ``names``, both directions, seen from the name it touches."""
        ...

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        """The entities each hop of ``path`` reaches from ``topics`` (topics removed)."""
        ...

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        """Shortest-path length (<= max_hops, any relation, either direction) from the
        nearest topic entity to each name; ``None``: farther."""
        ...

    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        """The triples among ``ids`` that exist (``names``: id -> (subject, object) hints)."""
        ...

    def triples_by_ids(self, ids: Sequence[int]) -> list[Triple]:
        """The triples with these ids, in the order of ``ids``; unknown ids left out."""
        ...

    def all_triples(self) -> list[Triple]:
        """Every triple of the KB (the vector index and the KB profile are built from it)."""
        ...

    def stats(self) -> GraphStats: ...


class SchemaReader(Protocol):
    """The samples a KB profile is derived from (:mod:`kgqa.profile.derive`). Samples are
    deterministic: the same graph gives the same profile."""

    def relation_stats(self) -> list[RelationStats]:
        """Every relation type with its triple, subject and object counts."""
        ...

    def relation_types(self) -> list[str]:
        """The relation types the KB uses, sorted (cheap: no scan of the triples)."""
        ...

    def sample_triples(self, relation: str, limit: int) -> list[Triple]:
        """Up to ``limit`` triples of ``relation`` (the lowest triple ids: a pseudo-random,
        repeatable sample)."""
        ...

    def far_end_edges(
        self, relation: str, outgoing: bool, limit: int
    ) -> tuple[int, dict[tuple[str, bool], int]]:
        """For up to ``limit`` nodes that following ``(relation, outgoing)`` reaches: how many
        were sampled, and per (relation, direction) seen from them, how many have one."""
        ...

    def reverse_edges(self, relation: str, limit: int) -> tuple[int, dict[str, int]]:
        """For up to ``limit`` triples (s, relation, o): how many were sampled, and per
        relation q how many of them have a triple (o, q, s) back."""
        ...


class GraphWriter(Protocol):
    """The writes of a load (:func:`kgqa.graph.load.load_kb`, whose ``KBWriter`` lists what it
    calls) and of ``kgqa reset``."""

    def ensure_schema(self) -> None: ...

    def entity_count(self) -> int: ...

    def needs_planner_warmup(self) -> bool: ...

    def write_batch(
        self,
        triples: Sequence[RawTriple],
        known: Mapping[str, str | None] | None = None,
        check_names: bool = True,
    ) -> Any: ...

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]: ...

    def refresh_statistics(self) -> None: ...

    def clear(self) -> None: ...


class RunStore(Protocol):
    """Saved ``kgqa ask`` runs, kept beside the KB (never part of it)."""

    def save_run(
        self, answer: Answer, *, answer_names: Sequence[str] = (), run_id: str | None = None
    ) -> str: ...

    def list_runs(self, limit: int = 20) -> list[SavedRun]: ...

    def delete_runs(self, run_ids: Sequence[str]) -> int: ...


class GraphStore(GraphReader, SchemaReader, GraphWriter, RunStore, Protocol):
    """Reads, writes and saved runs of one knowledge graph."""

    database: str
