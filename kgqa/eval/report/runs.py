"""Loading run directories and grouping them: a :class:`Run` per directory (its aggregate
recomputed from ``records.jsonl``, never trusted from a summary), a :class:`Cell` per
configuration over seeds, and the views the report and the charts draw (modes per set, the
N x K grid, the decomposing modes)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgqa.errors import ConfigError
from kgqa.eval import metrics as M
from kgqa.eval import runner
from kgqa.modes import MODES

MODE_ORDER = MODES
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

# A question set as tables show it: the hop count, or the set's folder name ("conj").
SetKey = int | str


def set_key(config: dict[str, Any]) -> SetKey:
    hops = config.get("hops")
    if hops:
        return int(hops)
    path = Path(str(config.get("data_file") or ""))
    return path.parent.name or path.stem


def set_label(key: SetKey) -> str:
    """``2-hop``, ``conj``."""
    return f"{key}-hop" if isinstance(key, int) else key


def set_rank(key: SetKey) -> tuple[int, int, str]:
    """Hop sets first, by hop count, then the others by name."""
    return (0, key, "") if isinstance(key, int) else (1, 0, key)


def mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


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


@dataclass(frozen=True)
class Run:
    dir: Path
    config: dict[str, Any]
    records: list[dict[str, Any]]
    aggregate: dict[str, Any]
    # The data folder's name ("" when the manifest does not say: runs made by hand).
    dataset: str = ""

    @property
    def kind(self) -> str:
        return str(self.config.get("kind", "answer"))

    @property
    def cell(self) -> tuple[Any, ...]:
        """What a run shares with its other-seed siblings."""
        c = self.config
        if self.kind == "ceiling":
            return ("ceiling", self.dataset, c.get("split"), set_key(c))
        return (
            "answer",
            self.dataset,
            c.get("split"),
            set_key(c),
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
    def dataset(self) -> str:
        return self.runs[0].dataset

    @property
    def set_key(self) -> SetKey:
        return set_key(self.config)

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
    # Runs before session 4 name their data folder only (data_dir).
    dataset = manifest.get("dataset") or (
        Path(manifest["data_dir"]).name if manifest.get("data_dir") else ""
    )
    return Run(path, config, records, agg, str(dataset))


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
    """Ceiling cells after answer cells; then dataset, split, set, mode (paper order), N, K,
    model."""
    if key[0] == "ceiling":
        _, dataset, split, qset = key
        return (1, dataset, str(split), set_rank(qset), 0, 0, 0, "")
    _, dataset, split, qset, mode, n, k, model = key
    return (
        0,
        dataset,
        str(split),
        set_rank(qset),
        mode_rank(mode or ""),
        n or 0,
        k or 0,
        str(model),
    )


# -- views ----------------------------------------------------------------------------------

# A column of the modes view: (dataset, question set).
Column = tuple[str, SetKey]


def answer_cells(cells: Sequence[Cell]) -> list[Cell]:
    return [c for c in cells if c.key[0] == "answer"]


def ceiling_cells(cells: Sequence[Cell]) -> list[Cell]:
    return [c for c in cells if c.key[0] == "ceiling"]


def several_datasets(cells: Sequence[Cell]) -> bool:
    return len({c.dataset for c in cells}) > 1


def column_label(column: Column, with_dataset: bool) -> str:
    dataset, qset = column
    return f"{dataset} {set_label(qset)}" if with_dataset and dataset else set_label(qset)


def mode_cells(cells: Sequence[Cell]) -> dict[tuple[Column, str], Cell]:
    """For each ((dataset, set), mode), the cell with the most questions (ties: the larger
    N, K): the modes view (Figure 6)."""
    chosen: dict[tuple[Column, str], Cell] = {}
    for c in answer_cells(cells):
        key = ((c.dataset, c.set_key), c.config.get("mode") or "")
        rank = (c.questions, c.config.get("n_hops") or 0, c.config.get("top_k") or 0)
        best = chosen.get(key)
        if best is None or rank > (
            best.questions,
            best.config.get("n_hops") or 0,
            best.config.get("top_k") or 0,
        ):
            chosen[key] = c
    return chosen


def columns(cells: Iterable[Cell]) -> list[Column]:
    """The (dataset, set) pairs of the cells, in order."""
    return sorted({(c.dataset, c.set_key) for c in cells}, key=lambda c: (c[0], set_rank(c[1])))


def mode_view(
    cells: Sequence[Cell],
) -> tuple[dict[tuple[Column, str], Cell], list[Column], list[str]]:
    """The modes view's cells, its columns (dataset, set) in order and its modes in paper
    order."""
    chosen = mode_cells(cells)
    modes = sorted({m for _, m in chosen}, key=mode_rank)
    return chosen, columns(chosen.values()), modes


def grid_groups(cells: Sequence[Cell]) -> dict[tuple[str, str, str], list[Cell]]:
    """Answer cells per (dataset, mode, model) that span more than one (N, K): Experiment 1."""
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for c in answer_cells(cells):
        key = (c.dataset, c.config.get("mode", ""), c.config.get("model", ""))
        groups.setdefault(key, []).append(c)
    return {
        k: v
        for k, v in groups.items()
        if len({(c.config.get("n_hops"), c.config.get("top_k")) for c in v}) > 1
    }


def grid_sets(group: Sequence[Cell]) -> list[SetKey]:
    return sorted({c.set_key for c in group}, key=set_rank)


def subquestion_counts(cell: Cell) -> Counter[int]:
    counts: Counter[int] = Counter()
    for run in cell.runs:
        for r in run.records:
            if r.get("status") == "ok":
                counts[int((r.get("metrics") or {}).get("n_sub_questions", 0))] += 1
    return counts


def decomposing(cells: Iterable[Cell]) -> list[Cell]:
    """Cells of modes that decompose questions (Figure 8 is about them): not ``llm``, and not
    ``kaping`` whose single "sub-question" is the question itself."""
    return [
        c
        for c in cells
        if c.config.get("mode") not in ("llm", "kaping") and subquestion_counts(c).keys() - {0}
    ]
