"""Reports over run directories, by what they do:

- :mod:`~kgqa.eval.report.runs`: loading runs (aggregates recomputed from ``records.jsonl``,
  never trusted from a summary), grouping them over seeds into cells, the views;
- :mod:`~kgqa.eval.report.markdown`: ``report.md`` (``write_report``);
- :mod:`~kgqa.eval.report.charts`: the PNG charts in the style of the paper's Figures 5, 6
  and 8;
- :mod:`~kgqa.eval.report.terminal`: the tables ``kgqa eval`` prints.
"""

from kgqa.eval.report.charts import chart_ceiling, chart_grid, chart_modes, chart_subquestions
from kgqa.eval.report.markdown import CHART_METRICS, markdown, write_report
from kgqa.eval.report.runs import (
    METRIC_LABELS,
    MODE_LABELS,
    MODE_ORDER,
    Cell,
    Run,
    find_runs,
    fmt_ms,
    group_cells,
    load_run,
    mean_std,
    subquestion_counts,
)
from kgqa.eval.report.terminal import format_aggregate, format_rows, summary_rows

__all__ = [
    "CHART_METRICS",
    "METRIC_LABELS",
    "MODE_LABELS",
    "MODE_ORDER",
    "Cell",
    "Run",
    "chart_ceiling",
    "chart_grid",
    "chart_modes",
    "chart_subquestions",
    "find_runs",
    "fmt_ms",
    "format_aggregate",
    "format_rows",
    "group_cells",
    "load_run",
    "markdown",
    "mean_std",
    "subquestion_counts",
    "summary_rows",
    "write_report",
]
