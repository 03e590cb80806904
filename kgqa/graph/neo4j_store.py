"""The Neo4j graph store: entities are ``(:Entity {name})`` nodes, each triple is one
relationship whose type is the relation name and which carries the stable triple ``id``.

:class:`Neo4jStore` implements :class:`kgqa.graph.base.GraphStore`. It holds the driver and
the database (the factory builds the driver and passes it in; this class never creates one),
runs every read as a read transaction (``execute_query`` routed ``READ``), and turns every
driver failure into one kgqa error the same way (:func:`kgqa.graph.neo4j_errors.graph_errors`):
Neo4j stopping in the middle of a question is a :class:`~kgqa.errors.GraphUnavailable` line,
never a traceback. Every query is a named file in ``cypher/`` run with ``$parameters``. The
writes of a load live in the mixin :class:`kgqa.graph.neo4j_writes.Neo4jWrites`.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kgqa.errors import EntityNotFound, KGQAError
from kgqa.graph.base import DuplicateId, GraphStats, RelationStats, SavedRun
from kgqa.graph.expand import (
    MAX_HOPS,
    ExpandPolicy,
    candidates_from_rows,
    gc_paused,
    lucene_escape,
)
from kgqa.graph.linking import link_terms, named_in, one_ignoring_case
from kgqa.graph.neo4j_errors import graph_errors
from kgqa.graph.neo4j_writes import Neo4jWrites
from kgqa.graph.paths import MAX_PATH_HOPS, PathStep
from kgqa.graph.queries import query
from kgqa.graph.schema import MAPPED_FULLTEXT, RUN_LABEL, GraphSchema, quote
from kgqa.loaders.base import triple_id
from kgqa.types import Candidates, Edge, Triple

if TYPE_CHECKING:
    import neo4j

    from kgqa.types import Answer

__all__ = ["DuplicateId", "GraphStats", "Neo4jStore", "SavedRun"]

# Cypher compares degrees as 32-bit integers here: "no hub cap" is the largest of those.
_NO_CAP = 2**31 - 1


class Neo4jStore(Neo4jWrites):
    """Reads and writes the knowledge graph in one Neo4j database (writes: the mixin
    :class:`~kgqa.graph.neo4j_writes.Neo4jWrites`)."""

    def __init__(
        self, driver: neo4j.Driver, database: str = "neo4j", schema: GraphSchema | None = None
    ):
        self._driver = driver
        self.database = database
        # kgqa's own graph, or one already in Neo4j read through its labels and names.
        self.schema = schema or GraphSchema()
        self._all: list[Triple] | None = None

    # -- the one read path ------------------------------------------------------------------
    def _read(self, name: str, /, **params: Any) -> list[Any]:
        """Run ``cypher/<name>.cypher`` in a read transaction; every driver failure becomes one
        kgqa error naming the query."""
        from neo4j import RoutingControl

        with graph_errors(self.database, name):
            records, _, _ = self._driver.execute_query(
                self.schema.adapt(query(name)),
                params,
                database_=self.database,
                routing_=RoutingControl.READ,
            )
        return records

    def _id(self, tid: int | None, subject: str, relation: str, obj: str) -> int:
        """A triple's id: stored on kgqa's own relationships, computed from the content (the
        same function) for a graph whose relationships carry none."""
        return tid if tid is not None else triple_id(subject, relation, obj)

    def _triple(self, record: Any) -> Triple:
        s, rel, o = record["subject"], record["relation"], record["object"]
        return Triple(self._id(record["id"], s, rel, o), s, rel, o)

    # -- entities ---------------------------------------------------------------------------
    def entity_exists(self, name: str) -> bool:
        """True when an ``:Entity`` with exactly this name exists (case matters)."""
        return bool(self._read("entity_exists", name=name)[0]["exists"])

    def node_ids(self, names: Iterable[str]) -> dict[str, str]:
        """``{name: Neo4j element id}`` for the names that are entities (exact match)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        records = self._read("entities_exact", names=wanted)
        return {r["name"]: r["node_id"] for r in records if r["found"]}

    def exact(self, names: Iterable[str]) -> set[str]:
        """The names that are entities, exactly (case matters)."""
        return set(self.node_ids(names))

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        """``{lower-cased name: [entity names equal to it ignoring case]}`` (a scan: call it
        only for names that :meth:`exact` did not find)."""
        lowered = sorted({n.lower() for n in names})
        if not lowered:
            return {}
        records = self._read("faith_entities_ci", lowered=lowered)
        return {r["key"]: sorted(r["names"]) for r in records}

    def _fulltext(self, text: str, limit: int) -> list[str] | None:
        """Names from the full-text index for a Lucene query; ``None`` when the graph has no
        such index (one loaded by other means)."""
        try:
            rows = self._read("entities_fulltext", query=text, limit=limit)
        except KGQAError as e:
            if "entity_names" in str(e) or "fulltext" in str(e).lower():
                return None
            raise
        return [r["name"] for r in rows]

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        """Close entity names: case-insensitive equals first, then full-text (fuzzy) matches."""
        found = [r["name"] for r in self._read("entities_case_insensitive", name=name, limit=limit)]
        words = [w for w in re.split(r"\s+", name.strip()) if w]
        if words:
            fuzzy = " ".join(f"{lucene_escape(w)}~" for w in words)
            for other in self._fulltext(fuzzy, limit * 2) or ():
                if other not in found:
                    found.append(other)
        return found[:limit]

    def require_entities(self, names: Sequence[str]) -> None:
        """Raise :class:`EntityNotFound` (with suggestions) for the first name not in the
        graph."""
        if not names:
            raise KGQAError("no topic entity: pass --entity or put the entity in [brackets]")
        for r in self._read("entities_exact", names=list(names)):
            if not r["found"]:
                raise EntityNotFound(r["name"], self.suggest(r["name"]))

    def link_entity(self, mention: str) -> str:
        """Entity linking for one mention: exact, then case-insensitive, then full-text.

        Several equally good candidates are an :class:`AmbiguousEntity` error, never a guess."""
        if self._read("entities_exact", names=[mention])[0]["found"]:
            return mention
        ci = [r["name"] for r in self._read("entities_case_insensitive", name=mention, limit=10)]
        found = one_ignoring_case(mention, ci)
        if found is None:
            raise EntityNotFound(mention, self.suggest(mention))
        return found

    def link_question(self, question: str, limit: int = 50) -> str:
        """Entity linking for a question that names no entity explicitly.

        Entities whose whole name occurs in the question (as words; exact case first, then
        ignoring case) are the candidates, found through the full-text index; a name inside a
        longer matching name does not count. One longest match wins; a tie is reported as
        :class:`AmbiguousEntity`, never guessed."""
        words = link_terms(question)
        if not words:
            raise KGQAError("no entity in the question: pass --entity NAME")
        names = self._fulltext(" OR ".join(lucene_escape(w) for w in words), limit)
        if names is None:
            raise KGQAError(
                "entity linking needs the full-text index (created by `kgqa load` and "
                "`kgqa index`); pass --entity NAME"
            )
        found = named_in(question, names)
        if found is None:
            raise EntityNotFound(question.strip(), names[:5])
        return found

    # -- retrieval --------------------------------------------------------------------------
    def candidates(self, entities: Sequence[str], policy: ExpandPolicy) -> Candidates:
        """Every triple within ``policy.hops`` of ``entities`` (which must exist), grouped by
        hop, from one variable-length query (``cypher/candidates_hops{N}.cypher``).

        Past ``policy.max_candidates`` the result is cut and says ``truncated=True``; hubs
        that were reached but not expanded through are listed in ``skipped_hubs``."""
        if not 1 <= policy.hops <= MAX_HOPS:
            raise KGQAError(f"hops must be between 1 and {MAX_HOPS}, got {policy.hops}")
        self.require_entities(entities)
        started = time.perf_counter()
        with gc_paused():
            records = self._read(
                f"candidates_hops{policy.hops}",
                entities=list(entities),
                hub_cap=policy.hub_cap if policy.hub_cap > 0 else _NO_CAP,
                limit=policy.max_candidates + 1,
            )
            rows = records[0]["rows"] if records else []
            if not self.schema.native:
                rows = [[self._id(tid, s, r, o), s, r, o, ds, do] for tid, s, r, o, ds, do in rows]
            return candidates_from_rows(rows, entities, policy, started)

    def frontier_edges(self, names: Sequence[str], limit: int = 50000) -> list[Edge]:
        """Every triple touching ``names``, both directions, seen from the entity it touches."""
        records = self._read("frontier_edges", names=list(names), limit=limit)
        rows = records[0]["rows"] if records else []
        return [
            Edge(Triple(self._id(tid, s, rel, o), s, rel, o), name, outgoing, node_id)
            for name, tid, s, rel, o, outgoing, node_id in rows
        ]

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        """The entities each hop of ``path`` reaches from ``topics``: ``result[i]`` is the
        frontier after hop i+1, one query per hop over the whole frontier. The topic entities
        are removed at each hop ("the films that share actors with [X]" does not answer X);
        an empty frontier ends the walk early (the remaining hops are empty)."""
        topic = set(topics)
        frontier = sorted(topic)
        hops: list[frozenset[str]] = []
        for step in path:
            if not frontier:
                hops.append(frozenset())
                continue
            name = "path_step_out" if step.outgoing else "path_step_in"
            records = self._read(name, names=frontier, rel=step.relation)
            reached = frozenset(records[0]["names"] if records else ()) - topic
            hops.append(reached)
            frontier = sorted(reached)
        return hops

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
        records = self._read(f"faith_distance_hops{max_hops}", names=wanted, topics=list(topics))
        found = {r["name"]: r["hops"] for r in records}
        return out | {n: found.get(n) for n in wanted}

    # -- triples ----------------------------------------------------------------------------
    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        """The triples among ``ids`` that exist. ``names`` (id -> (subject, object)), when the
        answer recorded them, turns each look-up into an index seek; the other ids are found
        by a relationship scan (tens of milliseconds on MetaQA)."""
        wanted = sorted(set(ids))
        if not self.schema.native:
            return {t.id: t for t in self.all_triples() if t.id in set(wanted)}
        names = names or {}
        found: dict[int, Triple] = {}
        rows = [{"id": i, "s": names[i][0], "o": names[i][1]} for i in wanted if i in names]
        if rows:
            for r in self._read("faith_triples_check", rows=rows):
                found[r["id"]] = self._triple(r)
        rest = [i for i in wanted if i not in found]
        if rest:
            for t in self.triples_by_ids(rest):
                found[t.id] = t
        return found

    def triples_by_ids(self, ids: Sequence[int]) -> list[Triple]:
        """The triples with these ids, in the order of ``ids``; unknown ids are left out."""
        if not ids:
            return []
        if not self.schema.native:
            # No stored ids to seek: the (computed) ids of every triple, read once.
            by_id = {t.id: t for t in self.all_triples()}
            return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]
        found = {r["id"]: self._triple(r) for r in self._read("triples_by_ids", ids=list(ids))}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def all_triples(self) -> list[Triple]:
        """Every triple of the graph (``cypher/all_triples.cypher``), in one read
        transaction (kept, for a graph whose triple ids are computed)."""
        if self._all is not None:
            return self._all
        triples = [self._triple(r) for r in self._read("all_triples")]
        if not self.schema.native:
            self._all = triples
        return triples

    def stats(self) -> GraphStats:
        """Entity, relationship and distinct triple-id counts, and relationships per type."""
        by_relation = tuple((r["relation"], r["count"]) for r in self._read("count_by_relation"))
        return GraphStats(
            entities=self._read("count_entities")[0]["count"],
            relationships=self._read("count_relationships")[0]["count"],
            triple_ids=self._read("count_triple_ids")[0]["count"],
            by_relation=by_relation,
        )

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        """Triple ids that sit on more than one relationship (should never happen)."""
        if not self.schema.native:
            return []  # computed ids: one per distinct (subject, relation, object)
        return [
            DuplicateId(r["id"], r["copies"], tuple(tuple(e) for e in r["examples"]))
            for r in self._read("find_duplicate_triple_ids", limit=limit)
        ]

    # -- the schema (what a KB profile is derived from) -------------------------------------
    def relation_stats(self) -> list[RelationStats]:
        """Every relation type with its triple, subject and object counts."""
        return [
            RelationStats(r["relation"], r["count"], r["subjects"], r["objects"])
            for r in self._read("schema_relation_stats")
        ]

    def relation_types(self) -> list[str]:
        """The relation types the KB uses (cheap: the type tokens, each checked to be used)."""
        records = self._read("schema_relation_types")
        return sorted(records[0]["types"]) if records else []

    def sample_triples(self, relation: str, limit: int) -> list[Triple]:
        """Up to ``limit`` triples of ``relation``, lowest ids first (repeatable)."""
        return [
            self._triple(r) for r in self._read("schema_sample_triples", rel=relation, limit=limit)
        ]

    def far_end_edges(
        self, relation: str, outgoing: bool, limit: int
    ) -> tuple[int, dict[tuple[str, bool], int]]:
        """See :meth:`kgqa.graph.base.SchemaReader.far_end_edges`."""
        records = self._read(
            "schema_far_end_edges", rel=relation, outgoing=outgoing, limit=int(limit)
        )
        if not records:
            return 0, {}
        edges = {(rel, bool(out)): int(n) for rel, out, n in records[0]["edges"]}
        return int(records[0]["sampled"]), edges

    def reverse_edges(self, relation: str, limit: int) -> tuple[int, dict[str, int]]:
        """See :meth:`kgqa.graph.base.SchemaReader.reverse_edges`."""
        records = self._read("schema_reverse_edges", rel=relation, limit=int(limit))
        if not records:
            return 0, {}
        backs = {rel: int(n) for rel, n in records[0]["relations"] if rel is not None and n}
        return int(records[0]["sampled"]), backs

    # -- a graph kgqa did not load ----------------------------------------------------------
    def ensure_name_index(self) -> str:
        """The full-text index over entity names (suggestions, entity linking): for kgqa's own
        graph the load's; for a graph read through a mapping, the one schema object kgqa
        creates in it, over the mapped labels and name properties (every label but kgqa's own
        when the labels are ``*``). Returns its name."""
        if self.schema.native:
            self._write("create_entity_fulltext_index")
            return self.schema.fulltext_index
        labels = list(self.schema.labels)
        if not labels:
            labels = [
                label for label in self._read("schema_labels")[0]["labels"] if label != RUN_LABEL
            ]
        if not labels:
            raise KGQAError("the graph has no labelled nodes to index names of")
        # Index, label and property names are identifiers (quoted), never values.
        on = ", ".join(f"n.{quote(p)}" for p in self.schema.name_properties)
        text = (
            f"CREATE FULLTEXT INDEX {quote(MAPPED_FULLTEXT)} IF NOT EXISTS "
            f"FOR (n:{'|'.join(quote(label) for label in labels)}) ON EACH [{on}]"
        )
        with (
            graph_errors(self.database, "create the name index"),
            self._driver.session(database=self.database) as s,
        ):
            s.run(text).consume()
        return MAPPED_FULLTEXT

    def delete_kgqa_objects(self) -> tuple[int, bool]:
        """What kgqa wrote into a graph it did not load: its saved runs and its name index.
        Returns (runs deleted, whether the index was dropped); the KB itself is untouched."""
        deleted = int(self._write_one("runs_delete_all", {})["deleted"])
        with (
            graph_errors(self.database, "drop the name index"),
            self._driver.session(database=self.database) as s,
        ):
            summary = s.run(f"DROP INDEX {quote(MAPPED_FULLTEXT)} IF EXISTS").consume()
        return deleted, summary.counters.indexes_removed > 0

    # -- saved runs -------------------------------------------------------------------------
    def _write_one(self, name: str, params: Mapping[str, Any]) -> Any:
        """Run one query in a write transaction and return its single record."""

        def work(tx: neo4j.ManagedTransaction) -> Any:
            return tx.run(self.schema.adapt(query(name)), dict(params)).single(strict=True)

        with graph_errors(self.database, name), self._driver.session(database=self.database) as s:
            return s.execute_write(work)

    def save_run(
        self, answer: Answer, *, answer_names: Sequence[str] = (), run_id: str | None = None
    ) -> str:
        """Record ``answer`` as a ``:KgqaRun`` node and return its run id (a UUID string).

        The node holds the question, mode, answer text, creation time (UTC), model,
        parameters (a JSON string: Neo4j properties cannot be maps) and the grounded evidence
        triple ids (:func:`kgqa.graph.inspect.grounded_ids`). It is linked with
        ``[:KGQA_TOPIC]`` to the topic entities and with ``[:KGQA_ANSWER {rank}]`` to the
        answer entities, matched by exact name; names with no entity are kept on the node
        (``topic``, ``answer_names``) but not linked. The answer entities are
        ``answer.answer_entities``, or ``answer_names`` (e.g. the names on the answer line of
        a text answer) when it has none. One write transaction, parameters only."""
        from kgqa.graph.inspect import grounded_ids, triple_id_value

        run_id = str(uuid.UUID(run_id)) if run_id else str(uuid.uuid4())
        names = [e.name for e in answer.answer_entities] or list(answer_names)
        model = answer.parameters.get("model")
        params: dict[str, Any] = {
            "run_id": run_id,
            "question": answer.question,
            "mode": answer.mode,
            "answer": answer.text,
            "created": datetime.now(UTC).isoformat(),
            "model": None if model is None else str(model),
            "parameters": json.dumps(answer.parameters, sort_keys=True, default=str),
            "evidence_ids": [triple_id_value(i) for i in grounded_ids(answer)],
            "topic": list(dict.fromkeys(answer.entities_in)),
            "answers": [
                {"name": name, "rank": rank} for rank, name in enumerate(dict.fromkeys(names), 1)
            ],
        }
        return str(self._write_one("save_run", params)["run_id"])

    def list_runs(self, limit: int = 20) -> list[SavedRun]:
        """The ``limit`` most recent saved runs, newest first."""
        return [
            SavedRun(
                run_id=r["run_id"],
                created=str(r["created"]),
                question=r["question"],
                mode=r["mode"],
                answer=r["answer"],
                model=r["model"],
                topic=tuple(r["topic"] or ()),
                answers=tuple(r["answers"] or ()),
                evidence_count=r["evidence_count"],
                element_id=r["element_id"],
            )
            for r in self._read("runs_list", limit=int(limit))
        ]

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """Everything one saved run keeps (``parameters`` parsed back from JSON), or ``None``
        when there is none with this id. ``run_id`` must be a UUID (``ValueError``)."""
        records = self._read("runs_get", run_id=str(uuid.UUID(run_id)))
        if not records:
            return None
        run = dict(records[0])
        with contextlib.suppress(ValueError):  # else kept as the stored text
            run["parameters"] = json.loads(run["parameters"] or "{}")
        run["evidence_ids"] = list(run["evidence_ids"] or ())
        run["topic"] = list(run["topic"] or ())
        run["answers"] = list(run["answers"] or ())
        return run

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these saved runs (and only their ``KGQA_*`` links); returns how many were
        found."""
        ids = [str(uuid.UUID(i)) for i in run_ids]
        return int(self._write_one("runs_delete", {"run_ids": ids})["deleted"])
