"""The graph store over triples held in memory: the same reads as
:class:`kgqa.graph.neo4j_store.Neo4jStore`, for unit tests and for benchmarks that measure
answering without a server. Not a product backend: no persistence, no full-text index
(suggestions and entity linking match whole names ignoring case).

The contract both stores must keep is tested once, over each (``tests/*/test_store_contract*``).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kgqa.errors import EntityNotFound, KGQAError
from kgqa.graph.base import DuplicateId, GraphStats, RelationStats, SavedRun
from kgqa.graph.expand import MAX_HOPS, ExpandPolicy, candidates_from_rows
from kgqa.graph.linking import named_in, one_ignoring_case
from kgqa.graph.neo4j_writes import BatchWritten
from kgqa.graph.paths import MAX_PATH_HOPS, PathStep
from kgqa.types import Candidates, Edge, Triple

if TYPE_CHECKING:
    from kgqa.loaders.base import RawTriple
    from kgqa.types import Answer


class MemoryStore:
    """A :class:`kgqa.graph.base.GraphStore` over a set of triples in memory."""

    database = "memory"

    def __init__(self, triples: Iterable[Triple] = ()):
        self._triples: dict[int, Triple] = {}
        self._entities: dict[str, None] = {}
        self._out: dict[str, list[Triple]] = defaultdict(list)
        self._in: dict[str, list[Triple]] = defaultdict(list)
        self._by_relation: dict[str, list[Triple]] = defaultdict(list)
        self._runs: list[SavedRun] = []
        for t in triples:
            self._add(t)

    @classmethod
    def from_file(cls, path: Path, fmt: str | None = None) -> MemoryStore:
        """The triples of a KB file, read by the loader ``fmt`` (default: by its extension;
        bad lines skipped)."""
        from kgqa.loaders import open_kb

        kb = open_kb(path, fmt)
        for _ in kb.check():  # the check pass comes first (RDF readers collect names there)
            pass
        return cls(Triple(t.id, t.subject, t.relation, t.object) for t in kb.stream())

    def _add(self, t: Triple) -> bool:
        if t.id in self._triples:
            return False
        self._triples[t.id] = t
        self._entities.setdefault(t.subject)
        self._entities.setdefault(t.object)
        self._out[t.subject].append(t)
        self._in[t.object].append(t)
        self._by_relation[t.relation].append(t)
        return True

    def _touching(self, name: str) -> list[Triple]:
        return [*self._out.get(name, ()), *self._in.get(name, ())]

    @staticmethod
    def node_id(name: str) -> str:
        return f"memory:{name}"

    # -- entities ---------------------------------------------------------------------------
    def entity_exists(self, name: str) -> bool:
        return name in self._entities

    def node_ids(self, names: Iterable[str]) -> dict[str, str]:
        return {n: self.node_id(n) for n in set(names) if n in self._entities}

    def exact(self, names: Iterable[str]) -> set[str]:
        return {n for n in names if n in self._entities}

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        lowered = {n.lower() for n in names}
        out: dict[str, list[str]] = defaultdict(list)
        for e in self._entities:
            if e.lower() in lowered:
                out[e.lower()].append(e)
        return {k: sorted(v) for k, v in out.items()}

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        return self.case_insensitive([name]).get(name.lower(), [])[:limit]

    def require_entities(self, names: Sequence[str]) -> None:
        if not names:
            raise KGQAError("no topic entity: pass --entity or put the entity in [brackets]")
        for n in names:
            if n not in self._entities:
                raise EntityNotFound(n, self.suggest(n))

    def link_entity(self, mention: str) -> str:
        if mention in self._entities:
            return mention
        ci = self.case_insensitive([mention]).get(mention.lower(), [])
        found = one_ignoring_case(mention, ci)
        if found is None:
            raise EntityNotFound(mention, [])
        return found

    def link_question(self, question: str) -> str:
        found = named_in(question, self._entities)
        if found is None:
            raise EntityNotFound(question.strip(), [])
        return found

    # -- retrieval --------------------------------------------------------------------------
    def _degree(self, name: str) -> int:
        return len(self._out.get(name, ())) + len(self._in.get(name, ()))

    def candidates(self, entities: Sequence[str], policy: ExpandPolicy) -> Candidates:
        if not 1 <= policy.hops <= MAX_HOPS:
            raise KGQAError(f"hops must be between 1 and {MAX_HOPS}, got {policy.hops}")
        self.require_entities(entities)
        started = time.perf_counter()
        topic = set(entities)

        def hub(node: str) -> bool:
            return (
                node not in topic and bool(policy.hub_cap) and self._degree(node) > policy.hub_cap
            )

        # Nodes within hops-1 of the topics, never stepping through a hub after them.
        dist = self._distances(entities, policy.hops - 1, through=lambda n: not hub(n))
        seen: dict[int, Triple] = {}
        for node in dist:
            if node not in topic and policy.hub_cap and self._degree(node) > policy.hub_cap:
                continue
            for t in self._touching(node):
                seen.setdefault(t.id, t)
        rows = [
            [t.id, t.subject, t.relation, t.object, self._degree(t.subject), self._degree(t.object)]
            for t in sorted(seen.values(), key=lambda t: t.id)
        ][: policy.max_candidates + 1]
        return candidates_from_rows(rows, entities, policy, started)

    def frontier_edges(self, names: Sequence[str], limit: int = 50000) -> list[Edge]:
        edges: list[Edge] = []
        for name in dict.fromkeys(names):
            for t in self._out.get(name, ()):
                edges.append(Edge(t, name, True, self.node_id(t.object)))
            for t in self._in.get(name, ()):
                edges.append(Edge(t, name, False, self.node_id(t.subject)))
        return edges[:limit]

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        topic = set(topics)
        frontier = set(topic)
        hops: list[frozenset[str]] = []
        for step in path:
            reached: set[str] = set()
            for name in frontier:
                if step.outgoing:
                    reached |= {
                        t.object for t in self._out.get(name, ()) if t.relation == step.relation
                    }
                else:
                    reached |= {
                        t.subject for t in self._in.get(name, ()) if t.relation == step.relation
                    }
            frontier = reached - topic
            hops.append(frozenset(frontier))
        return hops

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        if not 1 <= max_hops <= MAX_PATH_HOPS:
            raise KGQAError(f"max_hops must be between 1 and {MAX_PATH_HOPS}, got {max_hops}")
        dist = self._distances([t for t in topics if t in self._entities], max_hops)
        return {n: dist.get(n) for n in names}

    def _distances(
        self, starts: Sequence[str], depth: int, through: Callable[[str], bool] | None = None
    ) -> dict[str, int]:
        """Breadth-first hop counts from ``starts`` up to ``depth``, either direction, going
        on only from nodes that ``through`` allows."""
        dist = {s: 0 for s in starts}
        queue = deque(dist)
        while queue:
            node = queue.popleft()
            if dist[node] >= depth or (through is not None and not through(node)):
                continue
            for t in self._touching(node):
                other = t.object if t.subject == node else t.subject
                if other not in dist:
                    dist[other] = dist[node] + 1
                    queue.append(other)
        return dist

    # -- triples ----------------------------------------------------------------------------
    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        return {i: self._triples[i] for i in set(ids) if i in self._triples}

    def triples_by_ids(self, ids: Sequence[int]) -> list[Triple]:
        return [self._triples[i] for i in dict.fromkeys(ids) if i in self._triples]

    def all_triples(self) -> list[Triple]:
        return list(self._triples.values())

    def stats(self) -> GraphStats:
        by: dict[str, int] = defaultdict(int)
        for t in self._triples.values():
            by[t.relation] += 1
        return GraphStats(
            len(self._entities), len(self._triples), len(self._triples), tuple(sorted(by.items()))
        )

    # -- the schema (what a KB profile is derived from) -----------------------------------------
    def relation_stats(self) -> list[RelationStats]:
        subjects: dict[str, set[str]] = defaultdict(set)
        objects: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, int] = defaultdict(int)
        for t in self._triples.values():
            counts[t.relation] += 1
            subjects[t.relation].add(t.subject)
            objects[t.relation].add(t.object)
        return [
            RelationStats(r, counts[r], len(subjects[r]), len(objects[r])) for r in sorted(counts)
        ]

    def relation_types(self) -> list[str]:
        return sorted(r for r, ts in self._by_relation.items() if ts)

    def sample_triples(self, relation: str, limit: int) -> list[Triple]:
        return sorted(self._by_relation.get(relation, ()), key=lambda t: t.id)[:limit]

    def far_end_edges(
        self, relation: str, outgoing: bool, limit: int
    ) -> tuple[int, dict[tuple[str, bool], int]]:
        """For a sample of the nodes that ``(relation, outgoing)`` leads to: how many were
        sampled, and for each (relation, direction) how many of them have such an edge."""
        triples = self.sample_triples(relation, len(self._by_relation.get(relation, ())))
        # The nodes of the lowest triple ids first (as the Neo4j store samples them).
        far = list(dict.fromkeys(t.object if outgoing else t.subject for t in triples))[:limit]
        counts: dict[tuple[str, bool], int] = defaultdict(int)
        for node in far:
            keys = {(t.relation, True) for t in self._out.get(node, ())}
            keys |= {(t.relation, False) for t in self._in.get(node, ())}
            for k in keys:
                counts[k] += 1
        return len(far), dict(counts)

    def reverse_edges(self, relation: str, limit: int) -> tuple[int, dict[str, int]]:
        """For a sample of ``relation``'s triples (s, r, o): how many were sampled, and per
        relation q how many have a triple (o, q, s)."""
        sample = self.sample_triples(relation, limit)
        counts: dict[str, int] = defaultdict(int)
        for t in sample:
            for q in {x.relation for x in self._out.get(t.object, ()) if x.object == t.subject}:
                counts[q] += 1
        return len(sample), dict(counts)

    # -- writes -----------------------------------------------------------------------------
    def ensure_schema(self) -> None:
        return None

    def entity_count(self) -> int:
        return len(self._entities)

    def needs_planner_warmup(self) -> bool:
        return False

    def write_batch(
        self,
        triples: Sequence[RawTriple],
        known: Mapping[str, str | None] | None = None,
        check_names: bool = True,
    ) -> BatchWritten:
        before = len(self._entities)
        added = sum(self._add(Triple(t.id, t.subject, t.relation, t.object)) for t in triples)
        return BatchWritten(len(self._entities) - before, added)

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        return []

    def refresh_statistics(self) -> None:
        return None

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    # -- saved runs -------------------------------------------------------------------------
    def save_run(
        self, answer: Answer, *, answer_names: Sequence[str] = (), run_id: str | None = None
    ) -> str:
        from kgqa.graph.inspect import grounded_ids

        run_id = str(uuid.UUID(run_id)) if run_id else str(uuid.uuid4())
        names = [e.name for e in answer.answer_entities] or list(answer_names)
        self._runs.insert(
            0,
            SavedRun(
                run_id,
                datetime.now(UTC).isoformat(),
                answer.question,
                answer.mode,
                answer.text,
                None if answer.parameters.get("model") is None else str(answer.parameters["model"]),
                tuple(answer.entities_in),
                tuple(dict.fromkeys(names)),
                len(grounded_ids(answer)),
                f"memory-run:{run_id}",
            ),
        )
        return run_id

    def list_runs(self, limit: int = 20) -> list[SavedRun]:
        return self._runs[:limit]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        wanted = {str(uuid.UUID(i)) for i in run_ids}
        before = len(self._runs)
        self._runs = [r for r in self._runs if r.run_id not in wanted]
        return before - len(self._runs)
