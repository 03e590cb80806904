"""``kgqa eval``: benchmark runs (MetaQA), the paper's two experiments, and reports.

Thin wrappers over :mod:`kgqa.eval`; the pipeline and the retriever come from
:class:`kgqa.factory.Factory`, built only when a command runs.
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
from kgqa.settings import Settings

MODES = ("kgrag", "kaping", "qd", "llm", "graph")
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
        f"no MetaQA data at {DEFAULT_DATA} (relative to {Path.cwd()}); pass --data DIR, a folder "
        "with 1-hop/qa_dev.txt, 2-hop/... and kb.txt"
    )


def _entity_names(data_dir: Path) -> tuple[Any, str | None]:
    """KB names for reading entities out of free-text answers (``kb.txt`` beside the questions)."""
    from kgqa.eval.metaqa import read_entity_names
    from kgqa.eval.metrics import EntityNames

    kb = data_dir / "kb.txt"
    if not kb.is_file():
        return None, None
    return EntityNames.of(read_entity_names(kb)), str(kb.resolve())


@contextmanager
def _factory(settings: Settings) -> Iterator[Any]:
    from kgqa.factory import Factory

    factory = Factory(settings)
    try:
        yield factory
    finally:
        factory.close()


def _checker(factory: Any, enabled: bool = True) -> Any:
    """The faithfulness check against the graph (docs/faithfulness.md), as run_eval's hook."""
    # A factory with no graph behind it (the CLI tests' fake) has nothing to check against.
    if not enabled or not hasattr(factory, "driver"):
        return None
    from kgqa.errors import GraphUnavailable
    from kgqa.eval.faithfulness import FaithfulnessChecker, metaqa_checker

    try:
        driver = factory.driver()
    except GraphUnavailable as e:
        raise GraphUnavailable(
            f"{e} (the faithfulness check reads the graph; `eval metaqa --no-check` skips it)"
        ) from e
    return metaqa_checker(FaithfulnessChecker(driver, factory.settings.neo4j.database))


def _with_faith(result: Any) -> dict[str, Any]:
    """The run's aggregate with the faithfulness figures (mistake rate per answer entity,
    questions with a mistake, omissions) of the records the check ran on."""
    from kgqa.eval.faithfulness import summarize

    return {**result.aggregate, **summarize(result.records)}


def _questions(data_dir: Path, hops: int, split: str, limit: int | None, seed: int) -> tuple:
    from kgqa.eval.metaqa import load_split, question_file, sample
    from kgqa.eval.runner import fingerprint

    path = question_file(data_dir, hops, split)
    questions = sample(load_split(data_dir, hops, split), limit, seed)
    rel = path.relative_to(data_dir).as_posix()
    return questions, rel, fingerprint(path)


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, default=str))


# -- options shared by the commands ----------------------------------------------------------


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--data",
            type=click.Path(file_okay=False, path_type=Path),
            help="MetaQA folder (default: ../shared/metaqa when present).",
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
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group("eval")
def eval() -> None:  # shadows the builtin only inside this module: the command's name
    """Benchmark runs on MetaQA, the paper's experiments, and reports."""


@eval.command("metaqa")
@_common
@click.option(
    "--hops",
    type=click.IntRange(1, 3),
    default=1,
    show_default=True,
    help="MetaQA question set: 1, 2 or 3 hops.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Seeded sample size (default: all).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sample seed.")
@click.option(
    "--mode", type=click.Choice(MODES), default="kgrag", show_default=True, help="Pipeline mode."
)
@click.option(
    "--n-hops", type=click.IntRange(1, 3), help="Candidate retrieval hops N (default: settings)."
)
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    help="Top-K triples per sub-question (default: settings).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (default: runs/<name from the config>).",
)
@click.option("--retry-errors", is_flag=True, help="Answer again the questions that failed before.")
@click.option(
    "--no-ceiling",
    is_flag=True,
    help="Do not look for the gold answers among the candidates (saves one query per question).",
)
@click.option(
    "--no-check",
    is_flag=True,
    help="Skip the faithfulness check (mistakes and omissions against the graph).",
)
@click.pass_context
def metaqa(
    ctx: click.Context,
    data: Path | None,
    split: str,
    model: str | None,
    as_json: bool,
    no_progress: bool,
    hops: int,
    limit: int | None,
    seed: int,
    mode: str,
    n_hops: int | None,
    top_k: int | None,
    out: Path | None,
    retry_errors: bool,
    no_ceiling: bool,
    no_check: bool,
) -> None:
    """Answer a seeded sample of MetaQA questions and score them.

    Writes one JSONL record per question as it finishes; the same command again resumes."""
    from kgqa.eval.report import format_aggregate
    from kgqa.eval.runner import GRAPH_MODES, EvalConfig, run_eval, run_name

    data_dir = resolve_data(data)
    questions, rel, fp = _questions(data_dir, hops, split, limit, seed)
    overrides = {"retrieval.hops": n_hops, "retrieval.top_k": top_k, "llm.model": model}
    settings = settings_from(ctx, overrides)
    config = EvalConfig(
        data_file=rel,
        hops=hops,
        split=split,
        limit=limit,
        seed=seed,
        mode=mode,
        n_hops=settings.retrieval.hops,
        top_k=settings.retrieval.top_k,
        model=settings.llm.model,
        data_fingerprint=fp,
    )
    out = out or Path("runs") / run_name(config)
    names, kb = _entity_names(data_dir)
    extra = {
        "data_dir": str(data_dir.resolve()),
        "entity_names": kb,
        "settings": _settings(settings),
    }
    with _factory(settings) as factory:
        pipeline = factory.pipeline(mode)
        retriever = factory.retriever() if mode in GRAPH_MODES and not no_ceiling else None
        result = run_eval(
            pipeline,
            questions,
            out,
            config,
            retriever=retriever,
            checker=_checker(factory, not no_check),
            entity_names=names,
            retry_errors=retry_errors,
            progress=not no_progress,
            extra_manifest=extra,
        )
    aggregate = _with_faith(result)
    if as_json:
        _echo_json({**aggregate, "run_dir": str(out)})
    else:
        title = f"{out}  ({result.answered} answered now, {result.resumed} resumed)"
        click.echo(format_aggregate(aggregate, title))
        from kgqa.eval.faithfulness import format_summary

        if line := format_summary(aggregate):
            click.echo(line)


def _settings(settings: Any) -> dict[str, Any]:
    from kgqa.settings import as_dict

    data = as_dict(settings)
    # What shapes answers, for the audit; connection details are not part of a result.
    return {k: data[k] for k in ("retrieval", "llm", "embed") if k in data}


@eval.command("grid")
@_common
@click.option(
    "--hops",
    "hops_text",
    default="1,2,3",
    show_default=True,
    help="Question sets, e.g. 1,2,3 or 2.",
)
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
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Parent folder of the run directories.",
)
@click.pass_context
def grid(
    ctx: click.Context,
    data: Path | None,
    split: str,
    model: str | None,
    as_json: bool,
    no_progress: bool,
    hops_text: str,
    limit: int | None,
    seeds: str,
    n_values: str,
    k_values: str,
    mode: str,
    ceiling_only: bool,
    out: Path,
) -> None:
    """Experiment 1: every N x K cell on seeded samples of each hop (mean ± std over seeds)."""
    from kgqa.eval.report import format_rows, summary_rows
    from kgqa.eval.runner import CeilingConfig, EvalConfig, run_ceiling, run_eval, run_name

    data_dir = resolve_data(data)
    hop_list = parse_ints(hops_text, "--hops")
    seed_list = parse_ints(seeds, "--seeds")
    ns, ks = parse_ints(n_values, "--n-values"), parse_ints(k_values, "--k-values")
    if bad := [h for h in hop_list if h not in (1, 2, 3)]:
        raise click.BadParameter(f"{bad}: hops are 1, 2 or 3", param_hint="--hops")
    limit = limit or (DEFAULT_CEILING_LIMIT if ceiling_only else DEFAULT_LLM_LIMIT)
    samples = {
        (h, s): _questions(data_dir, h, split, limit, s) for h in hop_list for s in seed_list
    }
    results: list[dict[str, Any]] = []
    progress = not no_progress
    if ceiling_only:
        with _factory(settings_from(ctx)) as factory:
            retriever = factory.retriever()
            for (h, s), (questions, rel, fp) in samples.items():
                config = CeilingConfig(rel, h, split, limit, s, tuple(ns), tuple(ks), fp)
                run = run_ceiling(
                    retriever,
                    questions,
                    out / run_name(config),
                    config,
                    progress=progress,
                    extra_manifest={"data_dir": str(data_dir.resolve())},
                )
                for n, cell in run.aggregate["by_n"].items():
                    row = {
                        "hops": h,
                        "seed": s,
                        "N": int(n),
                        "n": run.aggregate["n"],
                        "in_candidates": cell["in_candidates"],
                    }
                    for k, v in cell["in_top_k"].items():
                        results.append({**row, "K": int(k), "in_top_k": v})
        keys, metrics = ["hops", "N", "K"], ["in_candidates", "in_top_k"]
    else:
        names, kb = _entity_names(data_dir)
        for n in ns:
            for k in ks:
                overrides = {"retrieval.hops": n, "retrieval.top_k": k, "llm.model": model}
                with _factory(settings_from(ctx, overrides)) as factory:
                    pipeline = factory.pipeline(mode)
                    checker = _checker(factory)
                    model_name = factory.settings.llm.model
                    for (h, s), (questions, rel, fp) in samples.items():
                        cfg = EvalConfig(rel, h, split, limit, s, mode, n, k, model_name, fp)
                        run = run_eval(
                            pipeline,
                            questions,
                            out / run_name(cfg),
                            cfg,
                            checker=checker,
                            entity_names=names,
                            progress=progress,
                            extra_manifest={
                                "data_dir": str(data_dir.resolve()),
                                "entity_names": kb,
                            },
                        )
                        results.append({"hops": h, "seed": s, "N": n, "K": k, **_with_faith(run)})
        keys, metrics = ["hops", "N", "K"], ["hit1_paper", "hit1_entity", "f1"]
    rows = summary_rows(results, keys, metrics)
    rows.sort(key=lambda r: tuple(r[k] for k in keys))
    if as_json:
        _echo_json(rows)
    else:
        click.echo(format_rows(rows, keys, metrics))


@eval.command("compare")
@_common
@click.option(
    "--hops",
    "hops_text",
    default="1,2,3",
    show_default=True,
    help="Question sets, e.g. 1,2,3 or 2.",
)
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
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Parent folder of the run directories.",
)
@click.pass_context
def compare(
    ctx: click.Context,
    data: Path | None,
    split: str,
    model: str | None,
    as_json: bool,
    no_progress: bool,
    hops_text: str,
    limit: int,
    seeds: str,
    modes: str,
    n_hops: int | None,
    top_k: int | None,
    out: Path,
) -> None:
    """Experiment 2: the full system and the baselines on the same seeded samples."""
    from kgqa.eval.report import format_rows, summary_rows
    from kgqa.eval.runner import GRAPH_MODES, EvalConfig, run_eval, run_name

    data_dir = resolve_data(data)
    hop_list = parse_ints(hops_text, "--hops")
    if bad := [h for h in hop_list if h not in (1, 2, 3)]:
        raise click.BadParameter(f"{bad}: hops are 1, 2 or 3", param_hint="--hops")
    seed_list = parse_ints(seeds, "--seeds")
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    if bad_modes := [m for m in mode_list if m not in MODES]:
        raise click.BadParameter(f"{bad_modes}: modes are {', '.join(MODES)}", param_hint="--modes")
    names, kb = _entity_names(data_dir)
    overrides = {"retrieval.hops": n_hops, "retrieval.top_k": top_k, "llm.model": model}
    results: list[dict[str, Any]] = []
    with _factory(settings_from(ctx, overrides)) as factory:
        s = factory.settings
        pipelines = {m: factory.pipeline(m) for m in mode_list}
        retriever = factory.retriever() if GRAPH_MODES & set(mode_list) else None
        checker = _checker(factory)
        for seed in seed_list:
            for h in hop_list:
                questions, rel, fp = _questions(data_dir, h, split, limit, seed)
                for m in mode_list:
                    config = EvalConfig(
                        rel,
                        h,
                        split,
                        limit,
                        seed,
                        m,
                        s.retrieval.hops,
                        s.retrieval.top_k,
                        s.llm.model,
                        fp,
                    )
                    run = run_eval(
                        pipelines[m],
                        questions,
                        out / run_name(config),
                        config,
                        retriever=retriever,
                        checker=checker,
                        entity_names=names,
                        progress=not no_progress,
                        extra_manifest={"data_dir": str(data_dir.resolve()), "entity_names": kb},
                    )
                    results.append({"hops": h, "seed": seed, "mode": m, **_with_faith(run)})
    keys = ["hops", "mode"]
    metrics = ["hit1_paper", "hit1_entity", "f1", "mistake_rate", "omissions", "seconds_median"]
    rows = summary_rows(results, keys, metrics)
    rows.sort(key=lambda r: (r["hops"], mode_list.index(r["mode"])))
    if as_json:
        _echo_json(rows)
    else:
        click.echo(format_rows(rows, keys, metrics))


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
