"""The Markdown report (``kgqa eval report``): one section per view, tables with mean ± std
over seeds, the charts linked beside them."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kgqa.eval import runner
from kgqa.eval.report.charts import chart_ceiling, chart_grid, chart_modes, chart_subquestions
from kgqa.eval.report.runs import (
    METRIC_LABELS,
    MODE_LABELS,
    Cell,
    answer_cells,
    ceiling_cells,
    column_label,
    decomposing,
    find_runs,
    fmt_ms,
    grid_groups,
    grid_sets,
    group_cells,
    load_run,
    mode_rank,
    mode_view,
    set_label,
    set_rank,
    several_datasets,
    subquestion_counts,
)

CHART_METRICS = ("hit1_paper", "hit1_entity")


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it (reports get committed)."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def _data(c: Cell, multi: bool) -> list[Any]:
    """The leading ``data`` cell of a row, when the report spans several datasets."""
    return [c.dataset or "—"] if multi else []


def _all_runs(answer: Sequence[Cell], multi: bool) -> list[str]:
    rows = []
    for c in answer:
        cfg = c.config
        rows.append(
            _data(c, multi)
            + [
                c.set_key,
                cfg.get("mode"),
                cfg.get("n_hops"),
                cfg.get("top_k"),
                cfg.get("model"),
                ",".join(map(str, c.seeds)),
                c.questions,
                fmt_ms(c.values("hit1_paper")),
                fmt_ms(c.values("hit1_entity")),
                fmt_ms(c.values("f1")),
                fmt_ms(c.values("seconds_median"), 1),
                fmt_ms(c.values("sub_questions_mean"), 2),
                fmt_ms(c.values("in_candidates")),
                fmt_ms(c.values("in_top_k")),
                sum(int(r.aggregate.get("errors") or 0) for r in c.runs),
                fmt_ms(c.values("mistakes"), 2),
                fmt_ms(c.values("omissions"), 2),
            ]
        )
    header = ["data"] if multi else []
    header += [
        "hops", "mode", "N", "K", "model", "seeds", "questions", "Hit@1 paper", "Hit@1 entity",
        "F1", "s/q median", "sub-q", "gold in cand.", "gold in top-K", "errors", "mistakes/q",
        "omissions/q",
    ]  # fmt: skip
    return ["## All answer runs", ""] + _table(header, rows)


def _modes(cells: Sequence[Cell], multi: bool) -> list[str]:
    chosen, cols, modes = mode_view(cells)
    if len(modes) <= 1 and len(cols) <= 1:
        return []
    out = ["## Modes per hop (Experiment 2, Figure 6)", ""]
    for metric in ("hit1_paper", "hit1_entity", "f1"):
        out += [f"**{METRIC_LABELS[metric]}**", ""]
        out += _table(
            ["mode"] + [column_label(col, multi) for col in cols],
            [
                [MODE_LABELS.get(m, m)]
                + [
                    fmt_ms(chosen[(col, m)].values(metric)) if (col, m) in chosen else "—"
                    for col in cols
                ]
                for m in modes
            ],
        )
    return out


def _grids(cells: Sequence[Cell], multi: bool) -> list[str]:
    out: list[str] = []
    for (dataset, mode, model), group in grid_groups(cells).items():
        where = f", {dataset}" if multi and dataset else ""
        out += [f"## N × K grid: {mode}, {model}{where} (Experiment 1, Figure 5)", ""]
        for qset in grid_sets(group):
            sub = [c for c in group if c.set_key == qset]
            ns = sorted({c.config["n_hops"] for c in sub})
            ks = sorted({c.config["top_k"] for c in sub})
            lookup = {(c.config["n_hops"], c.config["top_k"]): c for c in sub}
            out += [f"**{set_label(qset)}, Hit@1 (paper) / Hit@1 (entity)**", ""]
            out += _table(
                ["N"] + [f"K={k}" for k in ks],
                [
                    [n]
                    + [
                        f"{fmt_ms(lookup[(n, k)].values('hit1_paper'))} / "
                        f"{fmt_ms(lookup[(n, k)].values('hit1_entity'))}"
                        if (n, k) in lookup
                        else "—"
                        for k in ks
                    ]
                    for n in ns
                ],
            )
    return out


def _subquestions(cells: Sequence[Cell], multi: bool) -> list[str]:
    chosen = decomposing(mode_view(cells)[0].values())
    if not chosen:
        return []
    width = max(max(subquestion_counts(c)) for c in chosen)
    ordered = sorted(
        chosen, key=lambda c: (c.dataset, set_rank(c.set_key), mode_rank(c.config.get("mode", "")))
    )
    header = (["data"] if multi else []) + ["hops", "mode"] + [str(i) for i in range(width + 1)]
    return ["## Number of sub-questions per hop (Figure 8)", ""] + _table(
        header,
        [
            _data(c, multi)
            + [c.set_key, c.config.get("mode")]
            + [subquestion_counts(c).get(i, 0) for i in range(width + 1)]
            for c in ordered
        ],
    )


def _stages(answer: Sequence[Cell], multi: bool) -> list[str]:
    rows = []
    for c in answer:
        stages: dict[str, list[dict[str, float]]] = {}
        for r in c.runs:
            for stage, v in (r.aggregate.get("per_stage") or {}).items():
                stages.setdefault(stage, []).append(v)
        for stage, vals in sorted(stages.items()):
            rows.append(
                _data(c, multi)
                + [
                    c.set_key,
                    c.config.get("mode"),
                    c.config.get("n_hops"),
                    c.config.get("top_k"),
                    stage,
                    f"{statistics.fmean(v['calls'] for v in vals):.2f}",
                    f"{statistics.fmean(v['seconds'] for v in vals):.2f}",
                    f"{statistics.fmean(v['prompt_tokens'] for v in vals):.0f}",
                    f"{statistics.fmean(v['completion_tokens'] for v in vals):.0f}",
                ]
            )
    header = ["data"] if multi else []
    header += [
        "hops", "mode", "N", "K", "stage", "calls/q", "s/q", "prompt tok/q", "completion tok/q",
    ]  # fmt: skip
    return ["## Seconds and tokens per question, by stage", ""] + _table(header, rows)


def _ceiling(cells: Sequence[Cell], multi: bool) -> list[str]:
    ceiling = ceiling_cells(cells)
    if not ceiling:
        return []
    out = ["## Retrieval ceiling (no LLM)", ""]
    out += [
        "Share of questions with a gold answer among the candidate triples' entities "
        "(N hops around the topic entity) and among the top-K of those candidates for the "
        "question text.",
        "",
    ]
    for c in ceiling:
        ns = sorted({n for r in c.runs for n in r.aggregate.get("by_n", {})}, key=int)
        ks = sorted(
            {
                k
                for r in c.runs
                for v in r.aggregate.get("by_n", {}).values()
                for k in v["in_top_k"]
            },
            key=int,
        )
        out += [
            f"**{column_label((c.dataset, c.set_key), multi)}, {c.config.get('split')}, seeds "
            f"{','.join(map(str, c.seeds))}, {c.questions} questions**",
            "",
        ]
        sizes = {
            n: [
                r.aggregate["by_n"][n]["candidates_median"]
                for r in c.runs
                if n in r.aggregate.get("by_n", {})
            ]
            for n in ns
        }
        out += _table(
            ["N", "in candidates"] + [f"in top-{k}" for k in ks] + ["candidates median"],
            [
                [n, fmt_ms(c.ceiling_values(n, None))]
                + [fmt_ms(c.ceiling_values(n, k)) for k in ks]
                + [fmt_ms([float(s) for s in sizes[n] if s is not None], 0)]
                for n in ns
            ],
        )
    return out


def markdown(cells: Sequence[Cell], charts: Sequence[Path] = (), base: Path | None = None) -> str:
    """The report's Markdown: one section per view, tables with mean ± std over seeds. A
    report over several datasets adds a ``data`` column and names the dataset by each set."""
    out = ["# kgqa evaluation report", ""]
    runs = [r for c in cells for r in c.runs]
    out += [
        f"{len(runs)} run(s), {sum(c.questions for c in cells)} question records. "
        "Values are means over seeds ± the sample standard deviation (ddof=1) when there is "
        "more than one seed. Errors count as misses.",
        "",
    ]
    multi = several_datasets(cells)
    answer = answer_cells(cells)
    if answer:
        out += _all_runs(answer, multi)
        out += _modes(cells, multi)
        out += _grids(cells, multi)
        out += _subquestions(cells, multi)
        out += _stages(answer, multi)
    out += _ceiling(cells, multi)
    if charts:
        out += ["## Charts", ""]
        for chart in charts:
            rel = chart.relative_to(base) if base and chart.is_relative_to(base) else chart
            out += [f"![{chart.stem}]({rel.as_posix()})", ""]
    out += ["## Runs", ""]
    out += [
        f"- `{_shown(r.dir)}`: {r.aggregate.get('n', 0)} questions" for c in cells for r in c.runs
    ]
    return "\n".join(out) + "\n"


def write_report(paths: Sequence[Path], out_dir: Path) -> Path:
    """Load the runs under ``paths``, write ``out_dir/report.md`` and its PNG charts;
    return the Markdown file's path."""
    cells = group_cells(load_run(p) for p in find_runs(paths))
    out_dir.mkdir(parents=True, exist_ok=True)
    multi = several_datasets(cells)
    charts: list[Path] = []
    for dataset, mode, model in grid_groups(cells):
        prefix = f"{runner._slug(dataset)}_" if multi and dataset else ""
        for metric in CHART_METRICS:
            name = f"fig5_grid_{prefix}{runner._slug(mode)}_{runner._slug(model)}_{metric}.png"
            charts.append(chart_grid(cells, dataset, mode, model, metric, out_dir / name))
    _, cols, modes = mode_view(cells)
    if answer_cells(cells) and (len(modes) > 1 or len(cols) > 1):
        for metric in CHART_METRICS:
            charts.append(chart_modes(cells, metric, out_dir / f"fig6_modes_{metric}.png"))
    if decomposing(mode_view(cells)[0].values()):
        charts.append(chart_subquestions(cells, out_dir / "fig8_subquestions.png"))
    if ceiling_cells(cells):
        charts.append(chart_ceiling(cells, out_dir / "fig5_ceiling.png"))
    md = out_dir / "report.md"
    md.write_text(markdown(cells, charts, base=out_dir), encoding="utf-8")
    return md
