"""Loading into the real Neo4j: counts, reload, interrupted load, injection-shaped names,
bad input through the CLI, and the store's read methods."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from cli_run import run_cli

from kgqa.errors import KBFormatError
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.loaders.base import ParsedKB, RawTriple
from kgqa.loaders.metaqa import parse_lines, read
from kgqa.settings import Settings
from kgqa.types import Triple

if TYPE_CHECKING:
    import neo4j

pytestmark = pytest.mark.integration

SAMPLE = Path(str(resources.files("kgqa") / "data" / "sample_kb.txt"))


@pytest.fixture
def store(clean_graph: neo4j.Driver, settings: Settings) -> Neo4jStore:
    return Neo4jStore(clean_graph, settings.neo4j.database)


def graph_rows(driver: neo4j.Driver, database: str) -> set[tuple[str, str, str, int]]:
    records, _, _ = driver.execute_query(
        "MATCH (s)-[r]->(o) RETURN s.name AS s, type(r) AS r, o.name AS o, r.id AS id",
        database_=database,
    )
    return {(r["s"], r["r"], r["o"], r["id"]) for r in records}


def test_sample_kb_loads_with_exact_counts_and_reload_changes_nothing(store: Neo4jStore) -> None:
    parsed = read(SAMPLE)
    report = load_kb(store, parsed, batch_size=1000)
    assert report.triples_written == len(parsed.triples) == 3074
    assert report.entities_written == len(parsed.entities)
    first = store.stats()
    assert first.entities == len(parsed.entities)
    assert first.relationships == first.triple_ids == len(parsed.triples)
    assert dict(first.by_relation)["directed_by"] == sum(
        1 for t in parsed.triples if t.relation == "directed_by"
    )

    again = load_kb(store, parsed, batch_size=1000)
    assert (again.triples_written, again.entities_written) == (0, 0)
    assert store.stats() == first


def test_load_leaves_the_name_index_statistics_current(
    store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    # The name index sampled while the graph is empty (as Neo4j's background sampler may do
    # between creating the constraint and the first write) says "0 entries"; with that sample
    # the planner scans the whole index per name (seen as a flaky EXPLAIN test). load_kb
    # schedules a re-sample at its end. (The test server samples only on request: conftest.)
    def name_index() -> dict:
        records, _, _ = clean_graph.execute_query(
            "CALL db.stats.retrieve('GRAPH COUNTS') YIELD data RETURN data.indexes AS indexes",
            database_=settings.neo4j.database,
        )
        (index,) = [
            i
            for i in records[0]["indexes"]
            if i["indexType"] == "RANGE" and i.get("labels") == ["Entity"]
        ]
        return index

    store.ensure_schema()
    clean_graph.execute_query("CALL db.resampleIndex('entity_name')")  # also only scheduled
    parsed = read(SAMPLE)
    load_kb(store, parsed, batch_size=1000)
    # The re-sample load_kb scheduled: milliseconds; nothing else samples on the test server.
    deadline = time.monotonic() + 30
    while name_index()["updatesSinceEstimation"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert name_index()["totalSize"] == len(parsed.entities)
    assert name_index()["updatesSinceEstimation"] == 0
    from kgqa.graph.queries import query

    with clean_graph.session(database=settings.neo4j.database) as session:
        session.run("CALL db.clearQueryCaches()").consume()  # plans of earlier tests
        plan = session.run(
            "EXPLAIN " + query("path_step_out"), {"names": ["x"], "rel": "has_genre"}
        ).consume()
    assert "NodeUniqueIndexSeek" in str(plan.plan)


def test_interrupted_load_run_again_completes_without_duplicates(
    store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    full = read(SAMPLE)
    # What an interruption leaves: all entities of the first half and some of its triples.
    half = ParsedKB(path="half", triples=full.triples[: len(full.triples) // 2])
    load_kb(store, half, batch_size=500)
    report = load_kb(store, full, batch_size=500)
    assert report.triples_written == len(full.triples) - len(half.triples)
    stats = store.stats()
    assert stats.relationships == stats.triple_ids == len(full.triples)
    assert stats.entities == len(full.entities)
    assert store.duplicate_triple_ids() == []
    expected = {(t.subject, t.relation, t.object, t.id) for t in full.triples}
    assert graph_rows(clean_graph, settings.neo4j.database) == expected


INJECTION_LINES = [
    'a"}) DETACH DELETE (n) //|directed_by|victim',
    "victim|x`]->(m) DETACH DELETE m //|b",
    "b|has_tags|' OR 1=1 MATCH (n) DETACH DELETE n RETURN '",
    "c|written_by|$rows",
    "d|relation with spaces|{name: 'e'}",
]


def test_injection_shaped_names_are_stored_verbatim_and_the_graph_stays_intact(
    store: Neo4jStore, clean_graph: neo4j.Driver, settings: Settings
) -> None:
    load_kb(store, read(SAMPLE))
    before = store.stats()
    parsed = parse_lines("\n".join(INJECTION_LINES).encode().splitlines(), "evil")
    assert parsed.problems == []
    report = load_kb(store, parsed)
    assert report.triples_written == len(INJECTION_LINES)

    after = store.stats()
    assert after.relationships == before.relationships + len(INJECTION_LINES)
    rows = graph_rows(clean_graph, settings.neo4j.database)
    for t in parsed.triples:
        assert (t.subject, t.relation, t.object, t.id) in rows
    assert store.entity_exists('a"}) DETACH DELETE (n) //')
    relations = dict(after.by_relation)
    assert relations["x`]->(m) DETACH DELETE m //"] == 1
    assert relations["relation with spaces"] == 1


def test_a_collision_with_a_triple_already_in_the_graph_is_detected(store: Neo4jStore) -> None:
    first = parse_lines([b"a|r|b\n"], "first")
    load_kb(store, first)
    # A different triple that (as if by a hash collision) carries the same id.
    clash = ParsedKB(path="second", triples=[RawTriple(first.triples[0].id, "c", "r", "d", 1)])
    with pytest.raises(KBFormatError, match=r"(?s)triple ids collide.*\(a, r, b\).*\(c, r, d\)"):
        load_kb(store, clash)


def test_store_reads(store: Neo4jStore) -> None:
    parsed = read(SAMPLE)
    load_kb(store, parsed)
    some = parsed.triples[:3]
    wanted = [some[2].id, 12345, some[0].id]
    assert store.triples_by_ids(wanted) == [
        Triple(t.id, t.subject, t.relation, t.object) for t in (some[2], some[0])
    ]
    assert store.triples_by_ids([]) == []
    assert store.entity_exists(some[0].subject)
    assert not store.entity_exists(some[0].subject.lower() + " (no such entity)")
    store.clear()
    assert store.stats().entities == 0


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


def test_cli_load_and_stats(cli_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["load", str(SAMPLE), "--no-index", "--batch-size", "2000"], capsys)
    assert code == 0
    assert "3,074 triples (3,074 written, 0 already in the graph or repeated)" in out
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert code == 0
    stats = json.loads(out)
    assert stats["relationships"] == stats["triple_ids"] == 3074
    assert sum(stats["by_relation"].values()) == 3074


def test_cli_bad_input_writes_nothing_unless_skipped(
    cli_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"\xef\xbb\xbfa|r|b\r\nbad line\r\n\r\nc|r|\xff\r\nd|r|e\r\n")
    code, _, err = run_cli(["load", str(kb), "--no-index"], capsys)
    assert code == KBFormatError.exit_code
    assert "line 2: expected 3 fields" in err and "line 4: not valid UTF-8" in err
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert json.loads(out)["relationships"] == 0

    code, out, err = run_cli(["load", str(kb), "--no-index", "--on-error", "skip"], capsys)
    assert code == 0
    assert "2 lines rejected" in out and "line 2:" in err
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert json.loads(out)["relationships"] == 2


def test_cli_oversized_name_writes_nothing_and_skip_skips_only_that_line(
    cli_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 13: this file used to fail with a raw "Property value is too large to index"
    # after writing 20 orphan entities.
    kb = tmp_path / "long.txt"
    rows = [f"movie {i}|directed_by|person {i}" for i in range(30)]
    rows.insert(12, "movie x|directed_by|" + "x" * 200_000)
    kb.write_text("\n".join(rows) + "\n")
    code, out, err = run_cli(["load", "--no-index", "--batch-size", "5", str(kb)], capsys)
    assert code == KBFormatError.exit_code
    assert err.strip().splitlines() == [
        f"kgqa: error: {kb}: line 13: object is too long for Neo4j to index: 200,000 "
        "characters (200,000 bytes in UTF-8; the limit is 4,000); nothing was written (fix "
        "the line, or use --on-error skip to load the valid lines)"
    ]
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert json.loads(out)["entities"] == 0

    code, out, err = run_cli(
        ["load", "--no-index", "--batch-size", "5", "--on-error", "skip", str(kb)], capsys
    )
    assert code == 0
    assert "30 triples (30 written" in out and "1 line rejected" in out
    assert "line 13: object is too long" in err
    code, out, _ = run_cli(["stats", "--json"], capsys)
    assert (json.loads(out)["entities"], json.loads(out)["relationships"]) == (60, 30)


class FailingStore:
    """The real store, whose ``fail_at``-th batch fails as if Neo4j had gone away."""

    def __init__(self, store: Neo4jStore, fail_at: int):
        self.store, self.fail_at, self.batches = store, fail_at, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def write_batch(self, triples, known=None, check_names=True):  # type: ignore[no-untyped-def]
        self.batches += 1
        if self.batches == self.fail_at:
            from kgqa.errors import GraphUnavailable

            raise GraphUnavailable("lost the connection to Neo4j (merge_triples)")
        return self.store.write_batch(triples, known, check_names)


def test_a_load_stopped_mid_write_says_what_it_left_and_a_reload_completes_it(
    store: Neo4jStore,
) -> None:
    from kgqa.errors import GraphUnavailable
    from kgqa.loaders import open_kb

    with pytest.raises(GraphUnavailable) as info:
        load_kb(FailingStore(store, fail_at=4), open_kb(SAMPLE), batch_size=500)
    # Batch 1 is the planner's 10 rows, then 500 each: lines 1-1010 are in.
    message = str(info.value)
    assert "the load stopped at line 1,011" in message
    assert "the triples of the file's lines up to line 1,010 (of 3,074 triples)" in message
    assert message.endswith("Run the same `kgqa load` again to complete it (writes are idempotent)")
    assert store.stats().relationships == 1_010

    report = load_kb(store, open_kb(SAMPLE), batch_size=500)
    assert report.triples_written == 3_074 - 1_010
    stats = store.stats()
    assert stats.relationships == stats.triple_ids == 3_074
    assert store.duplicate_triple_ids() == []
