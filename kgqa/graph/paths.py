"""Relation paths: a list of steps ``(relation, outgoing?)``, e.g. "the genres of the movies a
writer wrote" is ``[(written_by, in), (has_genre, out)]``, read from the writer. The graph
store follows one (:meth:`kgqa.graph.base.GraphReader.walk`), one query per hop over the
whole frontier, with the topic entities never part of a hop's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kgqa.errors import KGQAError
from kgqa.types import verbalize_relation

# The longest path the distance queries look along (faith_distance_hops{1,2,3}.cypher).
MAX_PATH_HOPS = 3


class PathStep(NamedTuple):
    """One hop of a relation path: follow ``relation`` along (``outgoing``) or against it.

    The one step type of kgqa: graph mode's steps, the step grammar, the KB profile's
    transitions, the faithfulness check's paths. A tuple, so ``("written_by", False)`` and
    ``PathStep("written_by", False)`` are the same key."""

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


def __getattr__(name: str) -> object:
    # Transitional (session 4): the graph reads moved into the graph store; these two names
    # keep callers that have not moved yet working. Removed once every caller uses the store.
    if name == "Neo4jRubric":
        from kgqa.graph.neo4j_store import Neo4jStore

        return Neo4jStore
    if name == "walk_path":
        from kgqa.graph.neo4j_store import Neo4jStore

        def walk_path(driver: object, database: str, topics: object, path: object) -> object:
            return Neo4jStore(driver, database).walk(topics, path)  # type: ignore[arg-type]

        return walk_path
    raise AttributeError(name)
