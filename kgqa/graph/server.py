"""A local Neo4j 5.26 Community server without Docker: jars from Maven Central, run with Java.

Layout (both folders come from :class:`~kgqa.settings.Settings`)::

    <cache_dir>/neo4j/<version>+browser-<v>+apoc-<v>/   lib/ plugins/ manifest.json   (re-makeable)
    <neo4j_data_dir>/                                    the server home, worth keeping:
        conf/neo4j.conf   data/   logs/console.log   run/neo4j.pid   password (mode 600)

The jars are fetched once with ``mvn dependency:copy-dependencies`` (Maven keeps its own cache in
``~/.m2`` as well), so a fresh clone on the same machine starts in seconds. The server binds to
127.0.0.1 only, with an explicit heap and page cache, no APOC procedure loaded (kgqa needs
none; the plugin's jars stay installed) and the Browser at ``http://127.0.0.1:<http_port>/browser/``.
Its folders are mode 700.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kgqa.errors import Neo4jServerError
from kgqa.settings import Settings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
# Jars that form the APOC plugin; Neo4j loads procedures from the plugins folder only.
_PLUGIN_JARS = re.compile(r"^apoc-(core|common)-.*\.jar$")
_MEMORY = re.compile(r"^[1-9][0-9]*[kmgKMG]?$")
_MIN_JAVA = 17
# Flags from Neo4j's shipped neo4j.conf (server.jvm.additional); without the --add-opens some
# operations have been reported to stall.
_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    # Exit on OOM instead of limping on with a half-working server.
    "-XX:+ExitOnOutOfMemoryError",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
)
LOG_TAIL_LINES = 15

# Servers started by this process, so that stop() can reap them (no zombies, no
# "subprocess still running" warnings) and a crashed start is detected at once.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ServerStatus:
    """What ``kgqa neo4j status`` shows."""

    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    bolt_port: int
    http_port: int
    home: Path
    log: Path
    jars: Path
    installed: bool

    def as_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class StartResult:
    already_running: bool
    seconds: float
    status: ServerStatus


@dataclass(frozen=True)
class StopResult:
    was_running: bool
    killed: bool
    seconds: float


def password_file(settings: Settings) -> Path:
    return settings.neo4j_data_dir / "password"


def managed_password(settings: Settings, create: bool = False) -> str:
    """The password of the managed server: ``neo4j.password`` when set, otherwise the random one
    kept (mode 600) in ``<neo4j_data_dir>/password``; ``create=True`` makes it on first use."""
    if settings.neo4j.password:
        return settings.neo4j.password
    path = password_file(settings)
    if path.is_file():
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    if not create:
        from kgqa.errors import GraphUnavailable

        raise GraphUnavailable(
            f"no password for the local Neo4j server ({path} does not exist): start it with "
            "`kgqa neo4j start`, which makes one, or set NEO4J_PASSWORD"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(24)
    while password.startswith("-"):  # an argument starting with "-" reads as an option
        password = secrets.token_urlsafe(24)
    # O_EXCL: two starts racing must not end up with two different passwords.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return managed_password(settings, create=False)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(password + "\n")
    return password


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something already listens on ``host:port`` (we could not bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR, like Neo4j's own listener: a socket in TIME_WAIT is no obstacle.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def find_java() -> str:
    """Path of the ``java`` to run Neo4j with (``$JAVA_HOME/bin/java`` first, then ``PATH``)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise Neo4jServerError(
            f"java not found: Neo4j 5.26 needs Java {_MIN_JAVA} or 21 on PATH (or JAVA_HOME); "
            "or use Docker (docker/README.md) and set NEO4J_URI"
        )
    return java


def java_major_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise Neo4jServerError(f"cannot tell the Java version of {java}: {out.stderr.strip()!r}")
    major = int(match.group(1))
    # Java 8 and older report "1.8".
    return int(match.group(2) or 0) if major == 1 else major


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return f"    ({path} is missing)"
    return "\n".join("    " + line for line in text[-lines:]) or "    (empty)"


def _alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0) but is gone for our purposes.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


class LocalNeo4j:
    """The Neo4j server that ``kgqa neo4j start|stop|status`` manages.

    ``log`` receives progress lines (the CLI passes ``click.echo``); ``extra_config`` adds
    ``neo4j.conf`` entries (tests turn off transaction-log preallocation, for instance).
    """

    def __init__(
        self,
        settings: Settings,
        log: Callable[[str], None] | None = None,
        extra_config: Mapping[str, str] | None = None,
    ):
        self.settings = settings
        self.s = settings.neo4j
        self._log = log or (lambda _msg: None)
        self.extra_config = dict(extra_config or {})
        for key, value in (("neo4j.heap", self.s.heap), ("neo4j.pagecache", self.s.pagecache)):
            if not _MEMORY.match(value):
                raise Neo4jServerError(f"{key}={value!r} is not a size such as 1g or 512m")
        self.home = settings.neo4j_data_dir.expanduser().resolve()
        self.jars = (
            settings.cache_dir.expanduser().resolve()
            / "neo4j"
            / f"{self.s.version}+browser-{self.s.browser_version}+apoc-{self.s.apoc_version}"
        )

    # -- paths -----------------------------------------------------------------------------
    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "console.log"

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / "neo4j.pid"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.s.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.s.http_port}/browser/"

    # -- install ---------------------------------------------------------------------------
    def _versions(self) -> dict[str, str]:
        return {
            "neo4j": self.s.version,
            "browser": self.s.browser_version,
            "apoc": self.s.apoc_version,
        }

    def installed(self) -> bool:
        """True when the jar folder is complete: its manifest, written last, lists every jar
        with its size, so a fetch that died halfway never counts as installed."""
        try:
            manifest = json.loads((self.jars / "manifest.json").read_text(encoding="utf-8"))
            if manifest.get("versions") != self._versions() or not manifest.get("jars"):
                return False
            return all(
                (self.jars / name).stat().st_size == size for name, size in manifest["jars"].items()
            )
        except (OSError, ValueError, AttributeError):
            return False

    def install(self) -> bool:
        """Fetch the jars into the cache once; returns False when they were already there."""
        if self.installed():
            return False
        mvn = shutil.which("mvn")
        artifacts = self._artifacts()
        if mvn is None:
            raise Neo4jServerError(
                f"mvn not found: kgqa fetches Neo4j from Maven Central ({artifacts}) with Maven; "
                "install Maven, or use Docker (docker/README.md) and set NEO4J_URI"
            )
        self.jars.parent.mkdir(parents=True, exist_ok=True)
        self._log(f"fetching Neo4j {self.s.version} jars with Maven into {self.jars} (once)...")
        started = time.monotonic()
        # Fetch into a private folder and rename it into place at the end, so that a partial
        # fetch is never used and two concurrent installs cannot mix their files.
        work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=self.jars.parent))
        try:
            pom = work / "pom.xml"
            pom.write_bytes((resources.files("kgqa.graph") / "neo4j-dist" / "pom.xml").read_bytes())
            out = work / "jars"
            cmd = [
                mvn,
                "-B",
                "-q",
                "-Dstyle.color=never",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={out}",
                f"-Dneo4j.version={self.s.version}",
                f"-Dneo4j.browser.version={self.s.browser_version}",
                f"-Dapoc.version={self.s.apoc_version}",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work)
            if proc.returncode != 0:
                self.logs_dir.mkdir(parents=True, exist_ok=True)
                fetch_log = self.logs_dir / "fetch.log"
                fetch_log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
                raise Neo4jServerError(
                    f"fetching Neo4j from Maven Central failed: "
                    f"{_maven_failure(proc.stdout + proc.stderr, artifacts)}; log: {fetch_log}"
                )
            self._arrange(out, work)
            try:
                work.rename(self.jars)
            except OSError:
                # Another install finished first, or an incomplete folder is in the way.
                if not self.installed():
                    shutil.rmtree(self.jars, ignore_errors=True)
                    work.rename(self.jars)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self._log(
            f"fetched {len(list(self.jars.glob('*/*.jar')))} jars in {time.monotonic() - started:.0f} s"
        )
        return True

    def _artifacts(self) -> str:
        return (
            f"org.neo4j:neo4j:{self.s.version}, "
            f"org.neo4j.client:neo4j-browser:{self.s.browser_version}, "
            f"org.neo4j.procedure:apoc-core:{self.s.apoc_version}"
        )

    def _arrange(self, fetched: Path, work: Path) -> None:
        lib, plugins = work / "lib", work / "plugins"
        lib.mkdir()
        plugins.mkdir()
        for jar in sorted(fetched.glob("*.jar")):
            jar.rename((plugins if _PLUGIN_JARS.match(jar.name) else lib) / jar.name)
        fetched.rmdir()
        for required in (f"neo4j-{self.s.version}.jar", f"apoc-core-{self.s.apoc_version}.jar"):
            if not any(work.glob(f"*/{required}")):
                raise Neo4jServerError(
                    f"Maven did not deliver {required}; the jar set is incomplete"
                )
        sizes = {str(p.relative_to(work)): p.stat().st_size for p in sorted(work.glob("*/*.jar"))}
        manifest = {"versions": self._versions(), "jars": sizes}
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        (work / "pom.xml").unlink()

    def make_private_folders(self) -> None:
        """The server's folders, mode 700 (the database files, the logs and the password are
        the user's alone): the home when kgqa creates it, and data/, logs/, run/ and conf/
        inside it always, so that a home made by an older kgqa is closed too."""
        if not self.home.exists():
            self.home.mkdir(parents=True, mode=0o700)
            self.home.chmod(0o700)  # mkdir's mode is reduced by the umask
        for folder in (self.data_dir, self.logs_dir, self.pid_file.parent, self.conf_dir):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o700)

    # -- config and password -----------------------------------------------------------------
    def config_text(self) -> str:
        """The ``neo4j.conf`` kgqa writes at every start (edits to the file are overwritten)."""
        s = self.s
        entries = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.listen_address": f"127.0.0.1:{s.bolt_port}",
            # Browser reads the advertised Bolt address to connect: it must carry our port.
            "server.bolt.advertised_address": f"127.0.0.1:{s.bolt_port}",
            "server.http.listen_address": f"127.0.0.1:{s.http_port}",
            "server.http.advertised_address": f"127.0.0.1:{s.http_port}",
            "server.https.enabled": "false",
            "server.directories.data": str(self.data_dir),
            "server.directories.logs": str(self.logs_dir),
            "server.directories.run": str(self.pid_file.parent),
            "server.directories.lib": str(self.jars / "lib"),
            "server.directories.plugins": str(self.jars / "plugins"),
            "server.memory.heap.initial_size": s.heap,
            "server.memory.heap.max_size": s.heap,
            "server.memory.pagecache.size": s.pagecache,
            "dbms.security.auth_enabled": "true",
            "dbms.usage_report.enabled": "false",
            # kgqa's Cypher calls no APOC procedure: none is loaded (an empty allowlist loads no
            # plugin procedure; the built-in db.* ones are not affected) and none runs
            # unrestricted.
            "dbms.security.procedures.allowlist": "",
            "dbms.security.procedures.unrestricted": "",
            # Community has one user database; this names it (only on the first start).
            "initial.dbms.default_database": s.database,
        }
        entries.update(self.extra_config)
        header = "# Written by kgqa (kgqa/graph/server.py) at every start; edits are overwritten.\n"
        return header + "".join(f"{k}={v}\n" for k, v in entries.items())

    def write_config(self) -> Path:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        path = self.conf_dir / "neo4j.conf"
        path.write_text(self.config_text(), encoding="utf-8")
        return path

    def initialized(self) -> bool:
        """True once the server has run: the initial password can no longer be set."""
        return (self.data_dir / "databases" / "system").is_dir()

    def _set_initial_password(self, java: str) -> None:
        password = managed_password(self.settings, create=True)
        if any(ord(c) < 32 for c in password):
            raise Neo4jServerError("neo4j.password must not contain control characters")
        # The password goes through a picocli @argfile (mode 600), not argv, so that it
        # never shows up in `ps`.
        argfile = self.conf_dir / ".initial-password"
        quoted = '"' + password.replace("\\", "\\\\").replace('"', '\\"') + '"\n'
        fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(quoted)
        env = {**os.environ, "NEO4J_HOME": str(self.home), "NEO4J_CONF": str(self.conf_dir)}
        cmd = [java, "-Xmx256m", "-cp", str(self.jars / "lib" / "*"), ADMIN_TOOL]
        # "--": a password that starts with "-" is the positional argument, not an option.
        cmd += ["dbms", "set-initial-password", "--", f"@{argfile}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        finally:
            argfile.unlink(missing_ok=True)
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            reason = detail[0] if detail else f"exit code {proc.returncode}"
            if "InvalidPasswordException" in reason:
                reason = reason.split(":", 1)[-1].strip() + " (fix NEO4J_PASSWORD)"
            raise Neo4jServerError(f"cannot set the Neo4j password: {reason}")

    # -- process -------------------------------------------------------------------------
    def command(self, java: str = "java") -> list[str]:
        """The java command line that runs the server in the foreground."""
        classpath = os.pathsep.join(
            [
                str(self.jars / "plugins" / "*"),
                str(self.conf_dir / "*"),
                str(self.jars / "lib" / "*"),
            ]
        )
        return [
            java,
            f"-Xms{self.s.heap}",
            f"-Xmx{self.s.heap}",
            *_JVM_FLAGS,
            "-cp",
            classpath,
            ENTRY_POINT,
            f"--home-dir={self.home}",
            f"--config-dir={self.conf_dir}",
            "--console-mode",
        ]

    def pid(self) -> int | None:
        """The pid of this home's running server, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if _alive(pid) and self._is_ours(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def _is_ours(self, pid: int) -> bool:
        # Guard against pid reuse: the process must be Neo4j with our home folder.
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return sys.platform != "linux"
        return ENTRY_POINT.encode() in cmdline and f"--home-dir={self.home}".encode() in cmdline

    def _written_ports(self) -> tuple[int, int] | None:
        """Bolt and HTTP ports of the config the running server was started with."""
        try:
            lines = (self.conf_dir / "neo4j.conf").read_text(encoding="utf-8").splitlines()
            conf = dict(ln.split("=", 1) for ln in lines if "=" in ln and not ln.startswith("#"))
            return (
                int(conf["server.bolt.listen_address"].rsplit(":", 1)[1]),
                int(conf["server.http.listen_address"].rsplit(":", 1)[1]),
            )
        except (OSError, KeyError, IndexError, ValueError):
            return None

    def status(self) -> ServerStatus:
        """Running or not; a running server reports the ports it was started with."""
        pid = self.pid()
        ports = self._written_ports() if pid is not None else None
        bolt_port, http_port = ports or (self.s.bolt_port, self.s.http_port)
        return ServerStatus(
            running=pid is not None,
            pid=pid,
            bolt_uri=f"bolt://127.0.0.1:{bolt_port}",
            browser_url=f"http://127.0.0.1:{http_port}/browser/",
            bolt_port=bolt_port,
            http_port=http_port,
            home=self.home,
            log=self.console_log,
            jars=self.jars,
            installed=self.installed(),
        )

    def start(self, tie_to_parent: bool = False) -> StartResult:
        """Install if needed, write the config, start the server and wait until Bolt answers.

        A running server is left alone (``already_running``). ``tie_to_parent`` (Linux) stops
        the server when the calling process dies, however it dies: test sessions use it so
        that no JVM outlives them.
        """
        started = time.monotonic()
        if self.pid() is not None:
            return StartResult(True, 0.0, self.status())
        for port, key in ((self.s.bolt_port, "bolt_port"), (self.s.http_port, "http_port")):
            if port_in_use(port):
                raise Neo4jServerError(
                    f"port {port} (neo4j.{key}) is already in use by another process; stop it "
                    f"or choose another port (KGQA_NEO4J_{key.upper()})"
                )
        java = find_java()
        if java_major_version(java) < _MIN_JAVA:
            raise Neo4jServerError(f"{java} is older than Java {_MIN_JAVA}, which Neo4j 5.26 needs")
        self.install()
        self.make_private_folders()
        self.write_config()
        if not self.initialized():
            self._set_initial_password(java)
        password = managed_password(self.settings, create=True)

        preexec = _die_with_parent if tie_to_parent and sys.platform == "linux" else None
        with open(self.console_log, "ab") as log:
            proc = subprocess.Popen(
                self.command(java),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                # Own session: Ctrl-C in the terminal that started it does not kill the server.
                start_new_session=True,
                preexec_fn=preexec,
            )
        _CHILDREN[proc.pid] = proc
        self.pid_file.write_text(f"{proc.pid}\n")
        self._log(f"starting Neo4j {self.s.version} (pid {proc.pid}); log: {self.console_log}")
        try:
            self._wait_for_bolt(proc, password)
        except BaseException:
            self.stop()
            raise
        return StartResult(False, time.monotonic() - started, self.status())

    def _wait_for_bolt(self, proc: subprocess.Popen[bytes], password: str) -> None:
        import neo4j
        from neo4j.exceptions import AuthError, DriverError, Neo4jError

        deadline = time.monotonic() + self.s.start_timeout
        while True:
            code = proc.poll()
            if code is not None:
                raise Neo4jServerError(
                    f"Neo4j exited during start-up (exit code {code}); log: {self.console_log}\n"
                    + _tail(self.console_log)
                )
            if _bolt_port_open(self.s.bolt_port):
                try:
                    with neo4j.GraphDatabase.driver(
                        self.bolt_uri, auth=(self.s.user, password), connection_timeout=2.0
                    ) as driver:
                        driver.execute_query("RETURN 1", database_=self.s.database)
                    return
                except AuthError as e:
                    raise Neo4jServerError(
                        f"Neo4j at {self.bolt_uri} refused the password: it was fixed at the "
                        f"server's first start; fix NEO4J_PASSWORD (or see {password_file(self.settings)})"
                    ) from e
                except (DriverError, Neo4jError, OSError):
                    pass  # Bolt is up but the database is still coming online.
            if time.monotonic() > deadline:
                raise Neo4jServerError(
                    f"Neo4j did not answer on {self.bolt_uri} within {self.s.start_timeout:.0f} s "
                    f"(neo4j.start_timeout); log: {self.console_log}\n" + _tail(self.console_log)
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 60.0) -> StopResult:
        """SIGTERM the server (its whole process group), SIGKILL it after ``timeout`` seconds."""
        started = time.monotonic()
        pid = self.pid()
        if pid is None:
            return StopResult(False, False, 0.0)
        _signal_group(pid, signal.SIGTERM)
        killed = False
        if not _wait_gone(pid, timeout):
            _signal_group(pid, signal.SIGKILL)
            killed = True
            if not _wait_gone(pid, 10.0):
                raise Neo4jServerError(f"Neo4j (pid {pid}) does not stop, even after SIGKILL")
        _CHILDREN.pop(pid, None)
        self.pid_file.unlink(missing_ok=True)
        return StopResult(True, killed, time.monotonic() - started)


def _maven_failure(output: str, artifacts: str) -> str:
    """The artifact Maven could not fetch, from its output, in one line."""
    for pattern in (
        r"Could not find artifact (\S+)",
        r"[Cc]ould not (?:resolve|transfer) artifact (\S+)",
        r"artifacts could not be resolved: ([^\n]+?)(?:: |\n|$)",
        r"Failure to find (\S+)",
        r"Non-resolvable[^\n]*?(\S+:\S+:\S+)",
    ):
        match = re.search(pattern, output)
        if match:
            return f"cannot fetch {match.group(1).rstrip(':,')}"
    errors = [
        ln.strip() for ln in output.splitlines() if "[ERROR]" in ln and ln.strip() != "[ERROR]"
    ]
    if errors:
        return errors[0].replace("[ERROR]", "").strip()[:300]
    return f"mvn failed while fetching {artifacts}"


def _bolt_port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        child = _CHILDREN.get(pid)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0.2)
        else:
            time.sleep(0.2)
        if not _alive(pid):
            return True
    return not _alive(pid)


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the parent dies (Linux prctl)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@contextlib.contextmanager
def running(server: LocalNeo4j, tie_to_parent: bool = True) -> Iterator[StartResult]:
    """Start ``server`` for the duration of a ``with`` block (tests, benchmarks)."""
    result = server.start(tie_to_parent=tie_to_parent)
    try:
        yield result
    finally:
        if not result.already_running:
            server.stop()
