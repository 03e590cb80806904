"""``kgqa reset``: empty the graph and its vector index and KB profile, to load another KB."""

from __future__ import annotations

from pathlib import Path

import click

from kgqa.commands import settings_from


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def reset(ctx: click.Context, yes: bool) -> None:
    """Delete every entity and triple of the graph (saved runs too), and its vector index and
    KB profile. The schema (constraint, full-text index) stays for the next load."""
    from kgqa.factory import Factory

    settings = settings_from(ctx)
    with Factory(settings) as factory:
        store = factory.graph()
        if not store.schema.native:
            # A graph kgqa did not load is the user's: only what kgqa wrote goes.
            if not yes:
                click.confirm(
                    "This graph is read through neo4j.entity_labels/name_properties: kgqa will "
                    "delete only its saved runs and its name index, and the local vector index "
                    f"and profile in {settings.index_dir}. Go on?",
                    abort=True,
                )
            runs, dropped = store.delete_kgqa_objects()
            removed = _remove_local(settings.index_dir)
            click.echo(
                f"deleted {runs:,} saved runs"
                + (", dropped the name index" if dropped else "")
                + (f"; removed {', '.join(removed)} from {settings.index_dir}" if removed else "")
                + "; the graph's own nodes and relationships are untouched"
            )
            return
        stats = store.stats()
        where = f"{settings.neo4j.effective_uri}, database {settings.neo4j.database!r}"
        if not yes:
            click.confirm(
                f"Delete {stats.entities:,} entities and {stats.relationships:,} triples from "
                f"{where}, and the index in {settings.index_dir}?",
                abort=True,
            )
        store.clear()
    removed = _remove_local(settings.index_dir)
    click.echo(
        f"deleted {stats.entities:,} entities and {stats.relationships:,} triples from {where}"
        + (f"; removed {', '.join(removed)} from {settings.index_dir}" if removed else "")
    )


def _remove_local(index_dir: Path) -> list[str]:
    """Remove the vector index and the KB profile (the manifest first: an index without its
    manifest is no index)."""
    from kgqa.index.faiss_index import INDEX_FILE, MANIFEST_FILE
    from kgqa.profile.model import PROFILE_FILE

    removed = []
    for name in (MANIFEST_FILE, INDEX_FILE, PROFILE_FILE):
        path = index_dir / name
        if path.is_file():
            path.unlink()
            removed.append(name)
    return removed
