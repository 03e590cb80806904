"""The csv, jsonl, nt and ttl readers into the real Neo4j: exact counts, what RDF terms
become in the graph, reloads, and refused files that leave the graph as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from cli_run import run_cli

from kgqa.errors import KBFormatError
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.loaders import open_kb
from kgqa.settings import Settings

if TYPE_CHECKING:
    import neo4j

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parent.parent / "fixtures" / "loaders"
EX = "http://example.org/"


@pytest.fixture
def store(clean_graph: neo4j.Driver, settings: Settings) -> Neo4jStore:
    return Neo4jStore(clean_graph, settings.neo4j.database)


def rows(driver: neo4j.Driver, database: str) -> set[tuple[object, ...]]:
    records, _, _ = driver.execute_query(
        "MATCH (s:Entity)-[r]->(o:Entity) "
        "RETURN s.name AS s, s.iri AS si, type(r) AS r, r.iri AS ri, o.name AS o, o.iri AS oi, "
        "r.id AS id",
        database_=database,
    )
    return {tuple(r.values()) for r in records}


@pytest.mark.parametrize("name", ["movies.nt", "movies.ttl"])
def test_rdf_file_loads_with_exact_counts_and_iris(
    name: str, store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    report = load_kb(store, open_kb(FIXTURES / name))
    assert (report.triples_in_file, report.triples_written, report.entities_written) == (9, 9, 8)
    assert report.labels == 6 and report.left_out == (("blank node", 2),)
    stats = store.stats()
    assert (stats.entities, stats.relationships, stats.triple_ids) == (8, 9, 9)
    graph = rows(clean_graph, settings.neo4j.database)
    heat, mann = f"{EX}film/Heat", f"{EX}person/Michael_Mann"
    assert any(
        r[:6] == ("Heat", heat, "directed_by", f"{EX}prop/directed_by", "Michael Mann", mann)
        for r in graph
    )
    # A literal is an entity without an iri; the literal "Heat" is the entity named Heat.
    assert any(r[4:6] == ("1995", None) for r in graph)
    assert any(r[2] == "http://schema.org/name" and r[4:6] == ("Heat", heat) for r in graph)
    # Two IRIs labelled "Paris" stay two entities.
    assert store.entity_exists(f"Paris <{EX}city/Paris>")
    assert store.entity_exists(f"Paris <{EX}person/Paris>")
    assert not store.entity_exists("Paris")

    again = load_kb(store, open_kb(FIXTURES / name))
    assert (again.triples_written, again.entities_written) == (0, 0)
    assert store.stats() == stats


def test_turtle_and_ntriples_of_one_graph_load_the_same(
    store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    load_kb(store, open_kb(FIXTURES / "movies.nt"))
    from_nt = rows(clean_graph, settings.neo4j.database)
    store.clear()
    load_kb(store, open_kb(FIXTURES / "movies.ttl"))
    assert rows(clean_graph, settings.neo4j.database) == from_nt


@pytest.mark.parametrize(
    ("name", "triples", "entities"), [("movies.csv", 4, 6), ("movies.jsonl", 3, 4)]
)
def test_csv_and_jsonl_load_with_exact_counts(
    name: str, triples: int, entities: int, store: Neo4jStore
) -> None:
    report = load_kb(store, open_kb(FIXTURES / name))
    assert report.triples_written == triples
    stats = store.stats()
    assert (stats.entities, stats.relationships, stats.triple_ids) == (entities, triples, triples)
    assert store.entity_exists("Crouching Tiger, Hidden Dragon") == (name == "movies.csv")


def test_a_label_already_in_the_graph_for_another_iri_is_refused(
    store: Neo4jStore, tmp_path: Path
) -> None:
    load_kb(store, open_kb(FIXTURES / "movies.nt"))
    before = store.stats()
    other = tmp_path / "other.nt"
    other.write_text(
        f'<{EX}film/Heat_2026> <http://www.w3.org/2000/01/rdf-schema#label> "Heat" .\n'
        f"<{EX}film/Heat_2026> <{EX}prop/directed_by> <{EX}person/Someone> .\n"
    )
    with pytest.raises(KBFormatError) as info:
        load_kb(store, open_kb(other))
    message = str(info.value)
    assert message.startswith(
        f"{other}: line 2: the name 'Heat' of <{EX}film/Heat_2026> already belongs to "
        f"<{EX}film/Heat> in the graph; two IRIs must not become one entity"
    )
    assert "no triple of this file was written" in message
    assert store.stats() == before


# -- through the CLI -------------------------------------------------------------------------
@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, clean_graph: neo4j.Driver
) -> Settings:
    s = settings.neo4j
    monkeypatch.setenv("NEO4J_URI", s.effective_uri)
    monkeypatch.setenv("NEO4J_USERNAME", s.user)
    monkeypatch.setenv("NEO4J_PASSWORD", s.password or "")
    monkeypatch.setenv("NEO4J_DATABASE", s.database)
    monkeypatch.setenv("KGQA_DATA_DIR", str(settings.data_dir))
    return settings


def test_cli_picks_the_reader_by_extension(
    cli_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["load", "--no-index", str(FIXTURES / "movies.nt")], capsys)
    assert code == 0
    assert "9 triples (9 written" in out and "6 labels" in out
    assert "2 triples with a blank node left out" in out
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert json.loads(out)["relationships"] == 9


BAD = {
    "malformed N-Triples": ("kb.nt", "<http://e/a> <http://e/r> <http://e/b> .\n<a> oops\n"),
    "Turtle syntax error": ("kb.ttl", "<http://e/a> <http://e/r> .\n"),
    "CSV with the wrong column count": ("kb.csv", "s,r,o\na,r,b\nc,r\n"),
    "JSONL with bad JSON": ("kb.jsonl", '{"subject": "a", "relation": "r", "object": "b"}\n{\n'),
}


@pytest.mark.parametrize("case", list(BAD))
def test_cli_refused_file_is_one_line_and_leaves_the_graph_unchanged(
    case: str, cli_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run_cli(["load", "--no-index", str(FIXTURES / "movies.csv")], capsys)
    assert code == 0
    _, before, _ = run_cli(["stats", "--json"], capsys)
    name, text = BAD[case]
    kb = tmp_path / name
    kb.write_text(text)
    code, out, err = run_cli(["load", "--no-index", str(kb)], capsys)
    assert code == KBFormatError.exit_code
    (line,) = err.strip().splitlines()
    assert line.startswith(f"kgqa: error: {kb}: line ") and "nothing was written" in line
    _, after, _ = run_cli(["stats", "--json"], capsys)
    assert after == before


def test_rdf_into_a_graph_with_entities_joins_their_names(
    store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    from kgqa.loaders.metaqa import parse_lines

    # A graph loaded from another format first: its "Heat" has no IRI yet.
    load_kb(store, parse_lines([b"Heat|directed_by|Michael Mann\n", b"Heat|has_tags|crime\n"]))
    report = load_kb(store, open_kb(FIXTURES / "movies.nt"))
    # (Heat, directed_by, Michael Mann) was there already; Heat and Michael Mann too.
    assert (report.triples_written, report.entities_written) == (8, 6)
    stats = store.stats()
    assert (stats.entities, stats.relationships) == (9, 10)
    records, _, _ = clean_graph.execute_query(
        "MATCH (e:Entity {name: 'Heat'}) RETURN e.iri AS iri", database_=settings.neo4j.database
    )
    assert records[0]["iri"] == f"{EX}film/Heat"
    again = load_kb(store, open_kb(FIXTURES / "movies.nt"))
    assert (again.triples_written, again.entities_written) == (0, 0)
