"""A graph that is already in Neo4j and that kgqa did not load: a small copy of Neo4j's Movies
example (Person {name}, Movie {title}, ACTED_IN {roles}, DIRECTED, WROTE), created here with
plain Cypher. `kgqa index` with neo4j.entity_labels / neo4j.name_properties makes it
answerable without re-importing, and writes into it nothing but its name index; the answer's
Browser Cypher shows its evidence; `kgqa reset` removes only what kgqa wrote."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from click.testing import CliRunner

from kgqa.cli import cli
from kgqa.factory import Factory
from kgqa.graph.schema import MAPPED_FULLTEXT, GraphSchema
from kgqa.graphmode.pipeline import GraphPipeline
from kgqa.graphmode.walk import GraphWalker
from kgqa.llm.fake import ScriptedLLM
from kgqa.settings import Settings

pytestmark = pytest.mark.integration

MOVIES = """
CREATE (matrix:Movie {title: 'The Matrix', released: 1999, tagline: 'Welcome to the Real World'})
CREATE (reloaded:Movie {title: 'The Matrix Reloaded', released: 2003})
CREATE (topgun:Movie {title: 'Top Gun', released: 1986})
CREATE (jerry:Movie {title: 'Jerry Maguire', released: 2000})
CREATE (keanu:Person {name: 'Keanu Reeves', born: 1964})
CREATE (carrie:Person {name: 'Carrie-Anne Moss', born: 1967})
CREATE (lana:Person {name: 'Lana Wachowski', born: 1965})
CREATE (lilly:Person {name: 'Lilly Wachowski', born: 1967})
CREATE (tom:Person {name: 'Tom Cruise', born: 1962})
CREATE (tony:Person {name: 'Tony Scott', born: 1944})
CREATE (cameron:Person {name: 'Cameron Crowe', born: 1957})
CREATE (keanu)-[:ACTED_IN {roles: ['Neo']}]->(matrix)
CREATE (carrie)-[:ACTED_IN {roles: ['Trinity']}]->(matrix)
CREATE (keanu)-[:ACTED_IN {roles: ['Neo']}]->(reloaded)
CREATE (lana)-[:DIRECTED]->(matrix)
CREATE (lilly)-[:DIRECTED]->(matrix)
CREATE (lana)-[:DIRECTED]->(reloaded)
CREATE (tom)-[:ACTED_IN {roles: ['Maverick']}]->(topgun)
CREATE (tony)-[:DIRECTED]->(topgun)
CREATE (tom)-[:ACTED_IN {roles: ['Jerry Maguire']}]->(jerry)
CREATE (cameron)-[:DIRECTED]->(jerry)
CREATE (cameron)-[:WROTE]->(jerry)
CREATE (tom)-[:FOLLOWS]->(keanu)
CREATE (:Studio {city: 'Burbank'})
"""


def snapshot(driver: Any, database: str) -> dict[str, Any]:
    """Everything in the database: nodes (labels, properties), relationships (type, ends,
    properties), indexes and constraints."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props",
        database_=database,
    )
    rels, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS t, elementId(b) AS b, "
        "properties(r) AS props",
        database_=database,
    )
    indexes, _, _ = driver.execute_query("SHOW INDEXES YIELD name RETURN name", database_=database)
    constraints, _, _ = driver.execute_query(
        "SHOW CONSTRAINTS YIELD name RETURN name", database_=database
    )
    return {
        "nodes": sorted(
            (r["id"], tuple(sorted(r["labels"])), repr(sorted(r["props"].items()))) for r in nodes
        ),
        "rels": sorted((r["a"], r["t"], r["b"], repr(sorted(r["props"].items()))) for r in rels),
        "indexes": sorted(r["name"] for r in indexes),
        "constraints": sorted(r["name"] for r in constraints),
    }


@pytest.fixture
def movies(clean_graph, settings: Settings) -> tuple[Settings, dict[str, str]]:
    database = settings.neo4j.database
    clean_graph.execute_query(MOVIES, database_=database)
    mapped = replace(
        settings,
        neo4j=replace(settings.neo4j, entity_labels="Person,Movie", name_properties="name,title"),
    )
    env = {
        "NEO4J_URI": settings.neo4j.effective_uri,
        "NEO4J_USERNAME": settings.neo4j.user,
        "NEO4J_PASSWORD": settings.neo4j.password or "",
        "KGQA_DATA_DIR": str(settings.data_dir),
        "KGQA_NEO4J_ENTITY_LABELS": "Person,Movie",
        "KGQA_NEO4J_NAME_PROPERTIES": "name,title",
        "KGQA_PROFILE_NAMER": "rules",
    }
    return mapped, env


def test_index_reads_the_graph_and_writes_only_its_name_index(movies, clean_graph) -> None:
    settings, env = movies
    database = settings.neo4j.database
    before = snapshot(clean_graph, database)
    result = CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "embedded 12 triples" in result.output and "derived the KB profile" in result.output
    after = snapshot(clean_graph, database)
    assert after["indexes"] == sorted([*before["indexes"], MAPPED_FULLTEXT])
    assert {k: v for k, v in after.items() if k != "indexes"} == {
        k: v for k, v in before.items() if k != "indexes"
    }
    stats = CliRunner().invoke(cli, ["stats", "--json"], env=env, catch_exceptions=False)
    assert '"entities": 11' in stats.output  # the Studio has no name: not an entity
    profile = CliRunner().invoke(cli, ["profile", "show"], env=env, catch_exceptions=False)
    assert "DIRECTED" in profile.output and "ACTED_IN" in profile.output


def test_graph_mode_answers_over_the_mapped_graph_with_its_evidence(movies, clean_graph) -> None:
    settings, env = movies
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    before = snapshot(clean_graph, settings.neo4j.database)
    from kgqa.service import ask

    class Scripted(Factory):
        """The real store and profile; a scripted LLM writes the step (no model here)."""

        def pipeline(self, mode: str = "graph") -> GraphPipeline:
            profile, graph = self.profile(), self.graph()
            words = profile.words("DIRECTED")
            llm = ScriptedLLM().enqueue([f"1. {words.subject} {words.verb} [The Matrix]\n<END>"])
            walker = GraphWalker(
                graph.frontier_edges,
                lambda text, groups: dict.fromkeys(groups, 0.0),
                canonical=profile.canonical,
            )
            return GraphPipeline(llm, walker, profile=profile, one_step="llm")

    with Scripted(settings) as f:
        assert f.graph().schema == GraphSchema(("Person", "Movie"), ("name", "title"))
        result = ask(f, "who directed [The Matrix]?")
    names = sorted(e.name for e in result.answer.answer_entities)
    assert names == ["Lana Wachowski", "Lilly Wachowski"]
    assert all(e.support and e.node_id for e in result.answer.answer_entities)
    # The pasted Browser query shows exactly the two DIRECTED triples.
    records, _, _ = clean_graph.execute_query(
        result.browser_cypher, database_=settings.neo4j.database
    )
    shown = sorted(
        (p.start_node["name"], p.relationships[0].type, p.end_node["title"])
        for p in (r["p"] for r in records)
    )
    assert shown == [
        ("Lana Wachowski", "DIRECTED", "The Matrix"),
        ("Lilly Wachowski", "DIRECTED", "The Matrix"),
    ]
    assert snapshot(clean_graph, settings.neo4j.database) == before  # answering writes nothing


def test_reset_removes_only_what_kgqa_wrote(movies, clean_graph) -> None:
    settings, env = movies
    database = settings.neo4j.database
    before = snapshot(clean_graph, database)
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    with Factory(settings) as f:
        from kgqa.types import Answer, AnswerEntity

        f.graph().save_run(
            Answer(
                "q",
                ("The Matrix",),
                "graph",
                "Lana Wachowski",
                answer_entities=(AnswerEntity("Lana Wachowski"),),
            )
        )
    result = CliRunner().invoke(cli, ["reset", "--yes"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "deleted 1 saved runs" in result.output and "untouched" in result.output
    assert snapshot(clean_graph, database) == before


def test_a_name_property_that_does_not_exist_is_one_line(movies) -> None:
    _, env = movies
    result = CliRunner().invoke(cli, ["index"], env={**env, "KGQA_NEO4J_NAME_PROPERTIES": "label"})
    assert result.exit_code != 0
    lines = [ln for ln in (result.output or "").splitlines() if ln.strip()]
    message = str(result.exception) if result.exception else result.output
    assert "label" in message and "entity_labels" in message, (lines, message)


def test_loading_into_a_mapped_graph_is_refused(movies, tmp_path, clean_graph) -> None:
    settings, env = movies
    before = snapshot(clean_graph, settings.neo4j.database)
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["load", str(kb)], env=env)
    assert result.exit_code != 0 and "its own schema" in str(result.exception)
    assert snapshot(clean_graph, settings.neo4j.database) == before
