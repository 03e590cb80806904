"""``kgqa reset``: empty the graph and its vector index and KB profile, to load another KB."""

from __future__ import annotations

import click

from kgqa.commands import settings_from


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def reset(ctx: click.Context, yes: bool) -> None:
    """Delete every entity and triple of the graph (saved runs too), and its vector index and
    KB profile. The schema (constraint, full-text index) stays for the next load."""
    from kgqa.factory import Factory
    from kgqa.index.faiss_index import INDEX_FILE, MANIFEST_FILE
    from kgqa.profile.model import PROFILE_FILE

    settings = settings_from(ctx)
    with Factory(settings) as factory:
        store = factory.graph()
        stats = store.stats()
        where = f"{settings.neo4j.effective_uri}, database {settings.neo4j.database!r}"
        if not yes:
            click.confirm(
                f"Delete {stats.entities:,} entities and {stats.relationships:,} triples from "
                f"{where}, and the index in {settings.index_dir}?",
                abort=True,
            )
        store.clear()
    removed = []
    # The manifest first: an index without its manifest is no index.
    for name in (MANIFEST_FILE, INDEX_FILE, PROFILE_FILE):
        path = settings.index_dir / name
        if path.is_file():
            path.unlink()
            removed.append(name)
    click.echo(
        f"deleted {stats.entities:,} entities and {stats.relationships:,} triples from {where}"
        + (f"; removed {', '.join(removed)} from {settings.index_dir}" if removed else "")
    )
