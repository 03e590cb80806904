"""`kgqa serve`'s app over the real Neo4j of the test session (the graph, index and profile
written by the real `kgqa load`), with the hashing embedder and a scripted LLM: the answer
document is the one `kgqa ask --json` prints (both validated against the one schema), the
stream carries each stage with its triples, retrieve matches `kgqa retrieve --json`, saved runs
come back by id, errors carry the CLI's line, and a cached answer is never served once the KB
changed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest
from cli_run import run_cli
from fastapi.testclient import TestClient

from kgqa.cache import AnswerCache
from kgqa.embed.hashing import HashingEmbedder
from kgqa.factory import Factory
from kgqa.llm.fake import ScriptedLLM
from kgqa.server.app import create_app
from kgqa.server.schema import AnswerDocument
from kgqa.server.state import ServerState
from kgqa.settings import Settings, load_settings

pytestmark = pytest.mark.integration

KB = [
    "Ada|spouse|Ben",
    "Ben|spouse|Ada",
    "Cy|spouse|Di",
    "Di|spouse|Cy",
    "Ada|nationality|Norland",
    "Ben|nationality|Ostmark",
    "Cy|nationality|Norland",
    "Norland|capital|Port Avel",
    "Ostmark|capital|Kessa",
]
SPOUSE = {"Ada": "Ben", "Ben": "Ada", "Cy": "Di", "Di": "Cy"}
Q = "who is the spouse of [Ada]?"


def respond(prompt: str) -> str:
    """Graph mode's steps for the [entity] of the prompt's last question (its spouses)."""
    asked = prompt.rsplit("[user]", 1)[-1]
    names = re.findall(r"\[([^\]]+)\]", asked)
    who = names[-1] if names else "Ada"
    if "first step, one of" in asked:
        return f"1. spouses of [{who}]\n<END>"
    return SPOUSE.get(who, "Ben")


def _llm(self: Factory) -> ScriptedLLM:
    if "llm" not in self._cache:
        self._cache["llm"] = ScriptedLLM(responses=[respond] * 200)
    return self._cache["llm"]


@pytest.fixture(scope="module")
def env(
    neo4j_settings: Settings, neo4j_driver: neo4j.Driver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """The KB above loaded through the real CLI (hashing embedder, rules namer), and the
    environment that points `kgqa` at it."""
    from conftest import wipe_database

    folder = tmp_path_factory.mktemp("api")
    s = neo4j_settings.neo4j
    values = {
        "NEO4J_URI": s.effective_uri,
        "NEO4J_USERNAME": s.user,
        "NEO4J_PASSWORD": s.password or "",
        "NEO4J_DATABASE": s.database,
        "KGQA_DATA_DIR": str(folder / "data"),
        "KGQA_PROFILE_NAMER": "rules",
        "KGQA_RETRIEVAL_HOPS": "1",
        "KGQA_ANSWER_CACHE_ENABLED": "false",
    }
    with pytest.MonkeyPatch.context() as mp:
        for var, value in values.items():
            mp.setenv(var, value)
        mp.setattr(Factory, "embedder", lambda self: HashingEmbedder(dim=64))
        mp.setattr(Factory, "llm", _llm)
        wipe_database(neo4j_driver, s.database)
        kb = folder / "kb.txt"
        kb.write_text("\n".join(KB) + "\n", encoding="utf-8")
        from kgqa.cli import main

        main(["load", str(kb)])  # exits only on an error
        yield values | {"kb": str(kb)}


@pytest.fixture
def server(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    for var, value in env.items():
        if var.isupper():
            monkeypatch.setenv(var, value)
    monkeypatch.setattr(Factory, "embedder", lambda self: HashingEmbedder(dim=64))
    monkeypatch.setattr(Factory, "llm", _llm)
    settings = load_settings()
    cache = AnswerCache(settings.answer_cache_dir)
    with Factory(settings) as factory:
        state = ServerState(factory, cache)
        state.warm_up()
        with TestClient(create_app(state)) as client:
            yield client
        state.close()


def without_times(doc: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in doc.items() if k not in ("timings", "cache")}
    out["stages"] = sorted(doc["timings"]["stages"])
    return out


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.strip().splitlines()
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        if name:
            data = "\n".join(ln[6:] for ln in lines if ln.startswith("data: "))
            out.append((name, json.loads(data) if data else {}))
    return out


def test_the_api_document_is_the_one_kgqa_ask_json_prints(
    server: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    r = server.post("/v1/ask", json={"question": Q, "cache": False})
    assert r.status_code == 200
    api = r.json()
    code, out, err = run_cli(["ask", Q, "--json"], capsys)
    assert code == 0, err
    cli = json.loads(out)
    AnswerDocument.model_validate(api)
    AnswerDocument.model_validate(cli)
    assert without_times(api) == without_times(cli)
    assert api["answer"] == "Ben" and api["answer_entities"][0]["node_id"].startswith("4:")
    # streamed: the step decomposition, the hop with its triple, then the same document
    r = server.post(
        "/v1/ask", json={"question": Q, "cache": False}, headers={"Accept": "text/event-stream"}
    )
    got = events(r.text)
    assert [n for n, _ in got] == [
        "queued",
        "entities",
        "decomposition",
        "hop",
        "evidence",
        "answer",
        "costs",
        "done",
    ]
    data = dict(got)
    assert data["hop"]["triples"][0]["text"] == "(Ada, spouse, Ben)"
    assert without_times(data["answer"]) == without_times(cli)


def test_errors_carry_the_line_the_cli_prints(
    server: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "who is the spouse of [ada]?"
    r = server.post("/v1/ask", json={"question": question})
    code, _out, err = run_cli(["ask", question], capsys)
    assert r.status_code == 404 and code == 5
    assert err.strip().splitlines()[-1] == f"kgqa: error: {r.json()['error']['message']}"
    assert r.json()["error"]["suggestions"][0] == "Ada"


def test_retrieve_matches_the_cli_and_stats_and_health_read_the_real_graph(
    server: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    r = server.get("/v1/retrieve", params={"question": Q, "top_k": 3})
    assert r.status_code == 200
    code, out, err = run_cli(["retrieve", Q, "--top-k", "3", "--json"], capsys)
    assert code == 0, err
    cli = json.loads(out)
    assert {k: v for k, v in r.json().items() if k != "seconds"} == {
        k: v for k, v in cli.items() if k != "seconds"
    }
    stats = server.get("/v1/stats").json()
    # (a test below adds a triple: at least the KB's, and the index holds them all)
    assert stats["graph"]["triple_ids"] == stats["index"]["vectors"] >= len(KB)
    health = server.get("/healthz")
    assert health.status_code == 200, health.json()
    assert health.json()["neo4j"]["ok"] and health.json()["index"]["problem"] is None


def test_a_saved_run_comes_back_by_id(server: TestClient) -> None:
    r = server.post("/v1/ask", json={"question": Q, "save": True})
    assert r.status_code == 200 and "cache" not in r.json()
    run_id = r.json()["saved_run"]["run_id"]
    run = server.get(f"/v1/runs/{run_id}")
    assert run.status_code == 200
    got = run.json()
    assert (got["run_id"], got["question"], got["answers"]) == (run_id, Q, ["Ben"])
    assert got["topic"] == ["Ada"] and got["parameters"]["mode"] == "graph"
    assert run_id in got["browser_cypher"] and got["evidence_ids"]
    missing = server.get("/v1/runs/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFound"
    assert server.get("/v1/runs/not-a-uuid").status_code == 404


def test_a_changed_kb_is_never_served_from_the_cache(
    server: TestClient, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    question = "who is the spouse of [Cy]?"
    first = server.post("/v1/ask", json={"question": question}).json()
    assert first["cache"]["hit"] is False and first["answer"] == "Di"
    again = server.post("/v1/ask", json={"question": question}).json()
    assert again["cache"]["hit"] is True and again["cache"]["key"] == first["cache"]["key"]
    # another triple: `kgqa load` writes the index and the profile with a new fingerprint
    more = Path(env["kb"]).with_name("more.txt")
    more.write_text("Di|nationality|Ostmark\n", encoding="utf-8")
    code, _out, err = run_cli(["load", str(more)], capsys)
    assert code == 0, err
    after = server.post("/v1/ask", json={"question": question}).json()
    assert after["cache"]["hit"] is False and after["cache"]["key"] != first["cache"]["key"]
