"""The faithfulness check in eval runs: the hook that :func:`kgqa.eval.runner.run_eval` calls
for each answered question, and the run-level figures (mistake rate, omissions) of the records
it checked. The check itself is :mod:`kgqa.check`; a benchmark's gold relation paths come from
its reader (:func:`kgqa.eval.metaqa.gold_path` for MetaQA's qtype labels)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kgqa.check import FaithfulnessChecker
from kgqa.errors import GraphUnavailable, KGQAError, Neo4jServerError
from kgqa.eval.datasets import GoldPath, Question
from kgqa.types import Answer


def eval_checker(
    checker: FaithfulnessChecker, gold_path: GoldPath | None = None
) -> Callable[[Question, Answer], dict[str, Any]]:
    """The ``checker(question, answer)`` hook of :func:`kgqa.eval.runner.run_eval`: the check
    against the question's gold path when the benchmark has one (N = its length; else the
    question's hop count; else the number of sub-questions).

    A question the check cannot run on (an unknown qtype, a Cypher error) gets
    ``faith_error`` instead of counts; a lost server stops the run like any fatal error."""

    def check(q: Question, answer: Answer) -> dict[str, Any]:
        try:
            path = gold_path(q) if gold_path is not None else None
            hops = len(path) if path else (q.hops or max(1, len(answer.sub_answers)))
            return checker.check(answer, q.entities, hops, path).as_metrics()
        except (GraphUnavailable, Neo4jServerError):
            raise
        except KGQAError as e:
            return {"faith_error": str(e)}

    return check


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The run-level faithfulness figures from eval records (those the check ran on):
    ``mistake_rate`` (mistaken final-answer entities / final-answer entities),
    ``questions_with_mistakes`` (fraction with at least one mistake at any stage),
    ``mistakes``/``omissions`` (means per question), totals, and the check's median time."""
    rows = [
        r.get("metrics") or {}
        for r in records
        if r.get("status") == "ok" and "mistakes" in (r.get("metrics") or {})
    ]
    if not rows:
        return {}
    claims = sum(int(m.get("answer_claims", 0)) for m in rows)
    wrong = sum(int(m.get("answer_mistakes", 0)) for m in rows)
    out: dict[str, Any] = {
        "checked": len(rows),
        "mistakes": statistics.fmean(int(m["mistakes"]) for m in rows),
        "mistakes_total": sum(int(m["mistakes"]) for m in rows),
        "questions_with_mistakes": sum(1 for m in rows if int(m["mistakes"]) > 0) / len(rows),
        "answer_claims_total": claims,
        "answer_mistakes_total": wrong,
        "mistake_rate": wrong / claims if claims else None,
    }
    omitted = [int(m["omissions"]) for m in rows if "omissions" in m]
    if omitted:
        out["omissions"] = statistics.fmean(omitted)
        out["omissions_total"] = sum(omitted)
        out["off_path_total"] = sum(int(m.get("off_path", 0)) for m in rows)
    seconds = [float((m.get("faith") or {}).get("seconds", 0.0)) for m in rows]
    out["check_seconds_median"] = statistics.median(seconds)
    return out


def format_summary(summary: Mapping[str, Any]) -> str:
    """One line for the terminal after the aggregate table (empty when nothing was checked)."""
    if not summary.get("checked"):
        return ""
    rate = summary.get("mistake_rate")
    rate_text = f"{rate:.3f}" if rate is not None else "—"
    return (
        f"faithfulness: mistake rate {rate_text} of {summary['answer_claims_total']} answer "
        f"entities, {summary['questions_with_mistakes']:.2f} of {summary['checked']} questions "
        f"with a mistake, {summary.get('omissions', 0.0):.2f} omissions per question "
        f"(check {1000 * summary['check_seconds_median']:.0f} ms median)"
    )
