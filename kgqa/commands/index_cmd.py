"""``kgqa index``: embed the graph's triples into the vector index, or show its status."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from kgqa.commands import settings_from
from kgqa.errors import KGQAError

if TYPE_CHECKING:
    from kgqa.index.sync import IndexStatus, SyncReport


@click.command()
@click.option(
    "--rebuild",
    is_flag=True,
    help="Drop the index and embed every triple again (after changing embed.model).",
)
@click.option(
    "--status",
    is_flag=True,
    help="Show the manifest and whether the index matches the model and the graph; change "
    "nothing. Exits 6 when it reports a problem or the index is out of date, 4 when the graph "
    "cannot be read.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def index(ctx: click.Context, rebuild: bool, status: bool, as_json: bool) -> None:
    """Embed the graph's triples that the vector index lacks (reloads embed nothing)."""
    from kgqa.factory import Factory

    if rebuild and status:
        raise click.UsageError("--rebuild and --status exclude each other")
    settings = settings_from(ctx)
    with Factory(settings) as factory:
        if status:
            code = show_status(factory, as_json)
            if code:
                ctx.exit(code)
            return
        from kgqa.index.sync import sync_with_graph

        graph = factory.graph()
        if graph.stats().entities == 0:
            raise KGQAError(_no_entities(settings))
        # Entity linking and suggestions need the name index (for a graph kgqa did not load,
        # the one schema object kgqa creates in it).
        graph.ensure_name_index()
        report = sync_with_graph(
            factory.graph(),
            settings.index_dir,
            factory.embedder(),
            rebuild=rebuild,
            progress=not as_json,
        )
        profile = factory.derive_profile(progress=None if as_json else _say)
    if as_json:
        click.echo(json.dumps(_report_dict(report) | {"profile": _profile_dict(profile)}))
    else:
        click.echo(_report_line(report))
        click.echo(_profile_line(profile))


def _no_entities(settings: Any) -> str:
    s = settings.neo4j
    if (s.entity_labels, s.name_properties) == ("Entity", "name"):
        return f"the graph at {s.effective_uri} has no entities: load a KB first (`kgqa load FILE`)"
    return (
        f"no node with label(s) {s.entity_labels} has a property {s.name_properties} at "
        f"{s.effective_uri}: check neo4j.entity_labels and neo4j.name_properties"
    )


def _say(message: str) -> None:
    click.echo(message, err=True)


def _profile_dict(p: Any) -> dict[str, Any]:
    return {
        "relations": len(p.relations),
        "kinds": len(p.kinds),
        "examples": len(p.examples),
        "namer": p.namer,
        "fingerprint": p.fingerprint,
    }


def _profile_line(p: Any) -> str:
    return (
        f"derived the KB profile: {len(p.relations)} relations, {len(p.kinds)} kinds of node, "
        f"{len(p.examples)} example paths (named by {p.namer}; `kgqa profile show`)"
    )


def show_status(factory: Any, as_json: bool) -> int:
    """Print the index's status; the exit code: 0 in sync, that of
    :class:`~kgqa.errors.IndexMismatch` for a problem or an index out of date, that of
    :class:`~kgqa.errors.GraphUnavailable` when the graph could not be read to compare."""
    from kgqa.errors import GraphUnavailable, IndexMismatch
    from kgqa.index.sync import index_status

    settings = factory.settings
    graph_error = None
    try:
        ids = [t.id for t in factory.graph().all_triples()]
    except GraphUnavailable as e:
        ids, graph_error = None, str(e)
    st = index_status(settings.index_dir, factory.embedder(), ids)
    if st.problem or (st.graph_triples is not None and not st.in_sync):
        code = IndexMismatch.exit_code
    else:
        code = GraphUnavailable.exit_code if graph_error else 0
    if as_json:
        click.echo(json.dumps(_status_dict(st) | {"graph_error": graph_error}, indent=2))
        return code
    click.echo(f"index:    {st.index_dir}")
    m = st.manifest
    if m is not None:
        click.echo(f"model:    {m.model} ({m.dim}-d, {m.precision or 'float32'})")
        click.echo(f"vectors:  {m.count:,}  fingerprint {m.kb_fingerprint}")
        click.echo(f"created:  {m.created}  updated {m.updated}  (kgqa {m.kgqa_version})")
    if st.graph_triples is not None:
        click.echo(
            f"graph:    {st.graph_triples:,} triples; {st.missing:,} not embedded, "
            f"{st.stale:,} embedded but gone from the graph"
        )
    elif graph_error:
        click.echo(f"graph:    not checked ({graph_error})")
    if st.problem:
        click.echo(f"problem:  {st.problem}")
    elif st.in_sync:
        click.echo("status:   in sync")
    elif st.graph_triples is not None:
        click.echo("status:   out of date; run `kgqa index`")
    return code


def _report_dict(r: SyncReport) -> dict[str, Any]:
    return {
        "index_dir": r.index_dir,
        "model": r.model,
        "embedded": r.embedded,
        "already_present": r.already_present,
        "removed": r.removed,
        "total": r.total,
        "seconds": round(r.seconds, 2),
        "triples_per_s": round(r.rate, 1),
    }


def _report_line(r: SyncReport) -> str:
    rate = f" ({r.rate:,.0f} triples/s)" if r.embedded else ""
    removed = f", removed {r.removed:,}" if r.removed else ""
    return (
        f"embedded {r.embedded:,} triples in {r.seconds:.1f} s{rate}, {r.already_present:,} "
        f"already present{removed}; the index holds {r.total:,} ({r.index_dir})"
    )


def _status_dict(st: IndexStatus) -> dict[str, Any]:
    from dataclasses import asdict

    data = asdict(st)
    data["in_sync"] = st.in_sync
    return data
