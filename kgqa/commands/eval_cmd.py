"""``kgqa eval``: benchmark runs (MetaQA, or any dataset in its layout), the paper's two
experiments, and reports.

Thin wrappers: parse the options, call one function of :mod:`kgqa.eval.experiments` (or
:func:`kgqa.eval.report.write_report`), render its result. The pipelines, the retriever and
the graph reads come from :class:`kgqa.factory.Factory`, built only when a command runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from kgqa.commands import settings_from
from kgqa.errors import ConfigError
from kgqa.modes import MODES
from kgqa.settings import Settings

# The keys of kgqa.eval.experiments.QTYPE_READERS (a unit test keeps them equal); written out
# here so that `kgqa --help` does not import the eval library.
QTYPES = ("metaqa", "none")
DEFAULT_DATA = Path("../shared/metaqa")
# Small enough to finish on a 2-core CPU (the full pipeline costs minutes per 3-hop question).
DEFAULT_LLM_LIMIT = 5
DEFAULT_CEILING_LIMIT = 200


def parse_ints(text: str, name: str) -> list[int]:
    """``"0-9"``, ``"0,2,5"`` or ``"0-3,7"`` -> sorted distinct ints."""
    values: set[int] = set()
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part[1:]:
                lo, hi = part.split("-", 1) if not part.startswith("-") else ("", "")
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError(part)
                values.update(range(a, b + 1))
            else:
                values.add(int(part))
    except ValueError as e:
        raise click.BadParameter(f"{text!r}: use a list like 0-9 or 0,2,5", param_hint=name) from e
    if not values:
        raise click.BadParameter("give at least one value", param_hint=name)
    return sorted(values)


def resolve_data(data: Path | None) -> Path:
    """``--data``, else ``../shared/metaqa`` relative to the working directory when present."""
    if data is not None:
        if not data.is_dir():
            raise ConfigError(f"--data {data} is not a directory")
        return data
    if DEFAULT_DATA.is_dir():
        return DEFAULT_DATA
    raise ConfigError(
        f"no data folder at {DEFAULT_DATA} (relative to {Path.cwd()}); pass --data DIR, a folder "
        "with 1-hop/qa_dev.txt, 2-hop/..., conj/... and kb.txt"
    )


def parse_sets(text: str | None, dataset: Any) -> list[Any]:
    """``"1,2,conj"``, ``"1-3"``, ``"2-hop"`` -> question sets; ``None``: every set the data
    folder has."""
    from kgqa.eval.datasets import QuestionSet

    if text is None:
        sets = dataset.sets()
        if not sets:
            raise ConfigError(f"{dataset.root} has no question sets (1-hop/, 2-hop/, conj/ ...)")
        return sets
    out: list[Any] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part[0].isdigit() and not part.endswith("-hop"):
            out += [QuestionSet.named(str(h)) for h in parse_ints(part, "--hops")]
        else:
            out.append(QuestionSet.named(part))
    if not out:
        raise click.BadParameter("give at least one question set", param_hint="--hops")
    return list(dict.fromkeys(out))


@contextmanager
def _factory(settings: Settings) -> Iterator[Any]:
    from kgqa.factory import Factory

    factory = Factory(settings)
    try:
        yield factory
    finally:
        factory.close()


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, default=str))


def _echo_run(result: Any, as_json: bool) -> None:
    from kgqa.eval.faithfulness import format_summary
    from kgqa.eval.report import format_aggregate

    if as_json:
        _echo_json({**result.aggregate, "run_dir": str(result.out_dir)})
        return
    title = f"{result.out_dir}  ({result.answered} answered now, {result.resumed} resumed)"
    click.echo(format_aggregate(result.aggregate, title))
    if line := format_summary(result.aggregate):
        click.echo(line)


def _echo_table(table: Any, as_json: bool) -> None:
    from kgqa.eval.report import format_rows

    if as_json:
        _echo_json(table.rows)
    else:
        click.echo(format_rows(table.rows, table.keys, table.metrics))


# -- options shared by the commands ----------------------------------------------------------


def _options(*options: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[..., Any]:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


_common = _options(
    click.option(
        "--data",
        type=click.Path(file_okay=False, path_type=Path),
        help="Data folder in MetaQA's layout (default: ../shared/metaqa when present).",
    ),
    click.option(
        "--split",
        type=click.Choice(["dev", "test"]),
        default="dev",
        show_default=True,
        help="Question split.",
    ),
    click.option("--model", help="LLM: a known model name or a GGUF path (default: settings)."),
    click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    click.option("--no-progress", is_flag=True, help="No progress bar."),
)
_qtypes = click.option(
    "--qtypes",
    type=click.Choice(QTYPES),
    default="metaqa",
    show_default=True,
    help="How qa_<split>_qtype.txt labels become gold relation paths for the check's "
    "omissions: metaqa (MetaQA's movie_to_X labels) or none (labels kept, not read). A data "
    "folder without qtype files needs neither.",
)
_no_check = click.option(
    "--no-check",
    is_flag=True,
    help="Skip the faithfulness check (mistakes and omissions against the graph).",
)
_sets = click.option(
    "--hops",
    "sets_text",
    help="Question sets, e.g. 1,2,3, 2 or 1,conj (default: every set the data folder has).",
)
_runs_folder = click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Parent folder of the run directories.",
)
_one_run = _options(
    click.option("--limit", type=click.IntRange(min=1), help="Seeded sample size (default: all)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Sample seed."),
    click.option(
        "--mode",
        type=click.Choice(MODES),
        default="kgrag",
        show_default=True,
        help="Pipeline mode.",
    ),
    click.option(
        "--n-hops",
        type=click.IntRange(1, 3),
        help="Candidate retrieval hops N (default: settings).",
    ),
    click.option(
        "--top-k",
        type=click.IntRange(min=1),
        help="Top-K triples per sub-question (default: settings).",
    ),
    click.option(
        "--out",
        type=click.Path(file_okay=False, path_type=Path),
        help="Run directory (default: runs/<data folder>-<set>-<config>).",
    ),
    click.option(
        "--retry-errors", is_flag=True, help="Answer again the questions that failed before."
    ),
    click.option(
        "--no-ceiling",
        is_flag=True,
        help="Do not look for the gold answers among the candidates (saves one query per question).",
    ),
    _no_check,
)


@click.group("eval")
def eval() -> None:  # shadows the builtin only inside this module: the command's name
    """Benchmark runs on MetaQA or any dataset in its layout, the paper's experiments, reports."""


def _run_set(ctx: click.Context, qset: str, qtypes: str, **o: Any) -> None:
    """One seeded run of one question set (``eval run``, ``eval metaqa``)."""
    from kgqa.eval import experiments
    from kgqa.eval.datasets import QuestionSet

    dataset = experiments.open_dataset(resolve_data(o["data"]), qtypes)
    question_set = QuestionSet.named(qset)
    dataset.question_file(question_set, o["split"])  # a missing file fails before any model
    overrides = {
        "retrieval.hops": o["n_hops"],
        "retrieval.top_k": o["top_k"],
        "llm.model": o["model"],
    }
    with _factory(settings_from(ctx, overrides)) as factory:
        result = experiments.run_set(
            factory,
            dataset,
            question_set,
            o["split"],
            mode=o["mode"],
            limit=o["limit"],
            seed=o["seed"],
            out=o["out"],
            check=not o["no_check"],
            ceiling=not o["no_ceiling"],
            retry_errors=o["retry_errors"],
            progress=not o["no_progress"],
        )
    _echo_run(result, o["as_json"])


@eval.command("run")
@_common
@click.option(
    "--set",
    "qset",
    default="1-hop",
    show_default=True,
    help="Question set: a folder of the data folder (1-hop, 2-hop, 3-hop, conj; or 1, 2, 3).",
)
@_qtypes
@_one_run
@click.pass_context
def run(ctx: click.Context, qset: str, qtypes: str, **options: Any) -> None:
    """Answer a seeded sample of one question set of any dataset in MetaQA's layout and score it.

    The data folder holds <n>-hop/ and conj/ folders with qa_<split>.txt (and optionally
    qa_<split>_qtype.txt) and kb.txt. Writes one JSONL record per question as it finishes;
    the same command again resumes."""
    _run_set(ctx, qset, qtypes, **options)


@eval.command("metaqa")
@_common
@click.option(
    "--hops",
    type=click.IntRange(1, 3),
    default=1,
    show_default=True,
    help="MetaQA question set: 1, 2 or 3 hops.",
)
@_one_run
@click.pass_context
def metaqa(ctx: click.Context, hops: int, **options: Any) -> None:
    """Answer a seeded sample of MetaQA questions and score them (``eval run`` with MetaQA's
    qtype paths).

    Writes one JSONL record per question as it finishes; the same command again resumes."""
    _run_set(ctx, f"{hops}-hop", "metaqa", **options)


@eval.command("grid")
@_common
@_sets
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help=f"Questions per sample (default: {DEFAULT_LLM_LIMIT}; "
    f"{DEFAULT_CEILING_LIMIT} with --ceiling-only; the paper: 100).",
)
@click.option("--seeds", default="0", show_default=True, help="Sample seeds, e.g. 0-9 (the paper).")
@click.option("--n-values", default="1,2,3", show_default=True, help="Values of N.")
@click.option("--k-values", default="10,20,30", show_default=True, help="Values of K.")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="kgrag",
    show_default=True,
    help="Pipeline mode to run over the grid.",
)
@click.option(
    "--ceiling-only",
    is_flag=True,
    help="Only the retrieval ceiling (gold among candidates and top-K): no LLM.",
)
@_runs_folder
@_qtypes
@_no_check
@click.pass_context
def grid(
    ctx: click.Context,
    data: Path | None,
    split: str,
    model: str | None,
    as_json: bool,
    no_progress: bool,
    sets_text: str | None,
    limit: int | None,
    seeds: str,
    n_values: str,
    k_values: str,
    mode: str,
    ceiling_only: bool,
    out: Path,
    qtypes: str,
    no_check: bool,
) -> None:
    """Experiment 1: every N x K cell on seeded samples of each set (mean ± std over seeds)."""
    from kgqa.eval import experiments

    dataset = experiments.open_dataset(resolve_data(data), qtypes)
    limit = limit or (DEFAULT_CEILING_LIMIT if ceiling_only else DEFAULT_LLM_LIMIT)
    samples = experiments.Samples(
        dataset, parse_sets(sets_text, dataset), split, limit, parse_ints(seeds, "--seeds")
    )
    ns, ks = parse_ints(n_values, "--n-values"), parse_ints(k_values, "--k-values")
    if ceiling_only:
        with _factory(settings_from(ctx)) as factory:
            table = experiments.ceiling_grid(
                factory, samples, n_values=ns, k_values=ks, out=out, progress=not no_progress
            )
    else:
        from kgqa.factory import Factory

        def factory_for(n: int, k: int) -> Any:
            overrides = {"retrieval.hops": n, "retrieval.top_k": k, "llm.model": model}
            return Factory(settings_from(ctx, overrides))

        table = experiments.grid(
            factory_for,
            samples,
            n_values=ns,
            k_values=ks,
            mode=mode,
            out=out,
            check=not no_check,
            progress=not no_progress,
        )
    _echo_table(table, as_json)


@eval.command("compare")
@_common
@_sets
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_LLM_LIMIT,
    show_default=True,
    help="Questions per sample (the paper: 500).",
)
@click.option("--seeds", default="0", show_default=True, help="Sample seeds, e.g. 0-7 (the paper).")
@click.option(
    "--modes",
    default="kgrag,kaping,qd,llm",
    show_default=True,
    help=f"Modes to compare, from {', '.join(MODES)}.",
)
@click.option(
    "--n-hops", type=click.IntRange(1, 3), help="N for the graph modes (default: settings)."
)
@click.option(
    "--top-k", type=click.IntRange(min=1), help="K for the graph modes (default: settings)."
)
@_runs_folder
@_qtypes
@_no_check
@click.pass_context
def compare(
    ctx: click.Context,
    data: Path | None,
    split: str,
    model: str | None,
    as_json: bool,
    no_progress: bool,
    sets_text: str | None,
    limit: int,
    seeds: str,
    modes: str,
    n_hops: int | None,
    top_k: int | None,
    out: Path,
    qtypes: str,
    no_check: bool,
) -> None:
    """Experiment 2: the full system and the baselines on the same seeded samples."""
    from kgqa.eval import experiments

    seed_list = parse_ints(seeds, "--seeds")
    mode_list = list(dict.fromkeys(m.strip() for m in modes.split(",") if m.strip()))
    if bad_modes := [m for m in mode_list if m not in MODES]:
        raise click.BadParameter(f"{bad_modes}: modes are {', '.join(MODES)}", param_hint="--modes")
    dataset = experiments.open_dataset(resolve_data(data), qtypes)
    samples = experiments.Samples(dataset, parse_sets(sets_text, dataset), split, limit, seed_list)
    overrides = {"retrieval.hops": n_hops, "retrieval.top_k": top_k, "llm.model": model}
    with _factory(settings_from(ctx, overrides)) as factory:
        table = experiments.compare(
            factory,
            samples,
            modes=mode_list,
            out=out,
            check=not no_check,
            progress=not no_progress,
        )
    _echo_table(table, as_json)


@eval.command("report")
@click.argument(
    "run_dirs",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("report"),
    show_default=True,
    help="Folder for report.md and the PNG charts.",
)
def report(run_dirs: tuple[Path, ...], out: Path) -> None:
    """Markdown tables (mean ± std over seeds) and charts like the paper's Figures 5, 6 and 8.

    RUN_DIRS are run directories or folders that contain them (e.g. runs/)."""
    from kgqa.eval.report import write_report

    md = write_report(list(run_dirs), out)
    click.echo(f"wrote {md} and {len(list(out.glob('*.png')))} chart(s) in {out}")
