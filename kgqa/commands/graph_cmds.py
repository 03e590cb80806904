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


@click.command()
@click.argument("kb", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    default="metaqa",
    show_default=True,
    help="KB reader: metaqa = one 'subject|relation|object' triple per line.",
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
    help="Rows per write transaction.",
)
@click.option("--no-index", is_flag=True, help="Load the graph only; skip the vector index.")
@click.pass_context
def load(
    ctx: click.Context, kb: Path, fmt: str, on_error: OnError, batch_size: int, no_index: bool
) -> None:
    """Import the triples of KB into Neo4j (idempotent: loading again changes nothing)."""
    from kgqa.factory import Factory

    with Factory(settings_from(ctx)) as factory:
        report = load_graph(factory, kb, fmt=fmt, on_error=on_error, batch_size=batch_size)
        click.echo(report.summary())
        if report.problems:
            from kgqa.graph.load import describe_problems

            click.echo(f"skipped {len(report.problems):,} bad lines:", err=True)
            click.echo(describe_problems(report.problems), err=True)
        if not no_index:
            # Embed once, at load time: only the graph's triples the index lacks (a reload
            # embeds nothing); an interrupted embedding resumes on the next load or `kgqa index`.
            from kgqa.commands.index_cmd import _report_line
            from kgqa.index.sync import sync_with_graph

            settings = factory.settings
            sync = sync_with_graph(factory.graph(), settings.index_dir, factory.embedder())
            click.echo(_report_line(sync))


def load_graph(
    factory: Factory, kb: Path, *, fmt: str, on_error: OnError, batch_size: int
) -> LoadReport:
    """Parse ``kb`` and write it into the graph, with a progress bar on stderr."""
    from tqdm import tqdm

    from kgqa.graph.load import check_problems, load_kb
    from kgqa.loaders import get as get_reader

    parsed = get_reader(fmt)(kb)
    # Fail on bad lines before connecting: a user fixing the file needs no server.
    check_problems(parsed, on_error)
    store = factory.graph()
    total = len(parsed.entities) + len(parsed.triples)
    # disable=None: no bar when stderr is not a terminal (CI logs, pipes).
    with tqdm(total=total, unit="row", unit_scale=True, desc="loading", disable=None) as bar:
        return load_kb(store, parsed, batch_size=batch_size, on_error=on_error, progress=bar.update)


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
