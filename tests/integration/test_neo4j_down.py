"""Neo4j stopping in the middle of work, against a real server of this module's own (stopped
and restarted here): a question in progress, `kgqa ask` and `kgqa retrieve` give one clear line
and their exit code; an eval run stops at the first question that cannot be answered (no error
record for every remaining one) and resumes where it stopped once the server is back."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kgqa.errors import GraphUnavailable
from kgqa.eval.datasets import Question
from kgqa.eval.runner import EvalConfig, read_records, run_eval
from kgqa.factory import Factory
from kgqa.graph.load import load_kb
from kgqa.graph.server import LocalNeo4j, managed_password
from kgqa.graphmode.pipeline import GraphPipeline
from kgqa.graphmode.walk import GraphWalker
from kgqa.llm.fake import ScriptedLLM
from kgqa.loaders.base import ParsedKB, make_triple
from kgqa.profile.derive import derive_profile
from kgqa.settings import Neo4jSettings, Settings

pytestmark = pytest.mark.integration

FACTS = [
    ("Ada", "member_of", "Rowing Club"),
    ("Eve", "member_of", "Rowing Club"),
    ("Rowing Club", "based_in", "Port Avel"),
    ("Chess Club", "based_in", "Kessa"),
    ("Bo", "member_of", "Chess Club"),
]
FAST = {
    "db.tx_log.preallocate": "false",
    "internal.server.bolt.thread_pool_shutdown_wait_time": "0s",
    "internal.server.bolt.connection_shutdown_wait_time": "0s",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(neo4j_settings: Settings, tmp_path_factory) -> Iterator[tuple[LocalNeo4j, Settings]]:
    if not neo4j_settings.neo4j.managed:
        pytest.skip("NEO4J_URI is set: this test stops a server of its own, none is managed")
    home = tmp_path_factory.mktemp("down")
    neo = Neo4jSettings(
        bolt_port=_free_port(),
        http_port=_free_port(),
        heap="512m",
        pagecache="64m",
        data_dir=home / "neo4j",
        connect_timeout=3.0,
    )
    settings = replace(neo4j_settings, neo4j=neo, data_dir=home / "data")
    local = LocalNeo4j(settings, extra_config=FAST)
    local.start(tie_to_parent=True)
    settings = replace(settings, neo4j=replace(neo, password=managed_password(settings)))
    with Factory(settings) as f:
        parsed = ParsedKB(
            "clubs", [make_triple(s, r, o, i) for i, (s, r, o) in enumerate(FACTS, 1)]
        )
        load_kb(f.graph(), parsed)
    try:
        yield local, settings
    finally:
        local.stop()


@pytest.fixture
def up(server) -> tuple[LocalNeo4j, Settings]:
    local, settings = server
    if not local.status().running:
        local.start(tie_to_parent=True)
    return local, settings


def pipeline(factory: Factory, llm: ScriptedLLM) -> GraphPipeline:
    graph = factory.graph()
    profile = derive_profile(graph, "sha256:clubs")
    walker = GraphWalker(
        graph.frontier_edges,
        lambda text, groups: dict.fromkeys(groups, 0.0),
        canonical=profile.canonical,
    )
    return GraphPipeline(llm, walker, profile=profile)


def test_neo4j_stopping_in_the_middle_of_a_question_is_one_line(up) -> None:
    local, settings = up

    def stop_then_answer(_prompt: str) -> str:
        local.stop()  # the server goes away while the LLM is writing the steps
        return "1. member of entities of [Ada]\n2. based in entities of those member of entities\n<END>"

    with Factory(settings) as f:
        pipe = pipeline(f, ScriptedLLM(responses=[stop_then_answer]))
        with pytest.raises(GraphUnavailable) as e:
            pipe.answer("where is the club of [Ada] based", ["Ada"])
    message = str(e.value)
    assert "lost the connection to Neo4j" in message and "\n" not in message


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "where is the club of [Ada] based?", "--mode", "graph"],
        ["retrieve", "where is the club of [Ada] based?", "--hops", "1"],
        ["stats"],
    ],
    ids=["ask", "retrieve", "stats"],
)
def test_commands_against_a_stopped_server_print_one_line(server, args, tmp_path, capsys) -> None:
    local, settings = server
    local.stop()
    from kgqa.cli import main

    env = {
        "NEO4J_URI": settings.neo4j.effective_uri,
        "NEO4J_PASSWORD": settings.neo4j.password or "",
        "KGQA_DATA_DIR": str(tmp_path),
        "KGQA_NEO4J_CONNECT_TIMEOUT": "3",
    }
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    try:
        with pytest.raises(SystemExit) as exit_:
            main(args)
    finally:
        mp.undo()
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == GraphUnavailable.exit_code
    assert len(err) == 1 and err[0].startswith("kgqa: error: ") and "Neo4j" in err[0], err


def test_an_eval_run_stops_when_neo4j_goes_away_and_resumes(up, tmp_path: Path) -> None:
    local, settings = up
    questions = [
        Question(i, f"where is the club of [{n}] based", (n,), (c,), hops=2)
        for i, (n, c) in enumerate(
            [("Ada", "Port Avel"), ("Eve", "Port Avel"), ("Bo", "Kessa"), ("Ada", "Port Avel")], 1
        )
    ]
    steps = (
        "1. member of entities of [{0}]\n2. based in entities of those member of entities\n<END>"
    )
    config = EvalConfig("clubs/2-hop", 2, "dev", 4, 0, "graph", 3, 30, "scripted")
    answered: list[str] = []

    def respond(prompt: str) -> str:
        name = prompt.rsplit("[", 1)[1].split("]", 1)[0]
        answered.append(name)
        if len(answered) == 3:
            local.stop()  # Neo4j stops while the third question is being answered
        return steps.format(name)

    out = tmp_path / "run"
    with Factory(settings) as f:
        pipe = pipeline(f, ScriptedLLM(responses=[respond] * 8))
        with pytest.raises(GraphUnavailable):
            run_eval(pipe, questions, out, config, progress=False)
    records = read_records(out)
    assert [r["id"] for r in records] == [1, 2]  # no error record for the rest
    assert all(r["status"] == "ok" and r["metrics"]["hit1_entity"] for r in records)
    local.start(tie_to_parent=True)
    with Factory(settings) as f:
        pipe = pipeline(f, ScriptedLLM(responses=[respond] * 8))
        result = run_eval(pipe, questions, out, config, progress=False)
    assert (result.resumed, result.answered) == (2, 2)
    assert [r["status"] for r in read_records(out)] == ["ok"] * 4
    assert json.loads((out / "aggregate.json").read_text())["n"] == 4
