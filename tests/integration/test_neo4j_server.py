"""The real Neo4j that the test setup starts (tests/conftest.py): Bolt, Browser, APOC, the
local server's lifecycle, and the one-line errors of :func:`kgqa.factory.connect`."""

from __future__ import annotations

import json
import socket
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from kgqa.errors import GraphUnavailable, Neo4jServerError
from kgqa.factory import connect
from kgqa.graph.server import LocalNeo4j, managed_password, port_in_use, running
from kgqa.settings import Neo4jSettings, Settings

pytestmark = pytest.mark.integration


def test_bolt_answers_queries(neo4j_driver, neo4j_settings: Settings) -> None:
    records, _, _ = neo4j_driver.execute_query(
        "RETURN 40 + $n AS x", n=2, database_=neo4j_settings.neo4j.database
    )
    assert records[0]["x"] == 42


@pytest.mark.parametrize("run", [1, 2])
def test_clean_graph_starts_empty(clean_graph, neo4j_settings: Settings, run: int) -> None:
    # Run 1 leaves data, a constraint and an index behind; run 2 must not see them.
    db = neo4j_settings.neo4j.database
    count = clean_graph.execute_query("MATCH (n) RETURN count(n) AS c", database_=db).records
    constraints = clean_graph.execute_query("SHOW CONSTRAINTS YIELD name", database_=db).records
    indexes = clean_graph.execute_query(
        "SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name", database_=db
    ).records
    assert (count[0]["c"], constraints, indexes) == (0, [], [])
    clean_graph.execute_query("CREATE (:Probe {name: $run})-[:R]->(:Probe)", run=run, database_=db)
    clean_graph.execute_query(
        "CREATE CONSTRAINT probe_name FOR (p:Probe) REQUIRE p.name IS UNIQUE", database_=db
    )
    clean_graph.execute_query("CREATE INDEX probe_x FOR (p:Probe) ON (p.x)", database_=db)


def test_browser_is_served(neo4j_server: LocalNeo4j) -> None:
    with urllib.request.urlopen(neo4j_server.browser_url, timeout=10) as response:
        body = response.read().decode("utf-8", errors="replace")
        assert response.status == 200
    assert "Neo4j Browser" in body


def test_discovery_advertises_our_bolt_port(neo4j_server: LocalNeo4j) -> None:
    # Browser connects to the Bolt address the server advertises: it must be ours, not 7687.
    url = f"http://127.0.0.1:{neo4j_server.s.http_port}/"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert f'"bolt://127.0.0.1:{neo4j_server.s.bolt_port}"' in response.read().decode()


def test_start_is_idempotent(neo4j_server: LocalNeo4j, neo4j_settings: Settings) -> None:
    before = neo4j_server.status()
    again = LocalNeo4j(neo4j_settings).start()
    assert before.running and again.already_running
    assert again.status.pid == before.pid
    assert again.status.bolt_port == neo4j_settings.neo4j.bolt_port


def test_listens_on_loopback_only(neo4j_server: LocalNeo4j) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # UDP: picks the outgoing interface, sends nothing
        address = s.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this machine has no non-loopback IPv4 address to test against")
    for port in (neo4j_server.s.bolt_port, neo4j_server.s.http_port):
        with socket.socket() as s:
            s.settimeout(2.0)
            assert s.connect_ex((address, port)) != 0, f"port {port} answers on {address}"


def test_wrong_password_is_one_line_naming_the_setting(neo4j_settings: Settings) -> None:
    with pytest.raises(GraphUnavailable) as e:
        connect(neo4j_settings, "not-the-password")
    message = str(e.value)
    assert "NEO4J_PASSWORD" in message and "\n" not in message


def test_unreachable_server_is_one_line(neo4j_settings: Settings) -> None:
    free = _free_port()
    down = replace(neo4j_settings, neo4j=Neo4jSettings(uri=f"bolt://127.0.0.1:{free}"))
    with pytest.raises(GraphUnavailable) as e:
        connect(down, "whatever")
    assert "NEO4J_URI" in str(e.value) and "\n" not in str(e.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_stop_and_restart_keep_data_and_password(neo4j_settings: Settings, tmp_path: Path) -> None:
    """A second, small server of its own: stop, restart, data and password survive. Its
    password starts with "-" and has a quote, a backslash and a space, which the admin tool must
    get verbatim."""
    if not neo4j_settings.neo4j.managed:
        pytest.skip("NEO4J_URI is set: no local server is managed in this session")
    password = '-a "quoted" \\ pass word'
    neo = Neo4jSettings(
        bolt_port=_free_port(),
        http_port=_free_port(),
        heap="512m",
        pagecache="64m",
        data_dir=tmp_path / "home",
        password=password,
    )
    settings = replace(neo4j_settings, neo4j=neo, data_dir=tmp_path / "data")
    # The same test-only config as tests/conftest.py's server (small, fast to stop).
    fast = {
        "db.tx_log.preallocate": "false",
        "internal.server.bolt.thread_pool_shutdown_wait_time": "0s",
        "internal.server.bolt.connection_shutdown_wait_time": "0s",
    }
    server = LocalNeo4j(settings, extra_config=fast)
    with running(server) as first:
        assert not first.already_running and server.status().running
        driver = connect(settings, password)
        driver.execute_query("CREATE (:Kept {n: 1})")
        driver.close()
    stopped = server.status()
    assert not stopped.running and not server.pid_file.exists()
    assert not port_in_use(neo.bolt_port)
    with running(server):
        with connect(settings, managed_password(settings)) as driver:
            records = driver.execute_query("MATCH (k:Kept) RETURN k.n AS n").records
        assert [r["n"] for r in records] == [1]
    assert not (settings.neo4j_data_dir / "password").exists()  # a given password is not stored


def test_cli_status_and_start_report_the_running_server(
    neo4j_server: LocalNeo4j, monkeypatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from kgqa.commands.neo4j_cmd import neo4j

    for var in ("NEO4J_URI", "NEO4J_PASSWORD", "KGQA_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGQA_CACHE_DIR", str(neo4j_server.settings.cache_dir))
    where = ["--data-dir", str(neo4j_server.home), "--bolt-port", str(neo4j_server.s.bolt_port)]
    where += ["--http-port", str(neo4j_server.s.http_port)]
    status = CliRunner().invoke(neo4j, ["status", "--json", *where], obj={})
    assert status.exit_code == 0, status.output
    data = json.loads(status.output)
    assert data["running"] is True and data["pid"] == neo4j_server.pid()
    start = CliRunner().invoke(neo4j, ["start", *where], obj={})
    assert start.exit_code == 0, start.output
    assert "already running" in start.output and neo4j_server.browser_url in start.output


def test_too_short_password_is_refused_before_start(
    neo4j_server: LocalNeo4j, tmp_path: Path
) -> None:
    # Needs Java and the jars, but starts no server: Neo4j's admin tool rejects the password.
    neo = Neo4jSettings(
        bolt_port=_free_port(), http_port=_free_port(), data_dir=tmp_path / "h", password="short"
    )
    server = LocalNeo4j(replace(neo4j_server.settings, neo4j=neo, data_dir=tmp_path / "d"))
    with pytest.raises(Neo4jServerError) as e:
        server.start()
    assert "at least 8 characters" in str(e.value) and "NEO4J_PASSWORD" in str(e.value)
    assert not server.status().running
