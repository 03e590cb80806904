"""Neo4j going away under a running `kgqa serve` app: /healthz says so, /v1/ask is a 503 with
the one line (at once, not after the driver's minute of retries), and the same app answers
again once Neo4j is back, with no restart.

The app reaches the session's real Neo4j through a TCP relay of this test's own: closing the
relay (its listening socket and every connection through it) is, for the driver, exactly a
server that stopped (refused connections, connections reset), and opening it again on the same
port is the server back, without the half a minute a real restart takes (the real stop and
start are in test_neo4j_down.py, for the CLI and eval)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import neo4j
import pytest
from fastapi.testclient import TestClient

from kgqa.embed.hashing import HashingEmbedder
from kgqa.factory import Factory
from kgqa.graph.load import load_kb
from kgqa.index.sync import sync_with_graph
from kgqa.llm.fake import ScriptedLLM
from kgqa.loaders.base import ParsedKB, make_triple
from kgqa.server.app import create_app
from kgqa.server.state import ServerState
from kgqa.settings import Neo4jSettings, Settings

pytestmark = pytest.mark.integration

FACTS = [("Ada", "spouse", "Ben"), ("Ben", "spouse", "Ada"), ("Ada", "nationality", "Norland")]
Q = "who is the spouse of [Ada]?"


class Relay:
    """127.0.0.1:<port> -> the target, until :meth:`close`; :meth:`open` listens again on the
    same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        assert self._listener is not None
        # shutdown wakes the accept() blocked in the relay's thread (close alone does not).
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for c in self._conns:
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)
                c.close()
            self._conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def relay(neo4j_settings: Settings) -> Iterator[Relay]:
    r = Relay(("127.0.0.1", int(neo4j_settings.neo4j.effective_uri.rsplit(":", 1)[1])))
    r.open()
    try:
        yield r
    finally:
        with contextlib.suppress(OSError):
            r.close()


def test_neo4j_going_away_is_a_503_at_once_and_the_server_recovers_by_itself(
    neo4j_settings: Settings,
    neo4j_driver: neo4j.Driver,
    relay: Relay,
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conftest import wipe_database

    wipe_database(neo4j_driver, neo4j_settings.neo4j.database)
    s = neo4j_settings.neo4j
    through = Neo4jSettings(
        uri=f"bolt://127.0.0.1:{relay.port}",
        user=s.user,
        password=s.password,
        database=s.database,
        connect_timeout=3.0,
    )
    settings = replace(neo4j_settings, neo4j=through, data_dir=tmp_path / "data")
    settings = settings.with_overrides({"profile.namer": "rules", "retrieval.hops": 1})
    monkeypatch.setattr(Factory, "embedder", lambda self: HashingEmbedder(dim=64))
    with Factory(settings) as factory:
        factory._cache["llm"] = ScriptedLLM(
            responses=[lambda _p: "1. spouses of [Ada]\n<END>"] * 20
        )
        parsed = ParsedKB("people", [make_triple(a, r, b, i) for i, (a, r, b) in enumerate(FACTS)])
        load_kb(factory.graph(), parsed)
        sync_with_graph(factory.graph(), settings.index_dir, factory.embedder())
        factory.derive_profile()
        state = ServerState(factory)
        state.warm_up()
        with TestClient(create_app(state)) as c:
            assert c.post("/v1/ask", json={"question": Q}).json()["answer"] == "Ben"
            assert c.get("/healthz").status_code == 200
            relay.close()  # Neo4j goes away
            start = time.monotonic()
            health = c.get("/healthz")
            assert health.status_code == 503 and health.json()["neo4j"]["ok"] is False
            assert (
                f"Neo4j is not reachable at bolt://127.0.0.1:{relay.port}"
                in (health.json()["neo4j"]["message"])
            )
            r = c.post("/v1/ask", json={"question": Q})
            assert r.status_code == 503
            error = r.json()["error"]
            assert error["type"] == "GraphUnavailable"
            assert error["message"].startswith("Neo4j is not reachable at bolt://127.0.0.1:")
            assert "\n" not in error["message"] and "Traceback" not in r.text
            assert c.get("/v1/stats").status_code == 503
            assert time.monotonic() - start < 10  # not the driver's minute of retries
            relay.open()  # and comes back on the same address
            again = c.post("/v1/ask", json={"question": Q})
            assert again.status_code == 200 and again.json()["answer"] == "Ben"
            assert c.get("/healthz").status_code == 200
