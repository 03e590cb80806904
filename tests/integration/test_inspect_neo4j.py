"""Browser inspection against the real Neo4j: the pasted query returns exactly the evidence
triples, and a saved run is one :KgqaRun with the right links that leaves the KB as it was."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import pytest

from kgqa.graph.expand import ExpandPolicy
from kgqa.graph.inspect import answer_cypher, browser_cypher, run_cypher
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.loaders.base import triple_id
from kgqa.loaders.metaqa import parse_lines
from kgqa.settings import Settings
from kgqa.types import Answer, AnswerEntity

if TYPE_CHECKING:
    import neo4j

pytestmark = pytest.mark.integration

KB = [
    b"The Crow|written_by|John Shirley",
    b"The Crow|has_genre|Action",
    b"The Crow|directed_by|Alex Proyas",
    b"Dark City|directed_by|Alex Proyas",
    b"Dark City|has_genre|Science Fiction",
    b"Dark City|written_by|Alex Proyas",
    b"I, Robot|directed_by|Alex Proyas",
    b"I, Robot|has_genre|Action",
]
WRITTEN = triple_id("The Crow", "written_by", "John Shirley")
GENRE = triple_id("The Crow", "has_genre", "Action")
INJECTION = "x'}) MATCH (n) DETACH DELETE n // \"; RETURN $question `x` {run_id: 1}"


@pytest.fixture
def db(clean_graph: neo4j.Driver, settings: Settings) -> tuple[neo4j.Driver, str]:
    parsed = parse_lines(KB)
    load_kb(Neo4jStore(clean_graph, settings.neo4j.database), parsed)
    return clean_graph, settings.neo4j.database


def kb_snapshot(driver: neo4j.Driver, database: str) -> tuple[int, set[tuple[str, str, str, int]]]:
    """The KB as kgqa defines it: :Entity nodes and the triple relationships between them."""
    entities, _, _ = driver.execute_query(
        "MATCH (e:Entity) RETURN count(e) AS n", database_=database
    )
    rows, _, _ = driver.execute_query(
        "MATCH (s:Entity)-[r]->(o:Entity) RETURN s.name AS s, type(r) AS t, o.name AS o, r.id AS id",
        database_=database,
    )
    return entities[0]["n"], {(r["s"], r["t"], r["o"], r["id"]) for r in rows}


def pasted(driver: neo4j.Driver, database: str, cypher: str) -> list[tuple[int, str, str, str]]:
    """Run a pasted query as Browser would (no parameters) and list the relationships it shows."""
    records, _, _ = driver.execute_query(cypher, database_=database)
    return sorted(
        (rel["id"], rel.type, rel.start_node["name"], rel.end_node["name"])
        for record in records
        for rel in record["p"].relationships
    )


def answer(question: str = "What genres are the movies written by [John Shirley] in?") -> Answer:
    return Answer(
        question=question,
        entities_in=("John Shirley",),
        mode="graph",
        text="Action",
        reasoning="movies written by John Shirley, then their genres",
        answer_entities=(
            AnswerEntity("Action", support=(WRITTEN, GENRE)),
            AnswerEntity("Not An Entity", support=()),
        ),
        evidence_ids=(WRITTEN, GENRE),
        parameters={"model": "qwen2.5-coder-1.5b", "hops": 2, "top_k": 30},
    )


def test_pasted_query_returns_exactly_the_evidence(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    # An id that is not in the graph is simply not found.
    shown = pasted(driver, database, browser_cypher([GENRE, WRITTEN, 12345]))
    assert shown == sorted(
        [
            (WRITTEN, "written_by", "The Crow", "John Shirley"),
            (GENRE, "has_genre", "The Crow", "Action"),
        ]
    )
    assert pasted(driver, database, answer_cypher(answer())) == shown


def test_capped_query_returns_the_first_ids(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    ids = [triple_id(*line.decode().split("|")) for line in KB]
    shown = pasted(driver, database, browser_cypher(ids, limit=3))
    assert sorted(i for i, *_ in shown) == sorted(ids[:3])


def test_save_run_links_the_run_and_leaves_the_kb_unchanged(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    before = kb_snapshot(driver, database)
    run_id = Neo4jStore(driver, database).save_run(answer())
    assert str(uuid.UUID(run_id)) == run_id
    assert kb_snapshot(driver, database) == before

    records, _, _ = driver.execute_query(
        "MATCH (run:KgqaRun) RETURN run, labels(run) AS labels", database_=database
    )
    assert len(records) == 1
    run = records[0]["run"]
    assert records[0]["labels"] == ["KgqaRun"]
    assert run["run_id"] == run_id
    assert run["question"] == answer().question
    assert (run["mode"], run["answer"], run["model"]) == ("graph", "Action", "qwen2.5-coder-1.5b")
    assert json.loads(run["parameters"]) == answer().parameters
    assert run["evidence_ids"] == [WRITTEN, GENRE]
    assert run["topic"] == ["John Shirley"]
    assert run["answer_names"] == ["Action", "Not An Entity"]
    assert run["created"] is not None

    links, _, _ = driver.execute_query(
        "MATCH (:KgqaRun)-[l]->(e) RETURN type(l) AS t, l.rank AS rank, labels(e) AS labels, "
        "e.name AS name ORDER BY t, rank",
        database_=database,
    )
    assert [(r["t"], r["rank"], r["labels"], r["name"]) for r in links] == [
        ("KGQA_ANSWER", 1, ["Entity"], "Action"),
        ("KGQA_TOPIC", None, ["Entity"], "John Shirley"),
    ]
    # Nothing else points at the run, and it has no relationship type of the KB.
    types, _, _ = driver.execute_query(
        "MATCH (:KgqaRun)-[l]-() RETURN collect(DISTINCT type(l)) AS t", database_=database
    )
    assert set(types[0]["t"]) == {"KGQA_ANSWER", "KGQA_TOPIC"}

    [saved] = Neo4jStore(driver, database).list_runs()
    assert (saved.run_id, saved.question, saved.topic) == (
        run_id,
        answer().question,
        ("John Shirley",),
    )
    assert saved.answers == ("Action", "Not An Entity") and saved.evidence_count == 2


def test_run_cypher_shows_the_run_its_entities_and_evidence(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    run_id = Neo4jStore(driver, database).save_run(answer())
    records, _, _ = driver.execute_query(run_cypher(run_id), database_=database)
    [record] = records
    assert record["run"]["run_id"] == run_id
    linked = sorted((p.relationships[0].type, p.end_node["name"]) for p in record["links"])
    assert linked == [("KGQA_ANSWER", "Action"), ("KGQA_TOPIC", "John Shirley")]
    assert sorted(p.relationships[0]["id"] for p in record["evidence"]) == sorted([WRITTEN, GENRE])


def test_injection_shaped_question_is_stored_verbatim(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    before = kb_snapshot(driver, database)
    run_id = Neo4jStore(driver, database).save_run(answer(INJECTION), answer_names=[INJECTION])
    [saved] = Neo4jStore(driver, database).list_runs()
    assert (saved.run_id, saved.question) == (run_id, INJECTION)
    assert kb_snapshot(driver, database) == before


def test_text_answer_names_link_when_there_are_no_answer_entities(
    db: tuple[neo4j.Driver, str],
) -> None:
    driver, database = db
    plain = Answer("q?", ("Alex Proyas",), "kgrag", "Dark City, I, Robot", evidence_ids=(GENRE,))
    Neo4jStore(driver, database).save_run(plain, answer_names=["Dark City", "I, Robot", "Gone"])
    links, _, _ = driver.execute_query(
        "MATCH (:KgqaRun)-[l:KGQA_ANSWER]->(e) RETURN l.rank AS rank, e.name AS name ORDER BY rank",
        database_=database,
    )
    assert [(r["rank"], r["name"]) for r in links] == [(1, "Dark City"), (2, "I, Robot")]


def test_list_runs_newest_first_and_delete_runs(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    before = kb_snapshot(driver, database)
    first = Neo4jStore(driver, database).save_run(answer("first?"))
    second = Neo4jStore(driver, database).save_run(answer("second?"))
    assert [r.run_id for r in Neo4jStore(driver, database).list_runs()] == [second, first]
    assert [r.run_id for r in Neo4jStore(driver, database).list_runs(limit=1)] == [second]
    assert Neo4jStore(driver, database).delete_runs([first, str(uuid.uuid4())]) == 1
    assert [r.run_id for r in Neo4jStore(driver, database).list_runs()] == [second]
    assert Neo4jStore(driver, database).delete_runs([second]) == 1
    assert Neo4jStore(driver, database).list_runs() == []
    assert kb_snapshot(driver, database) == before


# A saved run's KGQA_* links end on :Entity nodes: the KB's own queries (stats, candidates,
# graph-mode frontiers) must not see them.
def test_saved_run_does_not_change_kgqa_stats(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    store = Neo4jStore(driver, database)
    before = store.stats()
    Neo4jStore(driver, database).save_run(answer())
    assert store.stats() == before


def test_saved_run_does_not_change_retrieval(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    policy = ExpandPolicy(hops=2)
    before = (
        Neo4jStore(driver, database).candidates(["John Shirley"], policy).by_hop,
        Neo4jStore(driver, database).frontier_edges(["Action"]),
    )
    Neo4jStore(driver, database).save_run(answer())
    after = (
        Neo4jStore(driver, database).candidates(["John Shirley"], policy).by_hop,
        Neo4jStore(driver, database).frontier_edges(["Action"]),
    )
    assert after == before


# Degrees decide which nodes count as hubs: a saved run's links must not push an entity over
# the hub cap (Action has 2 KB relationships, The Crow 3; two runs that answered Action add two
# links to it, so it would count 4 and stop being expanded through).
def test_saved_run_does_not_change_hub_decisions(db: tuple[neo4j.Driver, str]) -> None:
    driver, database = db
    policy = ExpandPolicy(hops=3, hub_cap=3)
    before = Neo4jStore(driver, database).candidates(["John Shirley"], policy)
    Neo4jStore(driver, database).save_run(answer())
    Neo4jStore(driver, database).save_run(answer())
    after = Neo4jStore(driver, database).candidates(["John Shirley"], policy)
    assert (after.by_hop, after.skipped_hubs) == (before.by_hop, before.skipped_hubs)
