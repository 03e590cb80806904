"""The ``kgqa`` command: thin click wrappers over library calls.

Heavy imports happen inside the commands so that ``kgqa --help`` is instant. Every
:class:`~kgqa.errors.KGQAError` becomes one line on stderr and its exit code, in one place.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kgqa import __version__
from kgqa.commands import COMMANDS
from kgqa.errors import KGQAError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgqa")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML config file (default: ./kgqa.toml or ~/.config/kgqa/config.toml).",
)
@click.pass_context
def cli(ctx: click.Context, config: Path | None) -> None:
    """Explainable question answering over a Neo4j knowledge graph with a local LLM."""
    ctx.obj = {"config": config}


for command in COMMANDS:
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="kgqa", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("kgqa: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except KGQAError as e:
        click.echo(f"kgqa: error: {e}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("kgqa: interrupted", err=True)
        sys.exit(130)
