"""Resumable, auditable benchmark runs.

A run directory holds ``run.json`` (the config and the environment it ran in),
``records.jsonl`` (one record per question, appended and fsynced as each question finishes)
and, at the end, ``aggregate.json``. Running the same config into the same directory again
skips the finished questions, so a long run survives interruptions and can be spread over
several sessions; a different config is refused, naming what differs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kgqa.answers import answer_line, first_entity
from kgqa.document import answer_document
from kgqa.errors import (
    ConfigError,
    GraphUnavailable,
    IndexMismatch,
    LLMUnavailable,
    ModelNotFound,
    Neo4jServerError,
    PromptError,
)
from kgqa.eval import metrics as M
from kgqa.eval.datasets import Question
from kgqa.modes import GRAPH_READING
from kgqa.pipeline.base import QAPipeline, Retriever
from kgqa.types import Answer

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"
AGGREGATE_FILE = "aggregate.json"

# Errors that would fail every following question too (the server is down, the model or
# index is missing): stop the run instead of filling it with error records.
FATAL_ERRORS: tuple[type[BaseException], ...] = (
    GraphUnavailable,
    Neo4jServerError,
    LLMUnavailable,
    ModelNotFound,
    IndexMismatch,
    ConfigError,
    PromptError,
    MemoryError,
)
# Modes that retrieve from the graph, and so have a candidate set to measure a ceiling on.
GRAPH_MODES = frozenset(GRAPH_READING)

Checker = Callable[[Question, Answer], Mapping[str, Any]]


@dataclass(frozen=True)
class EvalConfig:
    """What defines a run: two runs with equal configs answer the same questions the same way."""

    data_file: str
    hops: int | None
    split: str | None
    limit: int | None
    seed: int
    mode: str
    n_hops: int
    top_k: int
    model: str
    # sha256 prefix of the question file: a moved data folder still resumes, an edited one not.
    data_fingerprint: str = ""
    kind: str = "answer"

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CeilingConfig:
    """A retrieval-ceiling run: no LLM, every N x K cell for the same questions."""

    data_file: str
    hops: int | None
    split: str | None
    limit: int | None
    seed: int
    n_values: tuple[int, ...] = (1, 2, 3)
    k_values: tuple[int, ...] = (10, 20, 30)
    data_fingerprint: str = ""
    kind: str = "ceiling"

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["n_values"], d["k_values"] = list(self.n_values), list(self.k_values)
        return d


@dataclass(frozen=True)
class RunResult:
    out_dir: Path
    aggregate: dict[str, Any]
    answered: int
    resumed: int
    records: list[dict[str, Any]] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "x"


def set_slug(config: EvalConfig | CeilingConfig) -> str:
    """The question set in a run name: ``2hop``, or the set's folder (``conj``)."""
    if config.hops:
        return f"{config.hops}hop"
    path = Path(config.data_file)
    return _slug(path.parent.name or path.stem)


def run_name(config: EvalConfig | CeilingConfig, dataset: str) -> str:
    """A directory name that spells the dataset (its folder's name) and the config:
    ``metaqa-2hop-dev-kgrag-N3-K30-<model>-s0-n100``, ``wc2014-conj-dev-ceiling-s0-n200``."""
    head = f"{_slug(dataset)}-{set_slug(config)}-{config.split}"
    size = f"n{config.limit}" if config.limit is not None else "all"
    if isinstance(config, CeilingConfig):
        return f"{head}-ceiling-s{config.seed}-{size}"
    model = _slug(Path(config.model).stem if "/" in config.model else config.model)
    return f"{head}-{config.mode}-N{config.n_hops}-K{config.top_k}-{model}-s{config.seed}-{size}"


def fingerprint(path: Path) -> str:
    """The first 16 hex digits of the file's sha256."""
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def kgqa_version() -> dict[str, str | None]:
    """The package version and, when run from a git checkout, the commit (for audits)."""
    from kgqa import __version__

    commit = None
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
        commit = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None  # not a checkout (an installed wheel): the version alone identifies it
    return {"version": __version__, "git": commit}


# -- the run directory ----------------------------------------------------------------------


def _mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [
        f"{k}: {old.get(k)!r} there, {new.get(k)!r} now" for k in keys if old.get(k) != new.get(k)
    ]


def open_run(
    out_dir: Path, config: EvalConfig | CeilingConfig, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Create ``out_dir/run.json``, or check that the run there has the same config.

    Growing ``limit`` is allowed (seeded samples are prefixes of each other, so the finished
    questions stay part of the larger sample); any other difference is a :class:`ConfigError`
    that names it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RUN_FILE
    new = config.as_dict()
    if path.is_file():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read {path}: {e}; remove it or use another --out") from e
        old = dict(manifest.get("config") or {})
        old_limit, new_limit = old.pop("limit", None), new.get("limit")
        rest = {k: v for k, v in new.items() if k != "limit"}
        diffs = _mismatch(old, rest)
        grows = old_limit is not None and (new_limit is None or new_limit > old_limit)
        if old_limit != new_limit and not grows:
            diffs.append(f"limit: {old_limit!r} there, {new_limit!r} now (a limit may only grow)")
        if diffs:
            raise ConfigError(
                f"{out_dir} holds a run with another config ({'; '.join(diffs)}); "
                "use another --out or remove that directory"
            )
        if old_limit != new_limit:
            manifest["config"]["limit"] = new_limit
            manifest.setdefault("history", []).append({"limit_grown_to": new_limit, "at": _now()})
            _write_json(path, manifest)
        return manifest
    manifest = {
        "config": new,
        "kgqa": kgqa_version(),
        "created": _now(),
        "python": sys.version.split()[0],
        **dict(extra or {}),
    }
    _write_json(path, manifest)
    return manifest


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(f"{run_dir} is not a run directory (no {RUN_FILE})") from e
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from e


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a run, one per question id (a retried question's last record wins).
    A torn last line (the process died while writing it) is ignored."""
    path = run_dir / RECORDS_FILE
    if not path.is_file():
        return []
    by_id: dict[int, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            by_id[int(record["id"])] = record
    return list(by_id.values())


def _repair_tail(path: Path) -> None:
    """Cut a torn last line so that the next append starts on a line of its own."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def _append(f: IO[str], record: Mapping[str, Any]) -> None:
    f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    f.flush()
    os.fsync(f.fileno())


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
    os.replace(tmp, path)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# -- one question ---------------------------------------------------------------------------


def _base_record(q: Question, config: EvalConfig | CeilingConfig) -> dict[str, Any]:
    return {
        "kind": config.kind,
        "id": q.id,
        "hops": q.hops,
        "qtype": q.qtype,
        "question": q.text,
        "entities": list(q.entities),
        "gold": list(q.answers),
    }


def answer_metrics(
    q: Question, answer: Answer, entity_names: Collection[str] | None = None
) -> dict[str, Any]:
    """The per-question metrics of one answer (see :mod:`kgqa.eval.metrics`)."""
    predicted = M.predicted_answers(answer, q.answers, entity_names)
    prf = M.set_prf(predicted, q.answers)
    evidence = [e for s in answer.sub_answers for e in s.evidence]
    return {
        # The generated answer is the answer line: every mode puts it first (synthesis prompt),
        # an explanation may follow on later lines (docs/eval.md).
        "hit1_paper": M.hit1_paper(answer_line(answer.text), q.answers),
        "hit1_entity": M.hit1_entity(answer, q.answers, entity_names),
        "top_entity": (
            answer.ranked_entities[0].name
            if answer.ranked_entities
            else first_entity(answer.text, q.answers, entity_names)
        ),
        "predicted": predicted,
        "precision": prf.precision,
        "recall": prf.recall,
        "f1": prf.f1,
        "n_sub_questions": len(answer.sub_answers),
        # Gold among the triples the sub-questions were answered from (the top-K ceiling).
        "in_top_k": M.gold_reachable(q.answers, evidence) if evidence else None,
    }


def answer_record(
    q: Question,
    answer: Answer,
    seconds: float,
    config: EvalConfig,
    run_meta: Mapping[str, Any],
    entity_names: Collection[str] | None = None,
) -> dict[str, Any]:
    """Everything needed to audit one answered question: the question, the answer as
    :func:`kgqa.document.answer_document` writes it, the metrics, costs and run fields."""
    record = _base_record(q, config)
    record.update(
        status="ok",
        answer=answer_document(answer),
        metrics=answer_metrics(q, answer, entity_names),
        costs=[dataclasses.asdict(c) for c in answer.costs],
        seconds=round(seconds, 4),
        parameters=dict(answer.parameters),
        **run_meta,
    )
    return record


def error_record(
    q: Question,
    error: BaseException,
    seconds: float,
    config: EvalConfig,
    run_meta: Mapping[str, Any],
) -> dict[str, Any]:
    """A question the pipeline failed on: counted as a miss, kept for the audit."""
    record = _base_record(q, config)
    record.update(
        status="error",
        error={"type": type(error).__name__, "message": str(error)},
        metrics={
            "hit1_paper": False,
            "hit1_entity": False,
            "precision": 0.0,
            "recall": 0.0,
            "f1": 0.0,
        },
        costs=[],
        seconds=round(seconds, 4),
        **run_meta,
    )
    return record


# -- runs -----------------------------------------------------------------------------------


def _progress(total: int, initial: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="q",
        file=sys.stderr,
        disable=not enabled,
        dynamic_ncols=True,
    )


def run_eval(
    pipeline: QAPipeline,
    questions: Sequence[Question],
    out_dir: Path,
    config: EvalConfig,
    *,
    retriever: Retriever | None = None,
    checker: Checker | None = None,
    entity_names: Collection[str] | None = None,
    retry_errors: bool = False,
    progress: bool = True,
    extra_manifest: Mapping[str, Any] | None = None,
) -> RunResult:
    """Answer ``questions`` with ``pipeline`` into ``out_dir``, skipping finished ones.

    Each record is appended to ``records.jsonl`` and fsynced as soon as its question is done.
    An exception on one question becomes an error record (counted as a miss) unless it is one
    of :data:`FATAL_ERRORS`. With ``retriever``, the gold answers are also looked for among the
    candidates (N = ``config.n_hops``). ``checker(question, answer)`` may add metrics such as
    ``mistakes`` and ``omissions``. ``KeyboardInterrupt`` stops the run; what finished stays."""
    open_run(out_dir, config, extra_manifest)
    path = out_dir / RECORDS_FILE
    _repair_tail(path)
    wanted = {q.id for q in questions}
    done = {r["id"]: r for r in read_records(out_dir) if r["id"] in wanted}
    if retry_errors:
        done = {i: r for i, r in done.items() if r.get("status") == "ok"}
    todo = [q for q in questions if q.id not in done]
    run_meta = {
        "mode": config.mode,
        "model": config.model,
        "seed": config.seed,
        "n_hops": config.n_hops,
        "top_k": config.top_k,
        "kgqa_version": kgqa_version()["version"],
    }
    hits = [bool(r["metrics"].get("hit1_paper")) for r in done.values()]
    ent_hits = [bool(r["metrics"].get("hit1_entity")) for r in done.values()]
    desc = f"{config.mode} {set_slug(config)}"
    answered = 0
    bar = _progress(len(questions), len(done), desc, progress)
    try:
        with path.open("a", encoding="utf-8") as f:
            for q in todo:
                start = time.perf_counter()
                try:
                    answer = pipeline.answer(q.text, q.entities)
                except FATAL_ERRORS:
                    raise
                except Exception as e:  # one quirky question must not end a long run
                    record = error_record(q, e, time.perf_counter() - start, config, run_meta)
                else:
                    seconds = time.perf_counter() - start
                    record = answer_record(q, answer, seconds, config, run_meta, entity_names)
                    if retriever is not None and config.mode in GRAPH_MODES:
                        record["metrics"].update(_candidate_ceiling(retriever, q, config.n_hops))
                    if checker is not None:
                        record["metrics"].update(checker(q, answer))
                _append(f, record)
                done[q.id] = record
                answered += 1
                hits.append(bool(record["metrics"]["hit1_paper"]))
                ent_hits.append(bool(record["metrics"]["hit1_entity"]))
                bar.set_postfix(
                    hit1=f"{M.running_hit1(hits):.3f}", ent=f"{M.running_hit1(ent_hits):.3f}"
                )
                bar.update(1)
    finally:
        bar.close()
    records = [done[q.id] for q in questions if q.id in done]
    agg = M.aggregate(records)
    _write_json(out_dir / AGGREGATE_FILE, agg)
    return RunResult(out_dir, agg, answered, len(questions) - len(todo), records)


def _candidate_ceiling(retriever: Retriever, q: Question, hops: int) -> dict[str, Any]:
    try:
        candidates = retriever.candidates(q.entities, hops)
    except FATAL_ERRORS:
        raise
    except Exception as e:  # the answer stands; only this extra measurement is missing
        return {"in_candidates": None, "ceiling_error": f"{type(e).__name__}: {e}"}
    return {
        "in_candidates": M.gold_reachable(q.answers, candidates.triples),
        "candidates": len(candidates),
        "candidates_truncated": candidates.truncated,
    }


def ceiling_record(
    q: Question, retriever: Retriever, config: CeilingConfig, query: str | None = None
) -> dict[str, Any]:
    """Gold among the candidates (each N) and among their top-K for the question (each K).

    The ranking is computed once per N for the largest K; smaller K are its prefixes."""
    record = _base_record(q, config)
    text = query if query is not None else q.plain_text
    record["query"] = text
    by_n: dict[str, Any] = {}
    kmax = max(config.k_values)
    for n in config.n_values:
        start = time.perf_counter()
        candidates = retriever.candidates(q.entities, n)
        mid = time.perf_counter()
        ranked = retriever.top_k(text, candidates, kmax)
        end = time.perf_counter()
        ceiling = M.retrieval_ceiling(
            q.answers, candidates, M.top_k_prefixes(ranked, config.k_values)
        )
        by_n[str(n)] = {
            "candidates": len(candidates),
            "truncated": candidates.truncated,
            "skipped_hubs": len(candidates.skipped_hubs),
            "in_candidates": ceiling.in_candidates,
            "in_top_k": {str(k): v for k, v in ceiling.in_top_k.items()},
            "seconds_candidates": round(mid - start, 4),
            "seconds_top_k": round(end - mid, 4),
        }
    record.update(status="ok", by_n=by_n)
    return record


def run_ceiling(
    retriever: Retriever,
    questions: Sequence[Question],
    out_dir: Path,
    config: CeilingConfig,
    *,
    progress: bool = True,
    extra_manifest: Mapping[str, Any] | None = None,
) -> RunResult:
    """The retrieval ceiling over the N x K grid (no LLM), resumable like :func:`run_eval`."""
    open_run(out_dir, config, extra_manifest)
    path = out_dir / RECORDS_FILE
    _repair_tail(path)
    wanted = {q.id for q in questions}
    done = {r["id"]: r for r in read_records(out_dir) if r["id"] in wanted}
    todo = [q for q in questions if q.id not in done]
    bar = _progress(len(questions), len(done), f"ceiling {set_slug(config)}", progress)
    answered = 0
    try:
        with path.open("a", encoding="utf-8") as f:
            for q in todo:
                start = time.perf_counter()
                try:
                    record = ceiling_record(q, retriever, config)
                except FATAL_ERRORS:
                    raise
                except Exception as e:  # e.g. a MetaQA topic entity missing from the graph
                    record = _base_record(q, config)
                    record.update(
                        status="error",
                        error={"type": type(e).__name__, "message": str(e)},
                        seconds=round(time.perf_counter() - start, 4),
                    )
                _append(f, record)
                done[q.id] = record
                answered += 1
                bar.update(1)
    finally:
        bar.close()
    records = [done[q.id] for q in questions if q.id in done]
    agg = aggregate_ceiling(records)
    _write_json(out_dir / AGGREGATE_FILE, agg)
    return RunResult(out_dir, agg, answered, len(questions) - len(todo), records)


def aggregate_ceiling(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Fractions of questions whose gold is reachable, per N and per N x K (errors count as
    unreachable), with candidate-set sizes."""
    records = [r for r in records if r.get("kind") == "ceiling"]
    ok = [r for r in records if r.get("status") == "ok"]
    n = len(records)
    by_n: dict[str, Any] = {}
    for r in ok:
        for key, cell in r["by_n"].items():
            slot = by_n.setdefault(key, {"in_candidates": 0, "in_top_k": {}, "sizes": []})
            slot["in_candidates"] += bool(cell["in_candidates"])
            slot["sizes"].append(int(cell["candidates"]))
            for k, hit in cell["in_top_k"].items():
                slot["in_top_k"][k] = slot["in_top_k"].get(k, 0) + bool(hit)
    out: dict[str, Any] = {"n": n, "errors": n - len(ok), "by_n": {}}
    for key, slot in sorted(by_n.items(), key=lambda kv: int(kv[0])):
        sizes = sorted(slot["sizes"])
        out["by_n"][key] = {
            "in_candidates": slot["in_candidates"] / n if n else None,
            "in_top_k": {
                k: v / n for k, v in sorted(slot["in_top_k"].items(), key=lambda kv: int(kv[0]))
            },
            "candidates_median": statistics.median(sizes) if sizes else None,
            "candidates_p95": sizes[min(len(sizes) - 1, int(0.95 * len(sizes)))] if sizes else None,
        }
    return out
