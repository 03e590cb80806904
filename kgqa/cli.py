"""The ``kgqa`` command: thin click wrappers over library calls.

Heavy imports happen inside the commands so that ``kgqa --help`` is instant. Every
:class:`~kgqa.errors.KGQAError` becomes one line on stderr and its exit code, in one place.
An ``OSError`` that reaches here (a folder kgqa may not write, a full disk) is one line too,
exit code :data:`IO_EXIT_CODE`. Any other exception is a bug in kgqa: one line that says so and
how to report it, exit code :data:`BUG_EXIT_CODE`. ``KGQA_DEBUG=1`` shows the traceback
instead.
"""

from __future__ import annotations

import os
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


# EX_SOFTWARE and EX_IOERR (sysexits.h): an internal error; a file the system would not read
# or write.
BUG_EXIT_CODE = 70
IO_EXIT_CODE = 74
DEBUG_ENV = "KGQA_DEBUG"


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="kgqa", standalone_mode=False)
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
    except OSError as e:
        # The machine, not kgqa: a file or folder it cannot read or write, a full disk.
        if _debug():
            raise
        where = f": {e.filename}" if e.filename else ""
        click.echo(f"kgqa: error: {_one_line(e.strerror or str(e))}{where}", err=True)
        sys.exit(IO_EXIT_CODE)
    except Exception as e:
        if _debug():
            raise
        where = _innermost_frame(e)
        click.echo(
            f"kgqa: internal error (this is a bug in kgqa {__version__}): "
            f"{type(e).__name__}: {_one_line(str(e))}{where}; please report it with the "
            f"command you ran and its traceback ({DEBUG_ENV}=1 shows it)",
            err=True,
        )
        sys.exit(BUG_EXIT_CODE)
    # A command that ends with ctx.exit(code) (``kgqa index --status`` with a problem).
    if isinstance(code, int) and code:
        sys.exit(code)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _innermost_frame(error: BaseException) -> str:
    """`` at kgqa/x.py:12`` for the innermost frame in kgqa's own code, if any."""
    import traceback

    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/kgqa/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" at kgqa/{f.filename.rsplit('/kgqa/', 1)[1]}:{f.lineno}"
