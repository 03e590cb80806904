"""``kgqa profile show|derive``: the KB profile that kgqa derived from the graph (its words,
node kinds, step grammar and in-context examples), with a profile file's overrides applied."""

from __future__ import annotations

import json

import click

from kgqa.commands import settings_from


@click.group()
def profile() -> None:
    """The KB profile: what kgqa knows about this graph's relations (derived from it)."""


@profile.command()
@click.option("--json", "as_json", is_flag=True, help="Print the whole profile as JSON.")
@click.option(
    "--file",
    "profile_file",
    help="Apply this profile file (a path, or a packaged name such as metaqa) over it.",
)
@click.pass_context
def show(ctx: click.Context, as_json: bool, profile_file: str | None) -> None:
    """Print the profile: relations and their words, kinds, steps, examples."""
    from kgqa.factory import Factory

    settings = settings_from(ctx, {"profile.file": profile_file})
    with Factory(settings, log=lambda m: click.echo(m, err=True)) as factory:
        p = factory.profile()
    if as_json:
        click.echo(json.dumps(p.to_json(), indent=1, ensure_ascii=False))
        return
    from kgqa.graphmode.vocabulary import StepVocabulary

    vocab = StepVocabulary(p)
    click.echo(f"profile:   {p.source} (named by {p.namer}; {p.created})")
    click.echo(f"KB:        {p.fingerprint}")
    click.echo(f"relations: {len(p.relations)}")
    for r in sorted(p.relations.values(), key=lambda r: (-r.count, r.relation)):
        w = r.words
        inverse = ""
        if r.symmetric:
            inverse = "  [symmetric]"
        elif r.inverse:
            inverse = f"  [inverse of {r.inverse}]"
        click.echo(f"  {r.relation}  ({r.count:,} triples, words from {w.source}){inverse}")
        click.echo(f"      {w.subject} --{w.verb}--> {w.object}")
        if w.ask_object or w.ask_subject:
            click.echo(f"      asks: {w.ask_object!r} / {w.ask_subject!r}")
        if r.examples:
            s, o = r.examples[0]
            click.echo(f"      e.g.  ({s}, {r.relation}, {o})")
    click.echo("kinds of node:")
    for k in p.kinds:
        ends = ", ".join(f"{e.relation} {'out' if e.outgoing else 'in'}" for e in k.ends)
        click.echo(f"  {k.name}: reached by {ends}")
    click.echo("steps (and what may follow each):")
    for step in vocab.steps:
        nxt = vocab.options_after(step)
        text = vocab.write([step], "X")[0]
        click.echo(f"  {text:<40} -> {len(nxt)} next step(s)")
    click.echo(f"examples ({len(p.examples)}):")
    for e in p.examples:
        shown = " | ".join(e.steps) if e.steps else " | ".join(e.sub_questions)
        click.echo(f"  {e.question}\n      {shown}")
    if p.stop_words:
        click.echo(f"stop words: {', '.join(sorted(p.stop_words))}")


@profile.command()
@click.pass_context
def derive(ctx: click.Context) -> None:
    """Derive the profile from the graph again and store it beside the index."""
    from kgqa.factory import Factory

    with Factory(settings_from(ctx)) as factory:
        p = factory.derive_profile(progress=lambda m: click.echo(m, err=True))
    click.echo(
        f"derived the KB profile: {len(p.relations)} relations, {len(p.kinds)} kinds, "
        f"{len(p.examples)} examples ({factory.settings.index_dir})"
    )
