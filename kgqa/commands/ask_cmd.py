"""``kgqa ask``: answer one question and show the work (sub-questions, triples, costs).

The output is built as a list of titled sections so that more can be appended (the Cypher
that opens the evidence in Neo4j Browser); ``--json`` prints the same content as one object.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

# The [bracketed] topic entities, the answer document and its stage totals are written once, in
# kgqa.answers and kgqa.document (light imports: --help stays instant); ask uses them by these
# names.
from kgqa.commands import settings_from
from kgqa.document import stage_totals
from kgqa.modes import MODES, RETRIEVING

if TYPE_CHECKING:
    from kgqa.types import Answer

MODE_CHOICES = MODES
SHOWN_TRIPLES = 5
SHOWN_ENTITIES = 10
SHOWN_SUPPORT = 3
_EXPLANATION_LABEL = re.compile(r"^\s*(?:\*\*)?explanation\s*:\s*(?:\*\*)?\s*", re.I)


def answer_sections(answer: Answer) -> list[tuple[str, str]]:
    """``(title, body)`` sections of the text output, in order."""
    from kgqa.answers import answer_line

    sections = [("Answer", answer_line(answer.text) or "(empty)")]
    notes = answer_notes(answer)
    if notes:
        sections.append(("Warnings", "\n".join(notes)))
    rest = answer.text.strip().split("\n", 1)
    if len(rest) > 1 and rest[1].strip():
        # The synthesis labels its explanation line itself; the section title says it once.
        sections.append(("Explanation", _EXPLANATION_LABEL.sub("", rest[1].strip(), count=1)))
    if answer.answer_entities:
        sections.append(
            ("Answer entities (KG nodes and the triples that support them)", _entity_lines(answer))
        )
    if answer.reasoning:
        sections.append(("Chain of thought", answer.reasoning))
    if answer.sub_answers:
        blocks = []
        for s in answer.sub_answers:
            lines = [f"{s.index}. {s.original}"]
            if s.reformulated != s.original:
                lines.append(f"   reformulated: {s.reformulated}")
            cut = "  [cut at the token limit]" if s.cut else ""
            lines.append(f"   answer: {s.answer}{cut}")
            if s.evidence:
                lines.append(
                    f"   top triples ({min(SHOWN_TRIPLES, len(s.evidence))} of {len(s.evidence)}):"
                )
                lines += [
                    f"     {st.score:7.3f}  {st.triple.verbalize()}  #{st.triple.id}"
                    for st in s.evidence[:SHOWN_TRIPLES]
                ]
            blocks.append("\n".join(lines))
        sections.append(("Sub-questions", "\n".join(blocks)))
    sections.append(("Cost", _cost_table(answer)))
    return sections


def answer_notes(answer: Answer) -> list[str]:
    """What the reader must know to trust the answer less: LLM output cut at the token limit,
    triples left out of a prompt so that it fits the context window."""
    notes = []
    if answer.cut_stages:
        notes.append(
            f"the LLM stopped at its token limit (llm.max_tokens "
            f"{answer.parameters.get('max_tokens')}) in: {', '.join(answer.cut_stages)}; that "
            "output may be cut short (a last answer name cut mid-way is not linked to the graph)"
        )
    left_out = answer.parameters.get("triples_cut_to_fit")
    if isinstance(left_out, int) and left_out:
        notes.append(
            f"{left_out:,} of the top-K triples were left out of the answer prompts to fit the "
            "LLM's context window (llm.n_ctx); the ones shown are those it read"
        )
    return notes


def _entity_lines(answer: Answer) -> str:
    known = {st.triple.id: st.triple for s in answer.sub_answers for st in s.evidence}
    lines = []
    for i, e in enumerate(answer.answer_entities[:SHOWN_ENTITIES], 1):
        lines.append(f"{i}. {e.name}  (node {e.node_id or 'not in the KB'})")
        if not e.support:
            lines.append("     no supporting triple: the answer states it without evidence")
        for tid in e.support[:SHOWN_SUPPORT]:
            t = known.get(tid)
            lines.append(f"     #{tid}  {t.verbalize()}" if t else f"     #{tid}")
        if len(e.support) > SHOWN_SUPPORT:
            lines.append(f"     ... {len(e.support) - SHOWN_SUPPORT} more (--json lists all)")
    more = len(answer.answer_entities) - SHOWN_ENTITIES
    if more > 0:
        lines.append(f"... and {more} more (--json lists all)")
    if answer.from_text:
        lines.append("(read from the answer text; support = the retrieved triples linking it)")
    return "\n".join(lines)


def _cost_table(answer: Answer) -> str:
    rows = [f"{'stage':<12} {'calls':>5} {'seconds':>8} {'prompt tok':>10} {'output tok':>10}"]
    for stage, t in stage_totals(answer).items():
        rows.append(
            f"{stage:<12} {int(t['calls']):>5} {t['seconds']:>8.2f} "
            f"{int(t['prompt_tokens']):>10} {int(t['completion_tokens']):>10}"
        )
    total = sum(c.seconds for c in answer.costs)
    rows.append(f"{'total':<12} {len(answer.costs):>5} {total:>8.2f}")
    p = answer.parameters
    served = ""
    if p.get("llm_backend") == "openai":
        constrained = f", output held by {p['constrained_by']}" if p.get("constrained_by") else ""
        served = f" at {p.get('llm_base_url')}{constrained}"
    rows.append(f"mode {answer.mode}, model {p.get('model')}{served}, seed {p.get('seed')}")
    if answer.mode in RETRIEVING:
        trunc = " (truncated)" if answer.truncated else ""
        rows.append(
            f"hops {p.get('hops')}, top-k {p.get('top_k')}, "
            f"{answer.candidates_count} candidate triples{trunc}"
        )
    return "\n".join(rows)


def format_sections(sections: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(
        f"{title}\n" + "\n".join("  " + line for line in body.splitlines())
        for title, body in sections
    )


def process_age() -> float | None:
    """Seconds since this process started (the interpreter's start included), from the
    kernel's clock; ``None`` where /proc is not there."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            # The command name (field 2) may hold spaces: count fields after its ")".
            started = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return round(uptime - started / os.sysconf("SC_CLK_TCK"), 2)


@click.command()
@click.argument("question")
@click.option(
    "--entity",
    "entities",
    multiple=True,
    help="Topic entity (repeatable); default: the [Bracketed] names in the question.",
)
@click.option(
    "--mode",
    type=click.Choice(MODE_CHOICES),
    default="graph",
    show_default=True,
    help="kgrag: full system; kaping: graph, no decomposition; qd: decomposition, no graph; "
    "llm: the question alone; graph: graph-constrained hops, answers are KG entities.",
)
@click.option("--hops", type=click.IntRange(1, 3), help="Candidate radius N (default: settings).")
@click.option("--top-k", type=click.IntRange(1), help="Triples per sub-question K.")
@click.option("--model", help="Model name (qwen2.5-coder-1.5b, qwen2.5-coder-0.5b) or GGUF path.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option(
    "--save",
    is_flag=True,
    help="Keep the run in Neo4j as a :KgqaRun node to browse later (docs/browser.md).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Check the answer against the graph: mistakes and omissions (docs/faithfulness.md).",
)
@click.option(
    "--profile",
    "profile_file",
    help="A KB profile file over the derived one: a path, or a packaged name (metaqa).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Answer afresh: neither read nor write the answer cache (docs/server.md).",
)
@click.pass_context
def ask(
    ctx: click.Context,
    question: str,
    entities: tuple[str, ...],
    mode: str,
    hops: int | None,
    top_k: int | None,
    model: str | None,
    as_json: bool,
    save: bool,
    check: bool,
    profile_file: str | None,
    no_cache: bool,
) -> None:
    """Answer QUESTION and show the sub-questions, triples and cost behind the answer."""
    from kgqa.cache import AnswerCache
    from kgqa.factory import Factory
    from kgqa.service import ask as ask_question

    settings = settings_from(
        ctx,
        {
            "retrieval.hops": hops,
            "retrieval.top_k": top_k,
            "llm.model": model,
            "profile.file": profile_file,
        },
    )

    def log(message: str) -> None:
        click.echo(message, err=True)

    cache = None
    if settings.answer_cache.enabled and not no_cache:
        cache = AnswerCache(settings.answer_cache_dir, settings.answer_cache.size_mb, log=log)
    with Factory(settings, log=log, one_question=True) as factory:
        try:
            result = ask_question(
                factory, question, entities=entities, mode=mode, check=check, save=save,
                cache=cache,
            )  # fmt: skip
        finally:
            if cache is not None:
                cache.close()
        startup = factory.startup_timings()
    if result.linked is not None:
        click.echo(f"linked entity: {result.linked}", err=True)
    if result.cache is not None and result.cache.hit:
        click.echo(
            f"answer from the cache (stored {result.cache.stored_at}; --no-cache answers afresh)",
            err=True,
        )
    if as_json:
        doc = result.to_json()
        # This process's start-up beside the stages: from kgqa's import to the answer.
        doc["timings"]["startup"] = {
            **startup,
            "process_seconds": process_age(),
        }
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    from kgqa.graph.inspect import browser_url, run_cypher

    answer = result.answer
    sections = answer_sections(answer)
    if result.report is not None:
        sections.append(("Faithfulness check", result.report.format(answer)))
    url = browser_url(settings.neo4j.http_port)
    sections.append((f"Cypher for Neo4j Browser (paste into {url}):", result.browser_cypher))
    if result.run_id is not None:
        sections.append(
            (f"Saved run {result.run_id} (to show it in Browser):", run_cypher(result.run_id))
        )
    click.echo(format_sections(sections))
