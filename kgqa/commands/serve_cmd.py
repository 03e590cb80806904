"""``kgqa serve``: the HTTP API (kgqa.server), on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import click

from kgqa.commands import settings_from


@click.command()
@click.option("--host", help="Address to bind (default: server.host, 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default: server.port, 8000).")
@click.option("--no-cache", is_flag=True, help="Serve without the answer cache.")
@click.pass_context
def serve(ctx: click.Context, host: str | None, port: int | None, no_cache: bool) -> None:
    """Serve the API (POST /v1/ask, streamed with Accept: text/event-stream; docs/server.md).

    Connects to Neo4j and loads the models first; set KGQA_API_TOKEN to require a bearer
    token."""
    import uvicorn

    from kgqa.cache import AnswerCache
    from kgqa.factory import Factory
    from kgqa.server.app import create_app
    from kgqa.server.state import ServerState

    settings = settings_from(ctx, {"server.host": host, "server.port": port})
    s = settings.server

    def log(message: str) -> None:
        click.echo(message, err=True)

    cache = None
    if settings.answer_cache.enabled and not no_cache:
        cache = AnswerCache(settings.answer_cache_dir, settings.answer_cache.size_mb, log=log)
    with Factory(settings, log=log) as factory:
        state = ServerState(factory, cache)
        try:
            log("kgqa serve: connecting to Neo4j and loading the models ...")
            state.warm_up()
            app = create_app(state)
            token = "required" if s.api_token else "off"
            log(
                f"kgqa serve: http://{s.host}:{s.port} (bearer token {token}; "
                f"queue {s.queue_size}; cache {'on' if cache else 'off'})"
            )
            uvicorn.run(app, host=s.host, port=s.port, log_level="info", access_log=True)
        finally:
            state.close()
