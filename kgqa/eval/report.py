"""Reports over run directories: Markdown tables (mean ± std over seeds) and PNG charts in the
style of the paper's Figure 5 (Hit@1 per N and K, one panel per hop), Figure 6 (modes per hop)
and Figure 8 (distribution of the number of sub-questions per hop).

Aggregates are recomputed from each run's ``records.jsonl``, never trusted from a summary.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgqa.errors import ConfigError
from kgqa.eval import metrics as M
from kgqa.eval import runner

MODE_ORDER = ("kgrag", "kaping", "qd", "llm", "graph")
MODE_LABELS = {
    "kgrag": "KG-RAG (full)",
    "kaping": "LLM+KG (KAPING)",
    "qd": "LLM+QD",
    "llm": "LLM",
    "graph": "graph-constrained",
}
METRIC_LABELS = {
    "hit1_paper": "Hit@1 (paper)",
    "hit1_entity": "Hit@1 (entity)",
    "f1": "F1",
    "in_candidates": "gold in candidates",
    "in_top_k": "gold in top-K",
}
CHART_METRICS = ("hit1_paper", "hit1_entity")


@dataclass(frozen=True)
class Run:
    dir: Path
    config: dict[str, Any]
    records: list[dict[str, Any]]
    aggregate: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.config.get("kind", "answer"))

    @property
    def cell(self) -> tuple[Any, ...]:
        """What a run shares with its other-seed siblings."""
        c = self.config
        if self.kind == "ceiling":
            return ("ceiling", c.get("split"), c.get("hops"))
        return (
            "answer",
            c.get("split"),
            c.get("hops"),
            c.get("mode"),
            c.get("n_hops"),
            c.get("top_k"),
            c.get("model"),
        )


@dataclass(frozen=True)
class Cell:
    """The runs of one configuration over several seeds."""

    key: tuple[Any, ...]
    runs: tuple[Run, ...]

    @property
    def config(self) -> dict[str, Any]:
        return self.runs[0].config

    @property
    def seeds(self) -> list[int]:
        return sorted(int(r.config.get("seed", 0)) for r in self.runs)

    @property
    def questions(self) -> int:
        return sum(int(r.aggregate.get("n") or 0) for r in self.runs)

    def values(self, metric: str) -> list[float]:
        """One value per seed (runs without the metric are left out)."""
        out = []
        for r in self.runs:
            v = r.aggregate.get(metric)
            if isinstance(v, int | float) and not isinstance(v, bool):
                out.append(float(v))
        return out

    def ceiling_values(self, n: str, k: str | None) -> list[float]:
        out = []
        for r in self.runs:
            cell = r.aggregate.get("by_n", {}).get(n)
            if cell is None:
                continue
            v = cell["in_candidates"] if k is None else cell["in_top_k"].get(k)
            if v is not None:
                out.append(float(v))
        return out


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof=1; 0 for a single seed)."""
    if not values:
        return None, None
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def fmt_ms(values: Sequence[float], digits: int = 3) -> str:
    mean, std = mean_std(values)
    if mean is None:
        return "—"
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


# -- loading --------------------------------------------------------------------------------


def find_runs(paths: Iterable[Path]) -> list[Path]:
    """Run directories among ``paths``: a path with ``run.json`` is a run; any other
    directory is searched for runs below it."""
    found: list[Path] = []
    for path in paths:
        if (path / runner.RUN_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.rglob(runner.RUN_FILE)))
        else:
            raise ConfigError(f"{path} is not a directory")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise ConfigError(
            f"no run directories (with {runner.RUN_FILE}) under {', '.join(map(str, paths))}"
        )
    return unique


def load_run(path: Path) -> Run:
    manifest = runner.read_manifest(path)
    config = dict(manifest.get("config") or {})
    records = runner.read_records(path)
    if config.get("kind") == "ceiling":
        agg = runner.aggregate_ceiling(records)
    else:
        agg = M.aggregate(records)
    return Run(path, config, records, agg)


def group_cells(runs: Iterable[Run]) -> list[Cell]:
    """Runs grouped by configuration; for one seed, the run with the most questions counts."""
    by_key: dict[tuple[Any, ...], dict[int, Run]] = {}
    for run in runs:
        seeds = by_key.setdefault(run.cell, {})
        seed = int(run.config.get("seed", 0))
        if seed not in seeds or run.aggregate.get("n", 0) > seeds[seed].aggregate.get("n", 0):
            seeds[seed] = run
    return [
        Cell(key, tuple(seeds[s] for s in sorted(seeds)))
        for key, seeds in sorted(by_key.items(), key=lambda kv: _sort_key(kv[0]))
    ]


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Ceiling cells after answer cells; then split, hops, mode (paper order), N, K, model."""
    if key[0] == "ceiling":
        return (1, str(key[1]), key[2] or 0, 0, 0, 0, "")
    _, split, hops, mode, n, k, model = key
    return (0, str(split), hops or 0, _mode_rank(mode or ""), n or 0, k or 0, str(model))


def _decomposing(cells: Iterable[Cell]) -> list[Cell]:
    """Cells of modes that decompose questions (Figure 8 is about them): not ``llm``, and not
    ``kaping`` whose single "sub-question" is the question itself."""
    return [
        c
        for c in cells
        if c.config.get("mode") not in ("llm", "kaping") and subquestion_counts(c).keys() - {0}
    ]


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it (reports get committed)."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


# -- markdown -------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _answer_cells(cells: Sequence[Cell]) -> list[Cell]:
    return [c for c in cells if c.key[0] == "answer"]


def _fig6_cells(cells: Sequence[Cell]) -> dict[tuple[int, str], Cell]:
    """For each (hops, mode), the cell with the most questions (ties: the larger N, K)."""
    chosen: dict[tuple[int, str], Cell] = {}
    for c in _answer_cells(cells):
        key = (c.config.get("hops") or 0, c.config.get("mode") or "")
        rank = (c.questions, c.config.get("n_hops") or 0, c.config.get("top_k") or 0)
        best = chosen.get(key)
        if best is None or rank > (
            best.questions,
            best.config.get("n_hops") or 0,
            best.config.get("top_k") or 0,
        ):
            chosen[key] = c
    return chosen


def _grid_groups(cells: Sequence[Cell]) -> dict[tuple[str, str], list[Cell]]:
    """Answer cells per (mode, model) that span more than one (N, K): Experiment 1."""
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in _answer_cells(cells):
        groups.setdefault((c.config.get("mode", ""), c.config.get("model", "")), []).append(c)
    return {
        k: v
        for k, v in groups.items()
        if len({(c.config.get("n_hops"), c.config.get("top_k")) for c in v}) > 1
    }


def subquestion_counts(cell: Cell) -> Counter[int]:
    counts: Counter[int] = Counter()
    for run in cell.runs:
        for r in run.records:
            if r.get("status") == "ok":
                counts[int((r.get("metrics") or {}).get("n_sub_questions", 0))] += 1
    return counts


def markdown(cells: Sequence[Cell], charts: Sequence[Path] = (), base: Path | None = None) -> str:
    """The report's Markdown: one section per view, tables with mean ± std over seeds."""
    out = ["# kgqa evaluation report", ""]
    runs = [r for c in cells for r in c.runs]
    out += [
        f"{len(runs)} run(s), {sum(c.questions for c in cells)} question records. "
        "Values are means over seeds ± the sample standard deviation (ddof=1) when there is "
        "more than one seed. Errors count as misses.",
        "",
    ]
    answer = _answer_cells(cells)
    if answer:
        out += ["## All answer runs", ""]
        rows = []
        for c in answer:
            cfg = c.config
            rows.append(
                [
                    cfg.get("hops"),
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
        out += _table(
            [
                "hops",
                "mode",
                "N",
                "K",
                "model",
                "seeds",
                "questions",
                "Hit@1 paper",
                "Hit@1 entity",
                "F1",
                "s/q median",
                "sub-q",
                "gold in cand.",
                "gold in top-K",
                "errors",
                "mistakes/q",
                "omissions/q",
            ],
            rows,
        )
        fig6 = _fig6_cells(cells)
        hops = sorted({h for h, _ in fig6})
        modes = sorted({m for _, m in fig6}, key=_mode_rank)
        if len(modes) > 1 or len(hops) > 1:
            out += ["## Modes per hop (Experiment 2, Figure 6)", ""]
            for metric in ("hit1_paper", "hit1_entity", "f1"):
                out += [f"**{METRIC_LABELS[metric]}**", ""]
                out += _table(
                    ["mode"] + [f"{h}-hop" for h in hops],
                    [
                        [MODE_LABELS.get(m, m)]
                        + [
                            fmt_ms(fig6[(h, m)].values(metric)) if (h, m) in fig6 else "—"
                            for h in hops
                        ]
                        for m in modes
                    ],
                )
        for (mode, model), group in _grid_groups(cells).items():
            out += [f"## N × K grid: {mode}, {model} (Experiment 1, Figure 5)", ""]
            for h in sorted({int(c.config.get("hops") or 0) for c in group}):
                sub = [c for c in group if c.config.get("hops") == h]
                ns = sorted({c.config["n_hops"] for c in sub})
                ks = sorted({c.config["top_k"] for c in sub})
                lookup = {(c.config["n_hops"], c.config["top_k"]): c for c in sub}
                out += [f"**{h}-hop, Hit@1 (paper) / Hit@1 (entity)**", ""]
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
        decomposing = _decomposing(fig6.values())
        if decomposing:
            out += ["## Number of sub-questions per hop (Figure 8)", ""]
            width = max(max(subquestion_counts(c)) for c in decomposing)
            out += _table(
                ["hops", "mode"] + [str(i) for i in range(width + 1)],
                [
                    [c.config.get("hops"), c.config.get("mode")]
                    + [subquestion_counts(c).get(i, 0) for i in range(width + 1)]
                    for c in sorted(
                        decomposing,
                        key=lambda c: (
                            c.config.get("hops") or 0,
                            _mode_rank(c.config.get("mode", "")),
                        ),
                    )
                ],
            )
        out += ["## Seconds and tokens per question, by stage", ""]
        rows = []
        for c in answer:
            stages: dict[str, list[dict[str, float]]] = {}
            for r in c.runs:
                for stage, v in (r.aggregate.get("per_stage") or {}).items():
                    stages.setdefault(stage, []).append(v)
            for stage, vals in sorted(stages.items()):
                rows.append(
                    [
                        c.config.get("hops"),
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
        out += _table(
            [
                "hops",
                "mode",
                "N",
                "K",
                "stage",
                "calls/q",
                "s/q",
                "prompt tok/q",
                "completion tok/q",
            ],
            rows,
        )
    ceiling = [c for c in cells if c.key[0] == "ceiling"]
    if ceiling:
        out += ["## Retrieval ceiling (no LLM)", ""]
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
                f"**{c.config.get('hops')}-hop, {c.config.get('split')}, seeds "
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


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


# -- charts ---------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(
    ax: Any,
    groups: Sequence[str],
    series: Mapping[str, Sequence[tuple[float | None, float | None]]],
    colors: Sequence[Any],
) -> None:
    """Grouped bars with std error bars: ``series[label][i]`` is (mean, std) for group i."""
    width = 0.8 / max(1, len(series))
    for j, (label, values) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(groups))]
        means = [v[0] if v[0] is not None else math.nan for v in values]
        stds = [v[1] or 0.0 for v in values]
        ax.bar(
            xs,
            means,
            width,
            yerr=stds,
            capsize=3,
            label=label,
            color=colors[j % len(colors)],
            edgecolor="black",
            linewidth=0.5,
            error_kw={"elinewidth": 1},
        )
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylim(0, 1.05)
    ax.yaxis.grid(True, linestyle="--", alpha=0.5)
    ax.set_axisbelow(True)


def chart_grid(cells: Sequence[Cell], mode: str, model: str, metric: str, path: Path) -> Path:
    """Figure 5: per hop, Hit@1 mean ± std for each N (groups) and K (bars)."""
    plt = _pyplot()
    group = [
        c
        for c in _answer_cells(cells)
        if (c.config.get("mode"), c.config.get("model")) == (mode, model)
    ]
    hops = sorted({int(c.config.get("hops") or 0) for c in group})
    fig, axes = plt.subplots(1, len(hops), figsize=(5 * len(hops), 4), squeeze=False)
    blues = plt.get_cmap("Blues")
    for ax, h in zip(axes[0], hops, strict=True):
        sub = [c for c in group if c.config.get("hops") == h]
        ns = sorted({c.config["n_hops"] for c in sub})
        ks = sorted({c.config["top_k"] for c in sub})
        lookup = {(c.config["n_hops"], c.config["top_k"]): c for c in sub}
        series = {
            f"K={k}": [
                mean_std(lookup[(n, k)].values(metric)) if (n, k) in lookup else (None, None)
                for n in ns
            ]
            for k in ks
        }
        colors = [blues(0.35 + 0.55 * i / max(1, len(ks) - 1)) for i in range(len(ks))]
        _bars(ax, [str(n) for n in ns], series, colors)
        ax.set_title(f"MetaQA {h}-hop")
        ax.set_xlabel("Number of hops for candidate retrieval (N)")
        ax.set_ylabel(f"{METRIC_LABELS.get(metric, metric)} (mean ± std)")
        ax.legend(title="K", loc="best", fontsize=8)
    fig.suptitle(
        f"{MODE_LABELS.get(mode, mode)}, {model}: {METRIC_LABELS.get(metric, metric)} per N and K"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def chart_modes(cells: Sequence[Cell], metric: str, path: Path) -> Path:
    """Figure 6: per hop (groups), one bar per mode, mean ± std over seeds."""
    plt = _pyplot()
    fig6 = _fig6_cells(cells)
    hops = sorted({h for h, _ in fig6})
    modes = sorted({m for _, m in fig6}, key=_mode_rank)
    series = {
        MODE_LABELS.get(m, m): [
            mean_std(fig6[(h, m)].values(metric)) if (h, m) in fig6 else (None, None) for h in hops
        ]
        for m in modes
    }
    fig, ax = plt.subplots(figsize=(7, 4.2))
    _bars(
        ax,
        [f"{h}-hop" for h in hops],
        series,
        ["#d62728", "#ff7f0e", "#e377c2", "#6a3d9a", "#2ca02c"],
    )
    ax.set_xlabel("MetaQA dataset")
    ax.set_ylabel(f"{METRIC_LABELS.get(metric, metric)} (mean ± std)")
    ax.set_title(f"MetaQA {METRIC_LABELS.get(metric, metric)} per mode")
    ax.legend(title="Mode", loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def chart_subquestions(cells: Sequence[Cell], path: Path) -> Path:
    """Figure 8: distribution of the number of generated sub-questions, one panel per hop."""
    plt = _pyplot()
    chosen = _decomposing(_fig6_cells(cells).values())
    hops = sorted({int(c.config.get("hops") or 0) for c in chosen})
    width = max(max(subquestion_counts(c)) for c in chosen)
    fig, axes = plt.subplots(
        1, len(hops), figsize=(4.5 * len(hops), 3.6), squeeze=False, sharey=True
    )
    colors = {"kgrag": "#1f77b4", "qd": "#e377c2", "graph": "#2ca02c", "kaping": "#ff7f0e"}
    for ax, h in zip(axes[0], hops, strict=True):
        sub = sorted(
            [c for c in chosen if c.config.get("hops") == h],
            key=lambda c: _mode_rank(c.config.get("mode", "")),
        )
        bar_w = 0.8 / max(1, len(sub))
        for j, c in enumerate(sub):
            counts = subquestion_counts(c)
            xs = [i - 0.4 + bar_w * (j + 0.5) for i in range(width + 1)]
            mode = c.config.get("mode", "")
            ax.bar(
                xs,
                [counts.get(i, 0) for i in range(width + 1)],
                bar_w,
                label=MODE_LABELS.get(mode, mode),
                color=colors.get(mode, "#7f7f7f"),
            )
        ax.set_title(f"MetaQA {h}-hop")
        ax.set_xlabel("Number of sub-questions")
        ax.set_xticks(range(width + 1))
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("Count")
    fig.suptitle("Number of generated sub-questions per dataset")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def chart_ceiling(cells: Sequence[Cell], path: Path) -> Path:
    """Figure 5's layout for the retrieval ceiling: bars = gold in top-K per N and K, black
    ticks = gold among all candidates at that N."""
    plt = _pyplot()
    ceiling = [c for c in cells if c.key[0] == "ceiling"]
    hops = sorted({int(c.config.get("hops") or 0) for c in ceiling})
    fig, axes = plt.subplots(1, len(hops), figsize=(5 * len(hops), 4), squeeze=False)
    blues = plt.get_cmap("Blues")
    for ax, h in zip(axes[0], hops, strict=True):
        cell = next(c for c in ceiling if c.config.get("hops") == h)
        ns = sorted({n for r in cell.runs for n in r.aggregate.get("by_n", {})}, key=int)
        ks = sorted(
            {k for r in cell.runs for v in r.aggregate["by_n"].values() for k in v["in_top_k"]},
            key=int,
        )
        series = {f"K={k}": [mean_std(cell.ceiling_values(n, k)) for n in ns] for k in ks}
        colors = [blues(0.35 + 0.55 * i / max(1, len(ks) - 1)) for i in range(len(ks))]
        _bars(ax, ns, series, colors)
        cand = [mean_std(cell.ceiling_values(n, None))[0] for n in ns]
        ax.scatter(
            range(len(ns)),
            [math.nan if v is None else v for v in cand],
            marker="_",
            s=900,
            color="black",
            label="all candidates",
            zorder=3,
        )
        ax.set_title(f"MetaQA {h}-hop ({cell.questions} questions)")
        ax.set_xlabel("Number of hops for candidate retrieval (N)")
        ax.set_ylabel("share of questions with gold reachable")
        ax.legend(loc="best", fontsize=8)
    fig.suptitle("Retrieval ceiling: gold answer among the candidates and the top-K")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(paths: Sequence[Path], out_dir: Path) -> Path:
    """Load the runs under ``paths``, write ``out_dir/report.md`` and its PNG charts;
    return the Markdown file's path."""
    runs = [load_run(p) for p in find_runs(paths)]
    cells = group_cells(runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    charts: list[Path] = []
    answer = _answer_cells(cells)
    for mode, model in _grid_groups(cells):
        for metric in CHART_METRICS:
            name = f"fig5_grid_{runner._slug(mode)}_{runner._slug(model)}_{metric}.png"
            charts.append(chart_grid(cells, mode, model, metric, out_dir / name))
    fig6 = _fig6_cells(cells)
    if answer and (len({m for _, m in fig6}) > 1 or len({h for h, _ in fig6}) > 1):
        for metric in CHART_METRICS:
            charts.append(chart_modes(cells, metric, out_dir / f"fig6_modes_{metric}.png"))
    if _decomposing(fig6.values()):
        charts.append(chart_subquestions(cells, out_dir / "fig8_subquestions.png"))
    if any(c.key[0] == "ceiling" for c in cells):
        charts.append(chart_ceiling(cells, out_dir / "fig5_ceiling.png"))
    md = out_dir / "report.md"
    md.write_text(markdown(cells, charts, base=out_dir), encoding="utf-8")
    return md


# -- terminal -------------------------------------------------------------------------------


def format_aggregate(agg: Mapping[str, Any], title: str = "") -> str:
    """The aggregate of one run as an aligned two-column table for the terminal."""

    def f(v: Any, digits: int = 3) -> str:
        if v is None:
            return "—"
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        return str(v)

    rows = [
        ("questions", f(agg.get("n"))),
        ("errors", f(agg.get("errors"))),
        ("Hit@1 (paper)", f(agg.get("hit1_paper"))),
        ("Hit@1 (entity)", f(agg.get("hit1_entity"))),
        (
            "precision / recall / F1",
            f"{f(agg.get('precision'))} / {f(agg.get('recall'))} / {f(agg.get('f1'))}",
        ),
        ("seconds per question (median)", f(agg.get("seconds_median"), 2)),
        ("sub-questions per question", f(agg.get("sub_questions_mean"), 2)),
    ]
    for key, label in (
        ("in_candidates", "gold in candidates"),
        ("in_top_k", "gold in top-K evidence"),
        ("mistakes", "mistakes per question"),
        ("omissions", "omissions per question"),
    ):
        if key in agg:
            rows.append((label, f(agg[key])))
    for stage, v in (agg.get("per_stage") or {}).items():
        rows.append(
            (
                f"  {stage}",
                f"{v['seconds']:.2f} s, {v['prompt_tokens']:.0f}+{v['completion_tokens']:.0f} tok per q",
            )
        )
    width = max(len(k) for k, _ in rows)
    lines = [title] if title else []
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join(lines)


def summary_rows(
    results: Iterable[Mapping[str, Any]], keys: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Group per-run results (dicts with ``keys`` + ``seed`` + aggregate values) over seeds:
    one row per key combination with ``<metric>_mean``, ``<metric>_std`` and ``seeds``."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in results:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    rows = []
    for key, members in groups.items():
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        row["seeds"] = sorted(m.get("seed") for m in members)
        row["n"] = sum(int(m.get("n") or 0) for m in members)
        for metric in metrics:
            vals = [float(m[metric]) for m in members if isinstance(m.get(metric), int | float)]
            row[f"{metric}_mean"], row[f"{metric}_std"] = mean_std(vals)
        rows.append(row)
    return rows


def format_rows(
    rows: Sequence[Mapping[str, Any]], keys: Sequence[str], metrics: Sequence[str]
) -> str:
    """A plain-text table of :func:`summary_rows`."""
    header = list(keys) + ["seeds", "n"] + list(metrics)
    body = []
    for r in rows:
        cells = [str(r.get(k)) for k in keys] + [",".join(map(str, r["seeds"])), str(r["n"])]
        for m in metrics:
            mean, std = r.get(f"{m}_mean"), r.get(f"{m}_std")
            cells.append("—" if mean is None else f"{mean:.3f}±{std:.3f}")
        body.append(cells)
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)
