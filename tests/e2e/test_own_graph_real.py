"""The newcomer's path with the real parts: an N-Triples file that is not about movies
(kgqa/data/sample_people.nt) loaded with `kgqa load` into the real Neo4j test server, its
profile derived with the real LLM naming its relations, questions asked with `kgqa ask` and
answered in graph mode by the real model: answers with their triples and the Browser Cypher,
nothing written by hand. Slow (minutes): the LLM runs on the CPU."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgqa.cli import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env(neo4j_settings, neo4j_driver, tmp_path_factory) -> dict[str, str]:
    from conftest import wipe_database

    wipe_database(neo4j_driver, neo4j_settings.neo4j.database)
    env = {
        "NEO4J_URI": neo4j_settings.neo4j.effective_uri,
        "NEO4J_USERNAME": neo4j_settings.neo4j.user,
        "NEO4J_PASSWORD": neo4j_settings.neo4j.password or "",
        "KGQA_DATA_DIR": str(tmp_path_factory.mktemp("people-data")),
    }
    kb = Path(str(resources.files("kgqa") / "data" / "sample_people.nt"))
    result = CliRunner().invoke(cli, ["load", str(kb)], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "41 triples" in result.output and "derived the KB profile" in result.output
    return env


def ask(env: dict[str, str], question: str, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["ask", question, *extra], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_profile_is_derived_from_the_graph_alone(env) -> None:
    out = CliRunner().invoke(cli, ["profile", "show", "--json"], env=env).output
    profile = json.loads(out[out.index("{") :])
    assert profile["source"] == "derived" and profile["namer"].startswith("llm:")
    relations = {r["relation"]: r for r in profile["relations"]}
    assert {"nationality", "spouse", "hasChild", "birthPlace"} <= set(relations)
    assert relations["spouse"]["inverse"] == "spouse"  # symmetric, found in the data


@pytest.mark.parametrize(
    "question,gold",
    [
        ("what is the nationality of [Ada Varga]?", {"Norland"}),
        ("who is [Cy Varga] married to?", {"Di Laine"}),
        ("what is the nationality of the spouse of [Ada Varga]?", {"Ostmark"}),
    ],
    ids=["1-hop", "1-hop-symmetric", "2-hop"],
)
def test_a_question_about_the_file_is_answered_with_its_evidence(env, question, gold) -> None:
    out = ask(env, question, "--json")
    data = json.loads(out[out.index("{") :])
    names = {e["name"] for e in data["answer_entities"]}
    assert names == gold, (data["answer_entities"], data["reasoning"])
    assert all(e["support"] and e["node_id"] for e in data["answer_entities"])
    assert data["parameters"]["profile"] == "derived"
    assert "MATCH p=()-[r]->()" in data["browser_cypher"]
    text = ask(env, question)
    assert "Answer entities" in text and "Cypher for Neo4j Browser" in text
