"""``kgqa neo4j start|stop|status|password``: the local Neo4j server (see kgqa/graph/server.py).

When ``NEO4J_URI`` is set, kgqa uses that server and manages none: ``start`` and ``status`` only
check that it answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kgqa.commands import settings_from
from kgqa.settings import Settings


def _overrides(
    bolt_port: int | None, http_port: int | None, data_dir: Path | None
) -> dict[str, Any]:
    return {"neo4j.bolt_port": bolt_port, "neo4j.http_port": http_port, "neo4j.data_dir": data_dir}


def _server_options(f: Any) -> Any:
    f = click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="The server's home: config, database, logs (default: <data_dir>/neo4j).",
    )(f)
    f = click.option("--http-port", type=int, help="HTTP and Browser port (default 7474).")(f)
    f = click.option("--bolt-port", type=int, help="Bolt port (default 7687).")(f)
    return f


def _check_external(settings: Settings) -> str:
    """Connect to the NEO4J_URI server; one line saying what answered."""
    from kgqa.factory import Factory

    with Factory(settings) as factory:
        info = factory.driver().get_server_info()
    return f"{settings.neo4j.uri} answers ({info.agent}); kgqa manages no server while NEO4J_URI is set"


@click.group()
def neo4j() -> None:
    """Manage the local Neo4j server (Bolt, Browser and APOC; no Docker needed).

    The jars come from Maven Central once (into the cache folder); the database lives in the
    data folder. Set NEO4J_URI to use an existing server instead.
    """


@neo4j.command()
@_server_options
@click.pass_context
def start(
    ctx: click.Context, bolt_port: int | None, http_port: int | None, data_dir: Path | None
) -> None:
    """Start the server in the background and wait until Bolt answers."""
    settings = settings_from(ctx, _overrides(bolt_port, http_port, data_dir))
    if not settings.neo4j.managed:
        click.echo(f"NEO4J_URI is set: {_check_external(settings)}")
        return
    from kgqa.graph.server import LocalNeo4j, password_file

    server = LocalNeo4j(settings, log=lambda msg: click.echo(msg, err=True))
    result = server.start()
    st = result.status
    if result.already_running:
        click.echo(f"Neo4j is already running (pid {st.pid}); nothing to do")
    else:
        click.echo(
            f"Neo4j {settings.neo4j.version} is up after {result.seconds:.1f} s (pid {st.pid})"
        )
    where = (
        "NEO4J_PASSWORD"
        if settings.neo4j.password
        else f"`kgqa neo4j password` ({password_file(settings)})"
    )
    click.echo(f"  Bolt:     {st.bolt_uri}  (user {settings.neo4j.user}, password: {where})")
    click.echo(f"  Browser:  {st.browser_url}")
    click.echo(f"  data:     {st.home}")
    click.echo(f"  log:      {st.log}")


@neo4j.command()
@_server_options
@click.option("--timeout", default=60.0, show_default=True, help="Seconds before SIGKILL.")
@click.pass_context
def stop(
    ctx: click.Context,
    bolt_port: int | None,
    http_port: int | None,
    data_dir: Path | None,
    timeout: float,
) -> None:
    """Stop the server (SIGTERM, then SIGKILL after --timeout seconds)."""
    settings = settings_from(ctx, _overrides(bolt_port, http_port, data_dir))
    if not settings.neo4j.managed:
        click.echo(
            f"NEO4J_URI is set ({settings.neo4j.uri}): kgqa manages no server; nothing to stop"
        )
        return
    from kgqa.graph.server import LocalNeo4j

    result = LocalNeo4j(settings).stop(timeout=timeout)
    if not result.was_running:
        click.echo("Neo4j is not running; nothing to stop")
    elif result.killed:
        click.echo(f"Neo4j did not stop within {timeout:.0f} s and was killed")
    else:
        click.echo(f"Neo4j stopped after {result.seconds:.1f} s")


@neo4j.command()
@_server_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(
    ctx: click.Context,
    bolt_port: int | None,
    http_port: int | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Show whether the server runs, its pid, ports, data folder and log."""
    settings = settings_from(ctx, _overrides(bolt_port, http_port, data_dir))
    if not settings.neo4j.managed:
        line = _check_external(settings)
        if as_json:
            click.echo(json.dumps({"external": True, "uri": settings.neo4j.uri, "running": True}))
        else:
            click.echo(line)
        return
    from kgqa.graph.server import LocalNeo4j

    st = LocalNeo4j(settings).status()
    if as_json:
        click.echo(json.dumps({"external": False, **st.as_dict()}, indent=2))
        return
    state = f"running (pid {st.pid})" if st.running else "stopped"
    if not st.running:
        from kgqa.graph.server import port_in_use

        taken = [f"port {p}" for p in (st.bolt_port, st.http_port) if port_in_use(p)]
        if taken:
            state += f" (but {', '.join(taken)} in use by another process)"
    click.echo(f"Neo4j {settings.neo4j.version}: {state}")
    click.echo(f"  Bolt:     {st.bolt_uri}")
    click.echo(f"  Browser:  {st.browser_url}")
    click.echo(f"  data:     {st.home}")
    click.echo(f"  log:      {st.log}")
    click.echo(f"  jars:     {st.jars} ({'installed' if st.installed else 'not fetched yet'})")


@neo4j.command()
@_server_options
@click.pass_context
def password(
    ctx: click.Context, bolt_port: int | None, http_port: int | None, data_dir: Path | None
) -> None:
    """Print the managed server's password (to log into Neo4j Browser)."""
    settings = settings_from(ctx, _overrides(bolt_port, http_port, data_dir))
    from kgqa.graph.server import managed_password

    click.echo(managed_password(settings))
