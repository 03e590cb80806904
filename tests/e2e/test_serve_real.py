"""``kgqa serve`` end to end with the real parts: the real command in its own process, the
sample KB in the real Neo4j test server embedded with the real MiniLM, graph-mode questions
answered by the real default LLM; asked plainly, streamed, and again from the answer cache.
Slow (about a minute: the server loads both models once)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from kgqa.cli import cli
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.loaders.metaqa import read

pytestmark = pytest.mark.slow

# From kgqa/data/sample_qa.tsv: the sample KB reproduces these gold answers exactly.
ONE_HOP = (
    "what movies did [Temuera Morrison] act in",
    {"once were warriors", "tracker", "river queen"},
)
TWO_HOP = ("what are the languages spoken in the films directed by [Joel Zwick]", {"greek"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.strip().splitlines()
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        if name:
            data = "\n".join(ln[6:] for ln in lines if ln.startswith("data: "))
            out.append((name, json.loads(data) if data else {}))
    return out


@pytest.fixture(scope="module")
def base(neo4j_settings, neo4j_driver, tmp_path_factory) -> Iterator[str]:
    """The sample KB loaded and indexed, and ``kgqa serve`` running on it: its URL."""
    from conftest import wipe_database

    database = neo4j_settings.neo4j.database
    wipe_database(neo4j_driver, database)
    sample = Path(str(resources.files("kgqa") / "data" / "sample_kb.txt"))
    load_kb(Neo4jStore(neo4j_driver, database), read(sample))
    data_dir = tmp_path_factory.mktemp("serve-data")
    env = {
        "NEO4J_URI": neo4j_settings.neo4j.effective_uri,
        "NEO4J_USERNAME": neo4j_settings.neo4j.user,
        "NEO4J_PASSWORD": neo4j_settings.neo4j.password or "",
        "KGQA_DATA_DIR": str(data_dir),
        "KGQA_ANSWER_CACHE_ENABLED": "true",
    }
    result = CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    port = _free_port()
    log = (data_dir / "serve.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("kgqa")), "serve", "--port", str(port)],
        env=os.environ | env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, (data_dir / "serve.log").read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "kgqa serve did not become healthy in 300 s"
            time.sleep(0.5)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0, (data_dir / "serve.log").read_text()


def test_health_reports_the_real_graph_models_and_index(base: str) -> None:
    health = httpx.get(f"{base}/healthz", timeout=30).json()
    assert health["status"] == "ok"
    assert health["neo4j"]["ok"] and health["models"]["ok"]
    assert health["index"]["problem"] is None


@pytest.mark.parametrize("question,gold", [ONE_HOP, TWO_HOP], ids=["1-hop", "2-hop"])
def test_the_served_answer_is_the_gold_entities_with_their_triples(base, question, gold) -> None:
    body = {"question": question, "mode": "graph"}
    r = httpx.post(f"{base}/v1/ask", json=body, timeout=300)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert {e["name"].lower() for e in doc["answer_entities"]} == gold, doc["answer_entities"]
    assert all(e["node_id"] and e["support"] for e in doc["answer_entities"])
    assert "MATCH" in doc["browser_cypher"]
    # The same question again comes from the answer cache, marked as a hit, the same answer.
    again = httpx.post(f"{base}/v1/ask", json=body, timeout=300).json()
    assert again["cache"]["hit"] is True
    assert again["answer_entities"] == doc["answer_entities"]


def test_a_streamed_question_shows_its_stages_before_the_answer(base: str) -> None:
    # A question not asked before in this module: not in the cache, so it runs its stages.
    question, gold = (
        "the films acted by [Sharon Tate] were released in which years",
        {"1967", "1968"},
    )
    body = {"question": question, "mode": "graph"}
    with httpx.stream(
        "POST",
        f"{base}/v1/ask",
        json=body,
        headers={"Accept": "text/event-stream"},
        timeout=300,
    ) as r:
        assert r.status_code == 200
        text = "".join(r.iter_text())
    got = events(text)
    names = [n for n, _ in got]
    assert names[-3:] == ["answer", "costs", "done"], names
    assert "decomposition" in names and "hop" in names
    assert names.index("hop") < names.index("answer")
    answer = dict(got)["answer"]
    assert answer["cache"]["hit"] is False
    assert {e["name"].lower() for e in answer["answer_entities"]} == gold
