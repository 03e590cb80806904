"""Terminal tables: one run's aggregate (``eval run``/``eval metaqa``), and per-run results
grouped over seeds (``eval grid``/``eval compare``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgqa.eval.report.runs import mean_std


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
        ("answers cut at the token limit", _cut(agg)),
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


def _cut(agg: Mapping[str, Any]) -> str:
    """``3 (answer 2, synthesize 1)``; a dash for runs aggregated before it was counted."""
    if "cut_answers" not in agg:
        return "—"
    by_stage = agg.get("cut_by_stage") or {}
    stages = ", ".join(f"{stage} {n}" for stage, n in by_stage.items())
    return f"{agg['cut_answers']}" + (f" ({stages})" if stages else "")


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
