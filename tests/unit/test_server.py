"""The local Neo4j server manager, without Java or Maven: config, password file, status,
error messages, and the jar cache (with a stand-in ``mvn`` script that writes jar files)."""

from __future__ import annotations

import json
import os
import socket
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgqa.errors import GraphUnavailable, Neo4jServerError
from kgqa.graph.server import LocalNeo4j, _maven_failure, managed_password, port_in_use
from kgqa.settings import Neo4jSettings, Settings

pytestmark = pytest.mark.unit


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def local(tmp_path: Path) -> Settings:
    """Managed-server settings with every folder in tmp_path and free ports."""
    neo = Neo4jSettings(
        bolt_port=_free_port(),
        http_port=_free_port(),
        heap="768m",
        pagecache="256m",
        data_dir=tmp_path / "home",
        database="movies",
    )
    return Settings(neo4j=neo, cache_dir=tmp_path / "cache", data_dir=tmp_path / "data")


def _conf(text: str) -> dict[str, str]:
    return dict(ln.split("=", 1) for ln in text.splitlines() if ln and not ln.startswith("#"))


def test_config_binds_loopback_with_explicit_memory_and_no_apoc(local: Settings) -> None:
    server = LocalNeo4j(local, extra_config={"db.tx_log.preallocate": "false"})
    conf = _conf(server.config_text())
    bolt, http = local.neo4j.bolt_port, local.neo4j.http_port
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["server.bolt.listen_address"] == f"127.0.0.1:{bolt}"
    assert conf["server.bolt.advertised_address"] == f"127.0.0.1:{bolt}"
    assert conf["server.http.listen_address"] == f"127.0.0.1:{http}"
    assert conf["server.https.enabled"] == "false"
    assert conf["server.memory.heap.max_size"] == "768m"
    assert conf["server.memory.pagecache.size"] == "256m"
    assert conf["dbms.security.auth_enabled"] == "true"
    # kgqa calls no APOC procedure: none is loaded, none is unrestricted (issue 13).
    assert conf["dbms.security.procedures.allowlist"] == ""
    assert conf["dbms.security.procedures.unrestricted"] == ""
    assert conf["dbms.usage_report.enabled"] == "false"
    assert conf["initial.dbms.default_database"] == "movies"
    assert conf["db.tx_log.preallocate"] == "false"
    home = local.neo4j_data_dir.resolve()
    assert conf["server.directories.data"] == str(home / "data")
    assert conf["server.directories.logs"] == str(home / "logs")
    assert conf["server.directories.plugins"] == str(server.jars / "plugins")
    assert server.jars.is_relative_to((local.cache_dir / "neo4j").resolve())
    assert "0.0.0.0" not in server.config_text()


def test_write_config_puts_neo4j_conf_in_the_home(local: Settings) -> None:
    server = LocalNeo4j(local)
    path = server.write_config()
    assert path == local.neo4j_data_dir.resolve() / "conf" / "neo4j.conf"
    assert path.read_text(encoding="utf-8") == server.config_text()


def test_java_command_has_heap_opens_and_entry_point(local: Settings) -> None:
    cmd = LocalNeo4j(local).command("/opt/java")
    assert cmd[0] == "/opt/java"
    assert "-Xmx768m" in cmd and "-Xms768m" in cmd
    assert "--add-opens=java.base/java.nio=ALL-UNNAMED" in cmd
    assert "-Dio.netty.tryReflectionSetAccessible=true" in cmd
    entry = cmd.index("org.neo4j.server.CommunityEntryPoint")
    home = local.neo4j_data_dir.resolve()
    assert cmd[entry + 1 :] == [
        f"--home-dir={home}",
        f"--config-dir={home / 'conf'}",
        "--console-mode",
    ]
    classpath = cmd[cmd.index("-cp") + 1].split(os.pathsep)
    assert classpath[0].endswith("plugins/*") and classpath[-1].endswith("lib/*")


@pytest.mark.parametrize("field", ["heap", "pagecache"])
def test_memory_sizes_are_validated(local: Settings, field: str) -> None:
    bad = replace(local, neo4j=replace(local.neo4j, **{field: "lots"}))
    with pytest.raises(Neo4jServerError, match=f"neo4j.{field}='lots'"):
        LocalNeo4j(bad)


def test_generated_password_is_private_and_stable(local: Settings) -> None:
    first = managed_password(local, create=True)
    path = local.neo4j_data_dir / "password"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 24
    assert managed_password(local) == first
    assert managed_password(local, create=True) == first


def test_password_from_settings_wins_and_is_not_stored(local: Settings) -> None:
    given = replace(local, neo4j=replace(local.neo4j, password="from-the-env-123"))
    assert managed_password(given, create=True) == "from-the-env-123"
    assert not (local.neo4j_data_dir / "password").exists()


def test_missing_password_names_the_fix(local: Settings) -> None:
    with pytest.raises(GraphUnavailable) as e:
        managed_password(local)
    assert "NEO4J_PASSWORD" in str(e.value) and "kgqa neo4j start" in str(e.value)
    assert "\n" not in str(e.value)


def test_status_when_stopped(local: Settings) -> None:
    st = LocalNeo4j(local).status()
    assert not st.running and st.pid is None
    assert st.bolt_uri == f"bolt://127.0.0.1:{local.neo4j.bolt_port}"
    assert st.browser_url == f"http://127.0.0.1:{local.neo4j.http_port}/browser/"
    assert st.log == local.neo4j_data_dir.resolve() / "logs" / "console.log"
    assert not st.installed
    assert json.loads(json.dumps(st.as_dict()))["running"] is False


def test_stale_pid_file_of_another_process_is_ignored(local: Settings) -> None:
    # A reused pid (here: this very pytest process) is not our server and must not be signalled.
    server = LocalNeo4j(local)
    server.pid_file.parent.mkdir(parents=True)
    server.pid_file.write_text(f"{os.getpid()}\n")
    assert server.pid() is None
    assert not server.pid_file.exists()
    assert server.stop().was_running is False


def test_missing_java_is_one_clear_line(local: Settings, monkeypatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(Neo4jServerError) as e:
        LocalNeo4j(local).start()
    message = str(e.value)
    assert message.startswith("java not found") and "Java 17" in message
    assert "\n" not in message
    assert not (local.neo4j_data_dir / "run" / "neo4j.pid").exists()


def test_port_taken_by_another_process_is_a_clear_error(local: Settings) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", local.neo4j.bolt_port))
        s.listen()
        assert port_in_use(local.neo4j.bolt_port)
        with pytest.raises(
            Neo4jServerError, match=r"port \d+ \(neo4j.bolt_port\) is already in use"
        ):
            LocalNeo4j(local).start()
    assert not port_in_use(local.neo4j.bolt_port)


def test_missing_mvn_names_the_artifacts(local: Settings, monkeypatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(Neo4jServerError) as e:
        LocalNeo4j(local).install()
    assert str(e.value).startswith("mvn not found")
    assert f"org.neo4j:neo4j:{local.neo4j.version}" in str(e.value)


MAVEN_MISSING_ARTIFACT = (
    "[ERROR] Failed to execute goal on project neo4j-dist: Could not resolve dependencies for "
    "project kgqa:neo4j-dist:pom:1: Could not find artifact org.neo4j:neo4j:jar:5.26.99 in "
    "central (https://repo.maven.apache.org/maven2) -> [Help 1]\n[ERROR] \n"
)


def test_maven_failure_names_the_artifact() -> None:
    # The text is Maven 3.8's real output for a version that does not exist.
    assert _maven_failure(MAVEN_MISSING_ARTIFACT, "x") == "cannot fetch org.neo4j:neo4j:jar:5.26.99"
    offline = (
        "[ERROR] Could not transfer artifact org.neo4j:neo4j-kernel:jar:5.26.19 from/to central"
    )
    assert _maven_failure(offline, "x") == "cannot fetch org.neo4j:neo4j-kernel:jar:5.26.19"
    assert _maven_failure("[ERROR] something odd\n", "x") == "something odd"


def _fake_mvn(bin_dir: Path, jars: list[str], exit_code: int = 0, message: str = "") -> None:
    """An ``mvn`` that writes the named jar files into -DoutputDirectory, prints ``message``
    and exits with ``exit_code``."""
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "mvn-output.txt").write_text(message)
    lines = [
        "#!/bin/sh",
        'for arg in "$@"; do',
        '  case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac',
        "done",
        'mkdir -p "$out"',
        f'for jar in {" ".join(jars)}; do printf \'jar %s\' "$jar" > "$out/$jar"; done',
        f"cat '{bin_dir / 'mvn-output.txt'}'",
        f"exit {exit_code}",
    ]
    script = bin_dir / "mvn"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)


def test_install_arranges_jars_and_detects_a_damaged_cache(
    local: Settings, monkeypatch, tmp_path: Path
) -> None:
    v = local.neo4j.version
    jars = [f"neo4j-{v}.jar", "neo4j-kernel-1.jar", f"apoc-core-{v}.jar", f"apoc-common-{v}.jar"]
    _fake_mvn(tmp_path / "bin", jars)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    server = LocalNeo4j(local)
    assert server.install() is True
    plugins = {p.name for p in (server.jars / "plugins").iterdir()}
    assert plugins == {f"apoc-common-{v}.jar", f"apoc-core-{v}.jar"}
    assert {p.name for p in (server.jars / "lib").iterdir()} == {
        "neo4j-kernel-1.jar",
        f"neo4j-{v}.jar",
    }
    assert server.installed() and server.install() is False
    assert not list(server.jars.parent.glob(".fetch-*"))
    # A truncated jar (an interrupted copy) makes the cache count as missing: fetched again.
    (server.jars / "lib" / "neo4j-kernel-1.jar").write_text("")
    assert not server.installed()
    assert server.install() is True and server.installed()


def test_failed_fetch_leaves_nothing_behind(local: Settings, monkeypatch, tmp_path: Path) -> None:
    _fake_mvn(tmp_path / "bin", ["neo4j-kernel-1.jar"], exit_code=1, message=MAVEN_MISSING_ARTIFACT)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    server = LocalNeo4j(local)
    with pytest.raises(Neo4jServerError) as e:
        server.install()
    assert "cannot fetch org.neo4j:neo4j:jar:5.26.99" in str(e.value)
    assert (server.logs_dir / "fetch.log").is_file()
    assert not server.jars.exists() and not list(server.jars.parent.glob(".fetch-*"))


def test_incomplete_jar_set_is_rejected(local: Settings, monkeypatch, tmp_path: Path) -> None:
    _fake_mvn(tmp_path / "bin", ["neo4j-kernel-1.jar"])  # exit 0 but no server or APOC jar
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    server = LocalNeo4j(local)
    with pytest.raises(Neo4jServerError, match="did not deliver neo4j-"):
        server.install()
    assert not server.installed()


def test_cli_status_json_when_stopped(local: Settings, monkeypatch, tmp_path: Path) -> None:
    from kgqa.commands.neo4j_cmd import neo4j

    for var in ("NEO4J_URI", "NEO4J_PASSWORD", "KGQA_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./kgqa.toml
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KGQA_CACHE_DIR", str(local.cache_dir))
    args = ["status", "--json", "--data-dir", str(local.neo4j_data_dir)]
    args += ["--bolt-port", str(local.neo4j.bolt_port)]
    result = CliRunner().invoke(neo4j, args, obj={})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["running"] is False and data["external"] is False
    assert data["bolt_port"] == local.neo4j.bolt_port
    assert data["home"] == str(local.neo4j_data_dir.resolve())
