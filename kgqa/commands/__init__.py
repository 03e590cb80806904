"""CLI commands, one module per area. Modules import only click at the top."""

from __future__ import annotations

from typing import Any

import click

from kgqa.settings import Settings, load_settings


def settings_from(ctx: click.Context, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for a command: CLI overrides (dotted keys such as ``"retrieval.top_k"``) over
    the environment, the config file and the defaults; ``None`` values are ignored."""
    root = ctx.find_root()
    config = root.obj.get("config") if root.obj else None
    return load_settings(overrides or {}, config=config)


def _commands() -> list[click.Command]:
    from kgqa.commands import (
        ask_cmd,
        eval_cmd,
        graph_cmds,
        index_cmd,
        neo4j_cmd,
        profile_cmd,
        reset_cmd,
        retrieve_cmd,
        serve_cmd,
    )

    return [
        neo4j_cmd.neo4j,
        graph_cmds.load,
        graph_cmds.stats,
        index_cmd.index,
        profile_cmd.profile,
        reset_cmd.reset,
        retrieve_cmd.retrieve,
        ask_cmd.ask,
        eval_cmd.eval,
        serve_cmd.serve,
    ]


COMMANDS = _commands()
