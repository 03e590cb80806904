"""`kgqa serve`'s app against the real factory over the people KB in memory, the hashing
embedder and a scripted LLM (no Neo4j, no model): the answer document, the event stream, every
error as JSON with its status, validation naming the field, the token, the body limit, the
queue (a real uvicorn on a loopback port, requests in parallel), the time limit, CORS."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from people_kb import store

from kgqa.cache import AnswerCache
from kgqa.embed.hashing import HashingEmbedder
from kgqa.errors import AmbiguousEntity, GraphUnavailable, KGQAError
from kgqa.factory import Factory
from kgqa.llm.fake import ScriptedLLM
from kgqa.server.app import create_app
from kgqa.server.errors import STATUS, status_of
from kgqa.server.schema import AnswerDocument
from kgqa.server.state import ServerState
from kgqa.settings import Settings

pytestmark = pytest.mark.unit

Q = "who is the spouse of [Ada]?"


SPOUSE = {"Ada": "Ben", "Ben": "Ada", "Cy": "Di", "Di": "Cy"}


def respond(prompt: str) -> str:
    """What a small model writes for each of the pipelines' prompts: about the [entity] of
    the prompt's last question, its spouse."""
    asked = prompt.rsplit("[user]", 1)[-1]
    names = re.findall(r"\[([^\]]+)\]", asked)
    who = names[-1] if names else "Ada"
    if "first step, one of" in asked:  # graph mode's steps
        return f"1. spouses of [{who}]\n<END>"
    if "You split a question" in prompt:
        return f"Reasoning: one fact.\nSub-questions:\n1. who is married to [{who}]?\n<END>"
    if "You rewrite a follow-up" in prompt:
        return f"who is married to [{who}]?"
    if "You combine the answers" in prompt:
        return f"{SPOUSE.get(who, 'Ben')}\nExplanation: the graph says so."
    return SPOUSE.get(who, "Ben")


class MemoryFactory(Factory):
    """The real factory, its graph the people KB in memory (it has no driver), its embedder
    the hashing one and its LLM scripted."""

    def __init__(self, settings: Settings, llm: Any = None, graph: Any = None) -> None:
        super().__init__(settings)
        self.store = graph if graph is not None else store()
        self._cache["llm"] = llm or ScriptedLLM(responses=[respond] * 1000)
        self._cache["embedder"] = HashingEmbedder(dim=64)

    def graph(self) -> Any:
        return self.store

    def driver(self) -> Any:
        return None


def _settings(settings: Settings, **server: object) -> Settings:
    return settings.with_overrides(
        {"profile.namer": "rules", "retrieval.hops": 1}
        | {f"server.{k}": v for k, v in server.items()}
    )


def _index(factory: Factory) -> None:
    from kgqa.index.sync import sync_index

    sync_index(factory.settings.index_dir, factory.embedder(), factory.graph().all_triples(), False)


def make_state(
    settings: Settings, *, cache: AnswerCache | None = None, llm: Any = None, graph: Any = None
) -> ServerState:
    factory = MemoryFactory(settings, llm, graph)
    _index(factory)
    state = ServerState(factory, cache)
    state.warm_up()
    return state


@pytest.fixture
def state(settings: Settings) -> ServerState:
    return make_state(_settings(settings))


@pytest.fixture
def client(state: ServerState) -> Iterator[TestClient]:
    with TestClient(create_app(state)) as c:
        yield c


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Server-sent events: (name, data) in order."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.strip().splitlines()
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        data = "\n".join(ln[6:] for ln in lines if ln.startswith("data: "))
        if name:
            out.append((name, json.loads(data) if data else {}))
    return out


def without_times(doc: dict[str, Any]) -> dict[str, Any]:
    """The document less what varies between two runs of the same answer (seconds)."""
    out = {k: v for k, v in doc.items() if k != "timings"}
    out["stages"] = sorted(doc["timings"]["stages"])
    return out


def test_ask_returns_the_service_answer_document(client: TestClient, state: ServerState) -> None:
    from kgqa.service import ask

    r = client.post("/v1/ask", json={"question": Q})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    AnswerDocument.model_validate(doc)
    assert doc["answer"] == "Ben" and doc["answer_entities"][0]["support"]
    direct = json.loads(json.dumps(ask(state.factory, Q).to_json()))
    assert without_times(doc) == without_times(direct)
    # every mode: the observed pipelines the server keeps answer as a fresh plain one does
    for mode in ("kgrag", "kaping", "qd", "llm"):
        r = client.post("/v1/ask", json={"question": Q, "mode": mode})
        assert r.status_code == 200, r.text
        AnswerDocument.model_validate(r.json())
        direct = json.loads(json.dumps(ask(state.factory, Q, mode=mode).to_json()))
        assert without_times(r.json()) == without_times(direct)
        checked = client.post("/v1/ask", json={"question": Q, "mode": mode, "check": True})
        AnswerDocument.model_validate(checked.json())
        assert "claims" in checked.json()["check"]


def test_hops_and_top_k_per_request_share_the_loaded_models(
    client: TestClient, state: ServerState
) -> None:
    r = client.post("/v1/ask", json={"question": Q, "mode": "kgrag", "hops": 2, "top_k": 3})
    assert r.status_code == 200, r.text
    p = r.json()["parameters"]
    assert (p["hops"], p["top_k"]) == (2, 3)
    assert all(len(s["triples"]) <= 3 for s in r.json()["sub_questions"])
    factory, _ = state.pipelines(2, 3)
    assert factory is not state.factory and factory.llm() is state.factory.llm()
    assert factory.embedder() is state.factory.embedder()
    default = client.post("/v1/ask", json={"question": Q, "mode": "kgrag"}).json()["parameters"]
    assert (default["hops"], default["top_k"]) == (1, 30)


def test_the_stream_reports_each_stage_as_it_ends_then_the_same_answer(
    client: TestClient,
) -> None:
    plain = client.post("/v1/ask", json={"question": Q, "mode": "kgrag"}).json()
    r = client.post(
        "/v1/ask", json={"question": Q, "mode": "kgrag"}, headers={"Accept": "text/event-stream"}
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = events(r.text)
    names = [n for n, _ in got]
    assert names == [
        "queued",
        "entities",
        "decomposition",
        "candidates",
        "reformulation",
        "sub_answer",
        "synthesis",
        "evidence",
        "answer",
        "costs",
        "done",
    ]
    data = dict(got)
    assert data["decomposition"]["sub_questions"] == ["who is married to [Ada]?"]
    assert data["decomposition"]["costs"][0]["stage"] == "decompose"
    assert data["candidates"]["count"] > 0
    sub = data["sub_answer"]
    assert sub["answer"] == "Ben" and any(t["text"] == "(Ada, spouse, Ben)" for t in sub["triples"])
    assert without_times(data["answer"]) == without_times(plain)
    assert data["costs"] == data["answer"]["timings"]
    # graph mode: the step decomposition, then each hop with its triples
    r = client.post("/v1/ask", json={"question": Q}, headers={"Accept": "text/event-stream"})
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
    hop = dict(got)["hop"]
    assert hop["step"] == "-[spouse]->" and hop["entities"] == ["Ben"]
    (triple,) = hop["triples"]
    assert triple["text"] == "(Ada, spouse, Ben)" and triple["key"] == str(triple["id"])
    assert (triple["subject"], triple["relation"], triple["object"]) == ("Ada", "spouse", "Ben")


def test_an_error_in_the_stream_is_an_error_event(client: TestClient) -> None:
    r = client.post(
        "/v1/ask",
        json={"question": "who is married to [ada]?"},
        headers={"Accept": "text/event-stream"},
    )
    # the entity is checked before anything is queued: a plain JSON 404
    assert r.status_code == 404 and r.json()["error"]["suggestions"] == ["Ada"]


def test_kgqa_errors_are_json_with_the_cli_line_and_a_fitting_status(
    settings: Settings,
) -> None:
    class Graph:
        """The people KB, until it is told to fail."""

        def __init__(self) -> None:
            self.kb = store()
            self.fail: KGQAError | None = None

        def __getattr__(self, name: str) -> Any:
            if self.fail is not None:
                raise self.fail
            return getattr(self.kb, name)

    graph = Graph()
    state = make_state(_settings(settings), graph=graph)
    with TestClient(create_app(state)) as c:
        r = c.post("/v1/ask", json={"question": "who is married to [ada]?"})
        assert r.status_code == 404
        assert r.json()["error"] == {
            "type": "EntityNotFound",
            "message": "entity 'ada' is not in the graph; did you mean: 'Ada'",
            "exit_code": 5,
            "suggestions": ["Ada"],
        }
        graph.fail = AmbiguousEntity("'Ad' matches several entities: Ada, Adam; name one")
        r = c.post("/v1/ask", json={"question": "who is married to Ad?"})
        assert r.status_code == 409 and r.json()["error"]["message"].startswith("'Ad' matches")
        graph.fail = GraphUnavailable("Neo4j is not reachable at bolt://127.0.0.1:1; check X")
        r = c.post("/v1/ask", json={"question": Q})
        assert r.status_code == 503
        assert (
            r.json()["error"]["message"] == "Neo4j is not reachable at bolt://127.0.0.1:1; check X"
        )
        health = c.get("/healthz")
        assert health.status_code == 503 and health.json()["neo4j"]["ok"] is False
        assert c.get("/v1/stats").status_code == 503
        # Neo4j back: the same server answers again
        graph.fail = None
        assert c.post("/v1/ask", json={"question": Q}).status_code == 200
        assert c.get("/healthz").status_code == 200
        # a question that cannot be asked as written
        r = c.post("/v1/ask", json={"question": "who is married to her?", "mode": "kaping"})
        assert r.status_code in (404, 422) and "error" in r.json()


def test_every_error_class_has_a_status_and_a_plain_one_is_422() -> None:
    from kgqa import errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, KGQAError)]
    mapped = {c for c, _ in STATUS}
    assert set(classes) - {KGQAError} <= mapped
    assert status_of(KGQAError("no topic entity")) == 422
    assert status_of(errors.EntityNotFound("x")) == 404
    assert status_of(errors.AmbiguousEntity("x")) == 409
    assert status_of(errors.GraphUnavailable("x")) == 503


def test_a_bug_is_a_500_that_names_it_without_a_traceback(settings: Settings) -> None:
    def broken(prompt: str) -> str:
        raise ZeroDivisionError("secret internals")

    state = make_state(_settings(settings), llm=ScriptedLLM(responses=[broken] * 10))
    with TestClient(create_app(state), raise_server_exceptions=False) as c:
        r = c.post("/v1/ask", json={"question": Q})
        assert r.status_code == 500
        message = r.json()["error"]["message"]
        assert "bug in kgqa" in message and "ZeroDivisionError" in message
        assert "Traceback" not in r.text and "secret internals" not in r.text
        r = c.post("/v1/ask", json={"question": Q}, headers={"Accept": "text/event-stream"})
        (name, data), *_ = [e for e in events(r.text) if e[0] == "error"]
        assert data["status"] == 500 and "Traceback" not in r.text


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({}, "question", "required"),
        ({"question": "  "}, "question", "blank"),
        ({"question": Q, "hops": 7}, "hops", "less than or equal to 3"),
        ({"question": Q, "top_k": 0}, "top_k", "greater than or equal to 1"),
        ({"question": Q, "mode": "nope"}, "mode", "one of: kgrag, kaping"),
        ({"question": Q, "entitys": ["Ada"]}, "entitys", "Extra inputs"),
        ({"question": Q, "entities": "Ada"}, "entities", "list"),
        ({"question": "x" * 2001}, "question", "at most 2000"),
    ],
)
def test_validation_errors_are_422_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str, words: str
) -> None:
    r = client.post("/v1/ask", json=body)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["type"] == "ValidationError" and err["fields"][0]["field"] == field
    assert words in err["message"] and err["message"].startswith(f"{field}: ")


def test_a_body_that_is_not_json_is_422(client: TestClient) -> None:
    r = client.post("/v1/ask", content=b"{nope", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError"


def test_the_bearer_token_is_required_when_set(settings: Settings) -> None:
    token = "s3cret-token-value"
    state = make_state(_settings(settings, api_token=token))
    with TestClient(create_app(state)) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            r = c.post("/v1/ask", json={"question": Q}, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert token not in r.text and r.json()["error"]["type"] == "Unauthorized"
        assert c.get("/v1/stats").status_code == 401
        assert c.get("/openapi.json").status_code == 401
        assert c.get("/healthz").status_code == 200  # a probe needs no token
        good = {"Authorization": f"Bearer {token}"}
        assert c.post("/v1/ask", json={"question": Q}, headers=good).status_code == 200
    # no token set: nothing asked for
    with TestClient(create_app(make_state(_settings(settings)))) as c:
        assert c.get("/v1/stats").status_code == 200
    from kgqa.settings import as_dict, load_settings

    loaded = load_settings(env={"KGQA_API_TOKEN": token})
    assert loaded.server.api_token == token
    assert token not in repr(loaded) and token not in json.dumps(as_dict(loaded))


def test_a_body_over_the_limit_is_413_declared_or_chunked(settings: Settings) -> None:
    state = make_state(_settings(settings, max_body_bytes=200))
    with TestClient(create_app(state)) as c:
        big = {"question": Q + " " * 300}
        r = c.post("/v1/ask", json=big)
        assert r.status_code == 413 and "server.max_body_bytes (200 bytes)" in r.text

        def chunks() -> Iterator[bytes]:
            yield b'{"question": "'
            yield b"x" * 300
            yield b'"}'

        r = c.post("/v1/ask", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413

        def small() -> Iterator[bytes]:
            yield json.dumps({"question": Q}).encode()

        r = c.post("/v1/ask", content=small(), headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text


class Gate:
    """An LLM response that waits until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()

    def __call__(self, prompt: str) -> str:
        self.entered.set()
        assert self.open.wait(10), "the test never opened the gate"
        return respond(prompt)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def serve() -> Iterator[Callable[[ServerState], str]]:
    """Start the app under a real uvicorn on a free loopback port; its base URL."""
    import uvicorn

    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(state: ServerState) -> str:
        port = _free_port()
        config = uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)


def test_a_full_queue_is_503_with_retry_after_and_cache_hits_skip_it(
    settings: Settings, serve: Callable[[ServerState], str], tmp_path: Path
) -> None:
    gate = Gate()
    # one response per call: the first question waits at the gate, the rest pass
    llm = ScriptedLLM(responses=[respond, gate] + [respond] * 50)
    cache = AnswerCache(tmp_path / "cache")
    state = make_state(_settings(settings, queue_size=1), cache=cache, llm=llm)
    base = serve(state)
    with httpx.Client(base_url=base, timeout=20) as c:
        cached = c.post("/v1/ask", json={"question": Q})  # the LLM's first response
        assert cached.json()["cache"]["hit"] is False
        results: dict[str, httpx.Response] = {}

        def ask(name: str, question: str) -> None:
            results[name] = c.post("/v1/ask", json={"question": question})

        running = threading.Thread(target=ask, args=("running", "who is married to [Ben]?"))
        running.start()
        assert gate.entered.wait(10)
        waiting = threading.Thread(target=ask, args=("waiting", "who is married to [Cy]?"))
        waiting.start()
        deadline = time.monotonic() + 10
        while state.runner.pending < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        full = c.post("/v1/ask", json={"question": "who is married to [Di]?"})
        assert full.status_code == 503 and int(full.headers["retry-after"]) >= 1
        assert full.json()["error"]["type"] == "QueueFull"
        assert "server.queue_size 1" in full.json()["error"]["message"]
        # an answer in the cache needs no LLM: served while the worker is busy
        start = time.monotonic()
        hit = c.post("/v1/ask", json={"question": Q})
        assert hit.status_code == 200 and hit.json()["cache"]["hit"] is True
        assert time.monotonic() - start < 2
        gate.open.set()
        running.join(10)
        waiting.join(10)
        assert results["running"].status_code == 200 and results["waiting"].status_code == 200
        assert results["running"].json()["answer"] == "Ada"
        assert results["waiting"].json()["answer"] == "Di"
        assert state.runner.pending == 0


def test_a_request_past_its_time_limit_is_504_and_the_worker_goes_on(
    settings: Settings, serve: Callable[[ServerState], str]
) -> None:
    gate = Gate()
    llm = ScriptedLLM(responses=[respond, gate] + [respond] * 20)
    state = make_state(_settings(settings, request_timeout=0.5), llm=llm)
    state.runner.timeout = 0.5
    base = serve(state)
    with httpx.Client(base_url=base, timeout=20) as c:
        assert c.post("/v1/ask", json={"question": Q}).status_code == 200
        start = time.monotonic()
        slow = c.post("/v1/ask", json={"question": "who is married to [Ben]?", "save": True})
        took = time.monotonic() - start
        assert slow.status_code == 504 and 0.4 < took < 5
        assert "server.request_timeout (0.5 s" in slow.json()["error"]["message"]
        gate.open.set()  # the LLM call returns; the request stops at its next stage
        deadline = time.monotonic() + 10
        while state.runner.pending:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert state.factory.graph().list_runs() == []  # nothing done after the deadline
        again = c.post("/v1/ask", json={"question": "who is married to [Cy]?"})
        assert again.status_code == 200 and again.json()["answer"] == "Di"
        # the stream says it too, after the stages it saw
        gate = Gate()
        llm.responses.insert(0, gate)
        r = c.post(
            "/v1/ask",
            json={"question": "who is married to [Di]?"},
            headers={"Accept": "text/event-stream"},
        )
        gate.open.set()
        got = [(n, d.get("status")) for n, d in events(r.text)]
        assert got == [("queued", None), ("entities", None), ("error", 504)]


def test_retrieve_stats_health_and_openapi(client: TestClient, state: ServerState) -> None:
    r = client.get("/v1/retrieve", params={"question": Q, "hops": 1, "top_k": 2})
    assert r.status_code == 200
    doc = r.json()
    assert doc["entities"] == ["Ada"] and len(doc["top_k"]) == 2
    assert set(doc) == {
        "question",
        "entities",
        "hops",
        "candidates_per_hop",
        "truncated",
        "skipped_hubs",
        "seconds",
        "top_k",
    }
    r = client.get("/v1/retrieve", params=[("question", "spouse?"), ("entity", "ada")])
    assert r.status_code == 404
    assert client.get("/v1/retrieve", params={"question": "q", "hops": 9}).status_code == 422
    stats = client.get("/v1/stats").json()
    assert stats["graph"]["triple_ids"] == 17 and stats["index"]["problem"] is None
    assert stats["queue"]["pending"] == 0 and stats["models"]["llm"] == "scripted"
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    spec = client.get("/openapi.json").json()
    assert {"/v1/ask", "/v1/retrieve", "/v1/stats", "/v1/runs/{run_id}", "/healthz"} <= set(
        spec["paths"]
    )
    assert "AskRequest" in spec["components"]["schemas"]
    assert "AnswerDocument" in spec["components"]["schemas"]
    # no Swagger page: it would load its scripts from a CDN
    assert client.get("/docs").status_code == 404
    assert client.get("/nowhere").json()["error"]["type"] == "HTTPError"


def test_health_says_what_is_wrong_with_the_index(client: TestClient, state: ServerState) -> None:
    manifest = state.settings.index_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(data | {"count": 3}))
    r = client.get("/healthz")
    assert r.status_code == 503
    assert "the index holds 3 vectors, the graph 17 triples" in r.json()["index"]["problem"]
    manifest.write_text(json.dumps(data | {"kb_fingerprint": "sha256:other"}))
    assert "another KB" in client.get("/healthz").json()["index"]["problem"]


def test_cors_is_off_unless_origins_are_configured(settings: Settings) -> None:
    origin = {"Origin": "http://page.example"}
    with TestClient(create_app(make_state(_settings(settings)))) as c:
        r = c.get("/healthz", headers=origin)
        assert "access-control-allow-origin" not in r.headers
    state = make_state(_settings(settings, cors_origins="http://page.example"))
    with TestClient(create_app(state)) as c:
        r = c.get("/healthz", headers=origin)
        assert r.headers["access-control-allow-origin"] == "http://page.example"
        r = c.get("/healthz", headers={"Origin": "http://other.example"})
        assert "access-control-allow-origin" not in r.headers


def test_the_serve_command_binds_loopback_by_default_and_has_help() -> None:
    from click.testing import CliRunner

    from kgqa.cli import cli

    r = CliRunner().invoke(cli, ["serve", "--help"])
    assert r.exit_code == 0 and "--host" in r.output and "KGQA_API_TOKEN" in r.output
    assert Settings().server.host == "127.0.0.1" and Settings().server.port == 8000


def test_serve_without_neo4j_stops_at_start_up_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kgqa.cli import main

    monkeypatch.setenv("NEO4J_URI", f"bolt://127.0.0.1:{_free_port()}")
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    monkeypatch.setenv("KGQA_NEO4J_CONNECT_TIMEOUT", "2")
    with pytest.raises(SystemExit) as e:
        main(["serve", "--port", str(_free_port())])
    err = capsys.readouterr().err
    assert e.value.code == 4 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("kgqa: error: Neo4j is not reachable at")


SERVE = """
import sys
sys.path.insert(0, {unit!r})
import test_api
from kgqa import factory
factory.Factory = lambda settings, log=None: test_api.MemoryFactory(settings)
from kgqa.cli import main
main(["serve", "--port", sys.argv[1]])
"""


def test_kgqa_serve_runs_the_app_and_never_logs_the_token(tmp_path: Path) -> None:
    """The real command in its own process (its factory the in-memory one): it binds
    127.0.0.1, answers, and stops on Ctrl-C; the token appears in none of its output."""
    import os
    import signal
    import subprocess
    import sys

    token = "tok-" + "9" * 24
    port = _free_port()
    env = os.environ | {
        "KGQA_API_TOKEN": token,
        "KGQA_DATA_DIR": str(tmp_path / "data"),
        "KGQA_PROFILE_NAMER": "rules",
        "KGQA_ANSWER_CACHE_ENABLED": "true",
    }
    script = SERVE.format(unit=str(Path(__file__).parent))
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "kgqa serve did not start"
                time.sleep(0.2)
        auth = {"Authorization": f"Bearer {token}"}
        r = httpx.post(f"{base}/v1/ask", json={"question": Q}, headers=auth, timeout=30)
        assert r.status_code == 200 and r.json()["answer"] == "Ben"
        assert httpx.post(f"{base}/v1/ask", json={"question": Q}, timeout=30).status_code == 401
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert f"http://127.0.0.1:{port}" in out and "bearer token required" in out
    assert "POST /v1/ask" in out  # the access log is on ...
    assert token not in out  # ... and never shows the token
    assert (tmp_path / "data" / "answer-cache" / "cache.db").is_file()


def test_a_cached_answer_streams_the_answer_alone(settings: Settings, tmp_path: Path) -> None:
    state = make_state(_settings(settings), cache=AnswerCache(tmp_path / "cache"))
    with TestClient(create_app(state)) as c:
        first = c.post("/v1/ask", json={"question": Q}, headers={"Accept": "text/event-stream"})
        assert dict(events(first.text))["answer"]["cache"]["hit"] is False
        again = c.post("/v1/ask", json={"question": Q}, headers={"Accept": "text/event-stream"})
        got = events(again.text)
        assert [n for n, _ in got] == ["evidence", "answer", "costs", "done"]
        assert got[1][1]["cache"]["hit"] is True
        assert got[0][1] == dict(events(first.text))["evidence"]


def test_a_client_that_leaves_the_stream_stops_its_question(
    settings: Settings, serve: Callable[[ServerState], str]
) -> None:
    gate = Gate()
    llm = ScriptedLLM(responses=[gate] + [respond] * 20)
    state = make_state(_settings(settings), llm=llm)
    base = serve(state)
    body = {"question": "who is married to [Ben]?", "save": True}
    with (
        httpx.Client(base_url=base, timeout=20) as c,
        c.stream("POST", "/v1/ask", json=body, headers={"Accept": "text/event-stream"}) as r,
    ):
        assert r.status_code == 200
        assert gate.entered.wait(10)  # the question is running
        job = state.runner.running
        assert job is not None and not job.cancelled
    deadline = time.monotonic() + 10
    while not job.cancelled:  # the server notices that the client has gone
        assert time.monotonic() < deadline
        time.sleep(0.01)
    gate.open.set()  # the question stops at its next stage
    deadline = time.monotonic() + 10
    while state.runner.pending:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert state.factory.graph().list_runs() == []
    with httpx.Client(base_url=base, timeout=20) as c:
        assert c.post("/v1/ask", json=body).json()["saved_run"]["run_id"]
    assert len(state.factory.graph().list_runs()) == 1


def test_the_evidence_event_draws_the_support_with_ids_as_strings(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"question": Q}, headers={"Accept": "text/event-stream"})
    got = dict(events(r.text))
    evidence, doc = got["evidence"], got["answer"]
    assert evidence["topic"] == ["Ada"] and evidence["answers"][0]["name"] == "Ben"
    # 63-bit ids travel as strings (a JavaScript number would round them)
    support = evidence["answers"][0]["support"]
    assert support == [str(i) for i in doc["answer_entities"][0]["support"]]
    (triple,) = evidence["triples"]
    assert triple == {
        "id": support[0],
        "subject": "Ada",
        "relation": "spouse",
        "object": "Ben",
        "text": "(Ada, spouse, Ben)",
    }


def test_neighbours_are_capped_and_read_only(client: TestClient, state: ServerState) -> None:
    before = state.factory.graph().stats()
    r = client.get("/v1/neighbours", params={"entity": "Ada", "limit": 2})
    assert r.status_code == 200
    body = r.json()
    assert body["entity"] == "Ada" and len(body["triples"]) == 2 and body["more"] is True
    assert all("Ada" in (t["subject"], t["object"]) for t in body["triples"])
    full = client.get("/v1/neighbours", params={"entity": "Ada"}).json()
    assert full["more"] is False and len(full["triples"]) == 6
    assert isinstance(full["triples"][0]["id"], str)
    assert client.get("/v1/neighbours", params={"entity": "ada"}).status_code == 404
    assert client.get("/v1/neighbours", params={"entity": "Ada", "limit": 500}).status_code == 422
    assert state.factory.graph().stats() == before


def test_the_page_is_served_with_its_files_without_a_token_and_loads_nothing_else(
    settings: Settings,
) -> None:
    state = make_state(_settings(settings, api_token="t0ken"))
    with TestClient(create_app(state)) as c:
        page = c.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "default-src 'self'" in page.headers["content-security-policy"]
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(s.startswith(("/static/", "#", "data:")) for s in sources)
        for src in sources:
            if src.startswith("/static/"):
                assert c.get(src).status_code == 200, src
        assert "cytoscape" in c.get("/static/vendor/cytoscape.min.js").text[:2000].lower()
        # the data behind it still needs the token
        assert c.get("/v1/info").status_code == 401
        info = c.get("/v1/info", headers={"Authorization": "Bearer t0ken"}).json()
        assert info["modes"][0] == "kgrag" and info["browser_url"].endswith(":17474/browser/")
