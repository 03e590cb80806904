"""Every packaged Cypher file compiles on the real Neo4j (EXPLAIN: planned, never run), with
every parameter it names supplied, and without a warning (deprecations, missing parameters)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from kgqa.graph.queries import names, query
from kgqa.graph.schema import GraphSchema
from kgqa.settings import Settings

if TYPE_CHECKING:
    import neo4j

pytestmark = pytest.mark.integration

# $name, including the $($name) of a dynamic label or type; $(row.r) is an expression.
PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")
# "label / relationship type / property key does not exist": about the data in the database
# (empty in a fresh test server), not about the query, so they do not count as warnings here.
DATA_DEPENDENT = {"01N50", "01N51", "01N52"}


def test_there_are_queries_to_check() -> None:
    assert {"merge_entities", "merge_triples", "count_entities"} <= set(names())


# A graph kgqa did not load, read through its labels and names (kgqa.graph.schema): every
# query is rewritten for it, and the rewritten queries must compile too. The write queries of a
# load are not (kgqa loads only into its own schema).
MAPPED = GraphSchema(("Person", "Movie `x`"), ("name", "title"))
LOAD_ONLY = ("merge_", "create_entity_", "delete_all", "find_duplicate", "resample")


@pytest.mark.parametrize(
    "name,schema",
    [(n, None) for n in names()] + [(n, MAPPED) for n in names() if not n.startswith(LOAD_ONLY)],
    ids=[n for n in names()] + [f"mapped-{n}" for n in names() if not n.startswith(LOAD_ONLY)],
)
def test_cypher_file_compiles(
    name: str, schema: GraphSchema | None, neo4j_driver: neo4j.Driver, neo4j_settings: Settings
) -> None:
    from neo4j import NotificationMinimumSeverity

    text = query(name) if schema is None else schema.adapt(query(name))
    params = {p: None for p in PARAMETER.findall(text)}
    # An auto-commit session: files using CALL ... IN TRANSACTIONS cannot run in a managed one.
    with neo4j_driver.session(
        database=neo4j_settings.neo4j.database,
        notifications_min_severity=NotificationMinimumSeverity.WARNING,
    ) as session:
        summary = session.run("EXPLAIN " + text, params).consume()
    assert summary.plan is not None
    warnings = [
        s.status_description
        for s in summary.gql_status_objects
        if s.is_notification and s.gql_status not in DATA_DEPENDENT
    ]
    assert warnings == []
