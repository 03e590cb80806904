"""``kgqa load KB`` and ``kgqa stats``: thin wrappers over kgqa.graph.load and the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kgqa.commands import settings_from

if TYPE_CHECKING:
    from kgqa.factory import Factory
    from kgqa.graph.load import LoadReport, OnError
    from kgqa.loaders import ReadOptions


@click.command()
@click.argument("kb", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    default=None,
    help="KB reader: metaqa ('subject|relation|object' lines), csv, tsv, jsonl, nt "
    "(N-Triples), ttl (Turtle). Default: from the extension (.txt = metaqa, .csv, .tsv, "
    ".jsonl, .nt, .ttl). See docs/loading.md.",
)
@click.option(
    "--columns",
    callback=lambda ctx, param, value: _three(value),
    help="csv/tsv: the subject,relation,object columns, by header name or 0-based index "
    "(default: the first three, or the columns named subject, relation, object); "
    "jsonl: the three keys (default: subject,relation,object).",
)
@click.option(
    "--header/--no-header",
    default=None,
    help="csv/tsv: whether the first row is a header (default: yes when --columns names "
    "columns or the row names subject, relation and object).",
)
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="fail: write nothing if any line is bad; skip: load the valid lines, report the rest.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Triples per write transaction.",
)
@click.option("--no-index", is_flag=True, help="Load the graph only; skip the vector index.")
@click.pass_context
def load(
    ctx: click.Context,
    kb: Path,
    fmt: str | None,
    columns: tuple[str, str, str] | None,
    header: bool | None,
    on_error: OnError,
    batch_size: int,
    no_index: bool,
) -> None:
    """Import the triples of KB into Neo4j (idempotent: loading again changes nothing)."""
    from kgqa.factory import Factory
    from kgqa.loaders import ReadOptions

    options = ReadOptions(columns=columns, header=header)
    settings = settings_from(ctx)
    if (settings.neo4j.entity_labels, settings.neo4j.name_properties) != ("Entity", "name"):
        from kgqa.errors import ConfigError

        raise ConfigError(
            "kgqa loads only into its own schema ((:Entity {name})); neo4j.entity_labels / "
            "neo4j.name_properties describe a graph kgqa reads as it is: unset them, or use "
            "another database"
        )
    with Factory(settings) as factory:
        report = load_graph(
            factory, kb, fmt=fmt, options=options, on_error=on_error, batch_size=batch_size
        )
        click.echo(report.summary())
        if report.rejected:
            from kgqa.graph.load import describe_problems

            click.echo(f"skipped {report.rejected:,} bad lines:", err=True)
            click.echo(describe_problems(report.problems, total=report.rejected), err=True)
        if not no_index:
            # Embed once, at load time: only the graph's triples the index lacks (a reload
            # embeds nothing); an interrupted embedding resumes on the next load or `kgqa index`.
            from kgqa.commands.index_cmd import _report_line
            from kgqa.index.sync import sync_with_graph

            settings = factory.settings
            sync = sync_with_graph(factory.graph(), settings.index_dir, factory.embedder())
            click.echo(_report_line(sync))
            # The KB profile (relation words, steps, examples) is derived with the index and
            # stored beside it.
            from kgqa.commands.index_cmd import _profile_line, _say

            click.echo(_profile_line(factory.derive_profile(progress=_say)))


def _three(value: str | None) -> tuple[str, str, str] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    if len(parts) != 3 or not all(parts):
        raise click.BadParameter(
            f"expected three columns, subject,relation,object (names or 0-based indexes), "
            f"got {value!r}"
        )
    return parts[0], parts[1], parts[2]


def load_graph(
    factory: Factory,
    kb: Path,
    *,
    fmt: str | None = None,
    options: ReadOptions | None = None,
    on_error: OnError = "fail",
    batch_size: int = 10_000,
) -> LoadReport:
    """Check ``kb``, then stream it into the graph, with a progress bar on stderr."""
    from tqdm import tqdm

    from kgqa.graph.load import check_kb, load_kb
    from kgqa.loaders import open_kb

    opened = open_kb(kb, fmt, options)
    # Check every line before connecting: a user fixing the file needs no server.
    checked = check_kb(opened, on_error)
    store = factory.graph()
    # disable=None: no bar when stderr is not a terminal (CI logs, pipes).
    with tqdm(
        total=checked.triples, unit="triple", unit_scale=True, desc="loading", disable=None
    ) as bar:
        return load_kb(
            store,
            opened,
            batch_size=batch_size,
            on_error=on_error,
            progress=bar.update,
            checked=checked,
        )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Print the graph's entity, relationship and triple-id counts, per relation too."""
    from kgqa.factory import Factory

    with Factory(settings_from(ctx)) as factory:
        graph_stats = factory.graph().stats()
    if as_json:
        click.echo(json.dumps(graph_stats.to_dict(), indent=2))
        return
    click.echo(f"entities       {graph_stats.entities:>10,}")
    click.echo(f"relationships  {graph_stats.relationships:>10,}")
    click.echo(f"triple ids     {graph_stats.triple_ids:>10,}")
    for relation, count in graph_stats.by_relation:
        click.echo(f"  {relation:<24} {count:>10,}")
