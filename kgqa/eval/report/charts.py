"""PNG charts in the style of the paper's Figure 5 (Hit@1 per N and K, one panel per question
set), Figure 6 (modes per set) and Figure 8 (distribution of the number of sub-questions), and
the retrieval ceiling in Figure 5's layout. matplotlib with the Agg backend, imported on use."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgqa.eval.report.runs import (
    METRIC_LABELS,
    MODE_LABELS,
    Cell,
    answer_cells,
    ceiling_cells,
    column_label,
    columns,
    decomposing,
    grid_sets,
    mean_std,
    mode_cells,
    mode_rank,
    mode_view,
    several_datasets,
    subquestion_counts,
)


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


def _save(fig: Any, plt: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def chart_grid(
    cells: Sequence[Cell], dataset: str, mode: str, model: str, metric: str, path: Path
) -> Path:
    """Figure 5: per question set, Hit@1 mean ± std for each N (groups) and K (bars)."""
    plt = _pyplot()
    group = [
        c
        for c in answer_cells(cells)
        if (c.dataset, c.config.get("mode"), c.config.get("model")) == (dataset, mode, model)
    ]
    sets = grid_sets(group)
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4), squeeze=False)
    blues = plt.get_cmap("Blues")
    for ax, qset in zip(axes[0], sets, strict=True):
        sub = [c for c in group if c.set_key == qset]
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
        ax.set_title(column_label((dataset, qset), True))
        ax.set_xlabel("Number of hops for candidate retrieval (N)")
        ax.set_ylabel(f"{METRIC_LABELS.get(metric, metric)} (mean ± std)")
        ax.legend(title="K", loc="best", fontsize=8)
    fig.suptitle(
        f"{MODE_LABELS.get(mode, mode)}, {model}: {METRIC_LABELS.get(metric, metric)} per N and K"
    )
    return _save(fig, plt, path)


def chart_modes(cells: Sequence[Cell], metric: str, path: Path) -> Path:
    """Figure 6: per question set (groups), one bar per mode, mean ± std over seeds."""
    plt = _pyplot()
    chosen, cols, modes = mode_view(cells)
    multi = several_datasets(cells)
    series = {
        MODE_LABELS.get(m, m): [
            mean_std(chosen[(col, m)].values(metric)) if (col, m) in chosen else (None, None)
            for col in cols
        ]
        for m in modes
    }
    fig, ax = plt.subplots(figsize=(7, 4.2))
    _bars(
        ax,
        [column_label(col, multi) for col in cols],
        series,
        ["#d62728", "#ff7f0e", "#e377c2", "#6a3d9a", "#2ca02c"],
    )
    datasets = ", ".join(sorted({d for d, _ in cols if d}))
    ax.set_xlabel(f"question set ({datasets})" if datasets else "question set")
    ax.set_ylabel(f"{METRIC_LABELS.get(metric, metric)} (mean ± std)")
    ax.set_title(f"{METRIC_LABELS.get(metric, metric)} per mode")
    ax.legend(title="Mode", loc="best", fontsize=8)
    return _save(fig, plt, path)


def chart_subquestions(cells: Sequence[Cell], path: Path) -> Path:
    """Figure 8: distribution of the number of generated sub-questions, one panel per set."""
    plt = _pyplot()
    chosen = decomposing(mode_cells(cells).values())
    cols = columns(chosen)
    width = max(max(subquestion_counts(c)) for c in chosen)
    fig, axes = plt.subplots(
        1, len(cols), figsize=(4.5 * len(cols), 3.6), squeeze=False, sharey=True
    )
    colors = {"kgrag": "#1f77b4", "qd": "#e377c2", "graph": "#2ca02c", "kaping": "#ff7f0e"}
    for ax, col in zip(axes[0], cols, strict=True):
        sub = sorted(
            [c for c in chosen if (c.dataset, c.set_key) == col],
            key=lambda c: mode_rank(c.config.get("mode", "")),
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
        ax.set_title(column_label(col, True))
        ax.set_xlabel("Number of sub-questions")
        ax.set_xticks(range(width + 1))
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("Count")
    fig.suptitle("Number of generated sub-questions per question set")
    return _save(fig, plt, path)


def chart_ceiling(cells: Sequence[Cell], path: Path) -> Path:
    """Figure 5's layout for the retrieval ceiling: bars = gold in top-K per N and K, black
    ticks = gold among all candidates at that N."""
    plt = _pyplot()
    ceiling = ceiling_cells(cells)
    cols = columns(ceiling)
    fig, axes = plt.subplots(1, len(cols), figsize=(5 * len(cols), 4), squeeze=False)
    blues = plt.get_cmap("Blues")
    for ax, col in zip(axes[0], cols, strict=True):
        cell = next(c for c in ceiling if (c.dataset, c.set_key) == col)
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
        ax.set_title(f"{column_label(col, True)} ({cell.questions} questions)")
        ax.set_xlabel("Number of hops for candidate retrieval (N)")
        ax.set_ylabel("share of questions with gold reachable")
        ax.legend(loc="best", fontsize=8)
    fig.suptitle("Retrieval ceiling: gold answer among the candidates and the top-K")
    return _save(fig, plt, path)
