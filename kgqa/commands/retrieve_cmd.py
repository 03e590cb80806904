"""``kgqa retrieve``: candidates and top-K triples for a question (prompt debugging)."""

from __future__ import annotations

import json

import click

from kgqa.commands import settings_from


@click.command()
@click.argument("question")
@click.option(
    "--entity",
    "-e",
    "entities",
    multiple=True,
    help="Topic entity (repeatable); default: [bracketed] names.",
)
@click.option("--hops", type=click.IntRange(1, 3), help="Candidate radius N (default 3).")
@click.option("--top-k", type=click.IntRange(1), help="How many triples to keep (default 30).")
@click.option(
    "--hub-cap",
    type=click.IntRange(0),
    help="Do not expand through nodes with more relationships (0: no cap).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def retrieve(
    ctx: click.Context,
    question: str,
    entities: tuple[str, ...],
    hops: int | None,
    top_k: int | None,
    hub_cap: int | None,
    as_json: bool,
) -> None:
    """Print the candidate triples around the topic entities and the top-K for QUESTION."""
    from kgqa.answers import topic_names
    from kgqa.factory import Factory

    settings = settings_from(
        ctx, {"retrieval.hops": hops, "retrieval.top_k": top_k, "retrieval.hub_cap": hub_cap}
    )
    names = topic_names(question, entities)
    r = settings.retrieval
    with Factory(settings) as factory:
        retriever = factory.retriever()
        candidates = retriever.candidates(names, r.hops)
        # The question as `ask --mode kaping` ranks with it (brackets and all): what is shown
        # is what the answer would use.
        top = retriever.top_k(question, candidates, r.top_k)
    if as_json:
        from kgqa.document import retrieval_document

        doc = retrieval_document(question, names, r.hops, candidates, top)
        click.echo(json.dumps(doc, ensure_ascii=False))
        return
    per_hop = ", ".join(f"hop {i + 1}: {len(h)}" for i, h in enumerate(candidates.by_hop))
    click.echo(f"entities: {', '.join(names)}")
    click.echo(
        f"candidates: {len(candidates)} ({per_hop}) in {candidates.seconds * 1000:.0f} ms"
        + ("  [TRUNCATED at retrieval.max_candidates]" if candidates.truncated else "")
    )
    if candidates.skipped_hubs:
        hubs = ", ".join(f"{n} ({d})" for n, d in candidates.skipped_hubs[:10])
        click.echo(f"hubs not expanded (degree > {r.hub_cap}): {hubs}")
    click.echo(f"top {len(top)}:")
    for s in top:
        click.echo(f"  {s.score:7.3f}  {s.triple.verbalize()}  [id {s.triple.id}]")
