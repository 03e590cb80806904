"""Shared fixtures.

The contract other tests rely on:

- ``neo4j_settings`` (session): :class:`~kgqa.settings.Settings` for a real Neo4j. By default a
  dedicated test server that this fixture starts with :class:`~kgqa.graph.server.LocalNeo4j` on
  ``KGQA_TEST_BOLT_PORT`` / ``KGQA_TEST_HTTP_PORT`` (17687 / 17474; other free ports if those
  are taken and the variables are unset), with its database in a session tmp folder and the jars
  from the usual cache (``~/.cache/kgqa``), and stops it at the end of the session. With
  ``NEO4J_URI`` set, that server is used instead and nothing is started. A server that cannot
  start makes the tests ERROR; they never skip. Nothing starts unless a test asks for it, so
  ``pytest -m unit`` needs no Java.
- ``neo4j_driver`` (session): a connected ``neo4j.Driver`` from :func:`kgqa.factory.connect`.
- ``clean_graph`` (function): the driver, after deleting every node, relationship, constraint
  and index, so that each integration test starts from an empty database.
- ``settings`` (function): for ``integration``/``slow`` tests, ``neo4j_settings`` with
  ``data_dir`` (and so the index folder) moved to the test's ``tmp_path``; for other tests the
  same shape with no server behind it (nothing is started).
- ``neo4j_server`` (session): the :class:`LocalNeo4j` behind ``neo4j_settings`` (tests of the
  local server itself; skipped, with the reason, when ``NEO4J_URI`` points elsewhere).
- every test runs with the answer cache off (``KGQA_ANSWER_CACHE_ENABLED=false``); the cache's
  own tests turn it on.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kgqa.settings import IndexSettings, Neo4jSettings, Settings, default_cache_dir

if TYPE_CHECKING:
    import neo4j

    from kgqa.graph.server import LocalNeo4j

DEFAULT_TEST_BOLT_PORT = 17687
DEFAULT_TEST_HTTP_PORT = 17474
# Small but real: the test database holds at most a few thousand triples.
TEST_HEAP = "1g"
TEST_PAGECACHE = "512m"
# Test servers only. Without preallocation a fresh database takes a few MB instead of ~0.5 GB;
# the two internal Bolt waits (5 s each by default, Neo4j 5.26) make a stop take ~1 s, not ~11.
# Index statistics change only when kgqa re-samples them (load_kb does), never when a
# background thread happens to run: plans in tests do not depend on timing.
TEST_SERVER_CONFIG = {
    "db.tx_log.preallocate": "false",
    "db.index_sampling.background_enabled": "false",
    "internal.server.bolt.thread_pool_shutdown_wait_time": "0s",
    "internal.server.bolt.connection_shutdown_wait_time": "0s",
}


@pytest.fixture(autouse=True)
def _no_answer_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer cache (on by default for `kgqa ask`) is off in every test that does not
    turn it on: a test's scripted answer must never come from another test's, or from a
    developer's ``~/.local/share/kgqa/answer-cache``."""
    monkeypatch.setenv("KGQA_ANSWER_CACHE_ENABLED", "false")


def _external_uri() -> str | None:
    return os.environ.get("NEO4J_URI") or None


def _cache_dir() -> Path:
    # The normal cache, so CI and developers reuse the jars fetched once.
    env = os.environ.get("KGQA_CACHE_DIR")
    return Path(env).expanduser() if env else default_cache_dir()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _test_ports() -> tuple[int, int]:
    """Ports from the environment exactly; otherwise the defaults, or free ports when another
    session (another developer on this machine) already holds the defaults."""
    from kgqa.graph.server import port_in_use

    bolt_env, http_env = (
        os.environ.get("KGQA_TEST_BOLT_PORT"),
        os.environ.get("KGQA_TEST_HTTP_PORT"),
    )
    bolt = int(bolt_env) if bolt_env else DEFAULT_TEST_BOLT_PORT
    http = int(http_env) if http_env else DEFAULT_TEST_HTTP_PORT
    if not bolt_env and port_in_use(bolt):
        bolt = _free_port()
    if not http_env and port_in_use(http):
        http = _free_port()
    return bolt, http


def pytest_report_header(config: pytest.Config) -> str | None:
    uri = _external_uri()
    if uri:
        return f"integration tests use NEO4J_URI={uri}; clean_graph WIPES its database"
    return None


@pytest.fixture(scope="session")
def _neo4j(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Settings, LocalNeo4j | None]]:
    base = Settings(cache_dir=_cache_dir(), data_dir=tmp_path_factory.mktemp("kgqa-data"))
    uri = _external_uri()
    if uri:
        env = os.environ
        external = Neo4jSettings(
            uri=uri,
            user=env.get("NEO4J_USERNAME") or env.get("NEO4J_USER") or "neo4j",
            password=env.get("NEO4J_PASSWORD") or None,
            database=env.get("NEO4J_DATABASE") or "neo4j",
        )
        yield replace(base, neo4j=external), None
        return

    from kgqa.graph.server import LocalNeo4j, managed_password

    bolt, http = _test_ports()
    home = tmp_path_factory.mktemp("neo4j")
    local = Neo4jSettings(
        bolt_port=bolt,
        http_port=http,
        heap=TEST_HEAP,
        pagecache=TEST_PAGECACHE,
        data_dir=home,
        # Generous: a cold CI machine first fetches the jars (not counted here) and then
        # starts a JVM on 2 busy cores.
        start_timeout=float(os.environ.get("KGQA_TEST_NEO4J_START_TIMEOUT", "240")),
    )
    settings = replace(base, neo4j=local)
    server = LocalNeo4j(settings, extra_config=TEST_SERVER_CONFIG)
    # tie_to_parent: the JVM dies with this pytest process, even on SIGKILL.
    server.start(tie_to_parent=True)
    try:
        password = managed_password(settings)
        yield replace(settings, neo4j=replace(local, password=password)), server
    finally:
        server.stop()
        if not os.environ.get("KGQA_TEST_KEEP_NEO4J"):
            shutil.rmtree(server.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def neo4j_settings(_neo4j: tuple[Settings, LocalNeo4j | None]) -> Settings:
    """Settings for the real Neo4j of this test session (see the module docstring)."""
    return _neo4j[0]


@pytest.fixture(scope="session")
def neo4j_server(_neo4j: tuple[Settings, LocalNeo4j | None]) -> LocalNeo4j:
    """The local test server; tests of the server itself use it."""
    if _neo4j[1] is None:
        pytest.skip("NEO4J_URI is set: the tests use that server, not a local one")
    return _neo4j[1]


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_settings: Settings) -> Iterator[neo4j.Driver]:
    """A connected driver to the session's Neo4j."""
    from kgqa.factory import Factory, connect

    driver = connect(neo4j_settings, Factory(neo4j_settings).password())
    try:
        yield driver
    finally:
        driver.close()


def _quote(name: str) -> str:
    # Index and constraint names cannot be parameters; backticks are doubled to escape them.
    return "`" + name.replace("`", "``") + "`"


def wipe_database(driver: neo4j.Driver, database: str) -> None:
    """Delete all data, constraints and indexes (but the built-in token lookup indexes)."""
    with driver.session(database=database) as session:
        names = [r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name")]
        for name in names:
            session.run(f"DROP CONSTRAINT {_quote(name)} IF EXISTS").consume()
        names = [
            r["name"]
            for r in session.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name")
        ]
        for name in names:
            session.run(f"DROP INDEX {_quote(name)} IF EXISTS").consume()
        # In batches: a test may have loaded more than one transaction should delete.
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()


@pytest.fixture
def clean_graph(neo4j_driver: neo4j.Driver, neo4j_settings: Settings) -> neo4j.Driver:
    """The session driver, on an empty database (no data, constraints or indexes)."""
    wipe_database(neo4j_driver, neo4j_settings.neo4j.database)
    return neo4j_driver


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings whose data folders live in ``tmp_path``, so that no test touches
    ``~/.local/share``. Integration and slow tests get the session's real Neo4j; other tests
    get a server address where nothing is started."""
    data_dir = tmp_path / "data"
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("slow"):
        base: Settings = request.getfixturevalue("neo4j_settings")
        return replace(base, data_dir=data_dir, index=IndexSettings())
    offline = Neo4jSettings(
        bolt_port=DEFAULT_TEST_BOLT_PORT,
        http_port=DEFAULT_TEST_HTTP_PORT,
        data_dir=tmp_path / "neo4j",
        password="no-server-in-unit-tests",
        connect_timeout=2.0,
    )
    return Settings(neo4j=offline, cache_dir=_cache_dir(), data_dir=data_dir)
