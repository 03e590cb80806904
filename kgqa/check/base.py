"""What the faithfulness check reads from the knowledge graph: batched name look-ups, distances,
relation-path walks and triples by id. The graph store implements it
(:class:`kgqa.graph.neo4j_store.Neo4jStore`, which callers get from ``Factory.rubric()``);
tests use an in-memory graph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kgqa.graph.paths import PathStep
from kgqa.types import Triple


class KBGraph(Protocol):
    """The checker's read interface (a part of :class:`kgqa.graph.base.GraphReader`)."""

    def exact(self, names: Iterable[str]) -> set[str]:
        """The names that are entities, exactly."""
        ...

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        """``{lower-cased name: entity names equal to it ignoring case}``."""
        ...

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        """Shortest-path length (<= max_hops, any relation and direction) from the topics."""
        ...

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        """The entities each hop of ``path`` reaches (topic entities removed at each hop)."""
        ...

    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        """The triples among ``ids`` that exist."""
        ...
