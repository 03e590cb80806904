"""Benchmark runs and the paper's experiments as library calls (``kgqa eval`` renders them).

- :func:`run_set`: one seeded sample of one question set, answered by one mode (``eval run``,
  ``eval metaqa``), scored and checked, resumable;
- :func:`grid`: Experiment 1, every N x K cell on seeded samples of each set;
- :func:`ceiling_grid`: Experiment 1's retrieval ceiling (no LLM);
- :func:`compare`: Experiment 2, several modes on the same seeded samples.

Each takes the questions (one set of a :class:`~kgqa.eval.datasets.Dataset`, or
:class:`Samples`: sets x seeds) and an :class:`EvalFactory` that builds the rest (the pipeline
per mode, the retriever, the graph reads of the faithfulness check), and returns typed results
(a :class:`~kgqa.eval.runner.RunResult` or a :class:`Table`); run directories are named after
the data folder (:func:`kgqa.eval.runner.run_name`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kgqa.check import FaithfulnessChecker, KBGraph
from kgqa.errors import ConfigError, GraphUnavailable
from kgqa.eval import metaqa
from kgqa.eval.datasets import Dataset, GoldPath, Question, QuestionSet, sample
from kgqa.eval.faithfulness import eval_checker, summarize
from kgqa.eval.report import summary_rows
from kgqa.eval.runner import (
    GRAPH_MODES,
    CeilingConfig,
    Checker,
    EvalConfig,
    RunResult,
    fingerprint,
    run_ceiling,
    run_eval,
    run_name,
)
from kgqa.pipeline.base import QAPipeline, Retriever
from kgqa.settings import Settings, as_dict

# How qtype labels (qa_<split>_qtype.txt) become gold relation paths: by the benchmark whose
# labels they are, or not at all.
QTYPE_READERS: Mapping[str, GoldPath | None] = {"metaqa": metaqa.gold_path, "none": None}


class EvalFactory(Protocol):
    """What the experiments need of :class:`kgqa.factory.Factory`."""

    settings: Settings

    def pipeline(self, mode: str) -> QAPipeline: ...

    def retriever(self) -> Retriever: ...

    def rubric(self) -> KBGraph: ...

    def close(self) -> None: ...


def open_dataset(root: Path, qtypes: str = "metaqa") -> Dataset:
    """The data folder, with its qtype labels read by ``qtypes`` (a :data:`QTYPE_READERS` key)."""
    if qtypes not in QTYPE_READERS:
        raise ConfigError(f"--qtypes must be one of {', '.join(QTYPE_READERS)}, not {qtypes!r}")
    return Dataset.open(root, QTYPE_READERS[qtypes])


@dataclass(frozen=True)
class Sample:
    """The seeded sample of one question set, and the file it came from."""

    qset: QuestionSet
    seed: int
    questions: list[Question]
    # Relative to the data folder, and its sha256 prefix (part of the run's config).
    data_file: str
    fingerprint: str


def load_sample(
    dataset: Dataset, qset: QuestionSet, split: str, limit: int | None, seed: int
) -> Sample:
    path = dataset.question_file(qset, split)
    questions = sample(dataset.load(qset, split), limit, seed)
    return Sample(
        qset, seed, questions, path.relative_to(dataset.root).as_posix(), fingerprint(path)
    )


@dataclass(frozen=True)
class Table:
    """Results grouped over seeds (:func:`kgqa.eval.report.summary_rows`): one row per
    combination of ``keys``, with ``<metric>_mean`` and ``<metric>_std``."""

    rows: list[dict[str, Any]]
    keys: list[str]
    metrics: list[str]


def checker_for(factory: EvalFactory, dataset: Dataset) -> Checker:
    """The faithfulness check against the graph, as :func:`run_eval`'s hook, with the
    dataset's gold paths."""
    try:
        graph = factory.rubric()
    except GraphUnavailable as e:
        raise GraphUnavailable(
            f"{e} (the faithfulness check reads the graph; --no-check skips it)"
        ) from e
    return eval_checker(FaithfulnessChecker(graph), dataset.gold_path)


def with_faith(result: RunResult) -> dict[str, Any]:
    """The run's aggregate with the faithfulness figures (mistake rate per answer entity,
    questions with a mistake, omissions) of the records the check ran on."""
    return {**result.aggregate, **summarize(result.records)}


def _manifest(dataset: Dataset, settings: Settings) -> dict[str, Any]:
    """What run.json keeps beside the config: where the data came from and, for the audit,
    the settings that shape answers (connection details are not part of a result)."""
    kb = dataset.kb_file()
    data = as_dict(settings)
    return {
        "dataset": dataset.name,
        "data_dir": str(dataset.root.resolve()),
        "entity_names": str(kb.resolve()) if kb else None,
        "settings": {k: data[k] for k in ("retrieval", "llm", "embed") if k in data},
    }


def _answer(
    factory: EvalFactory,
    dataset: Dataset,
    s: Sample,
    split: str,
    limit: int | None,
    pipeline: QAPipeline,
    runs: Path,
    out: Path | None = None,
    **options: Any,
) -> RunResult:
    """One answer run of one sample (into ``out``, default ``runs/<name from the config>``),
    its aggregate with the faithfulness figures. ``options`` go to :func:`run_eval`."""
    settings = factory.settings
    config = EvalConfig(
        data_file=s.data_file,
        hops=s.qset.hops,
        split=split,
        limit=limit,
        seed=s.seed,
        mode=pipeline.mode,
        n_hops=settings.retrieval.hops,
        top_k=settings.retrieval.top_k,
        model=settings.llm.model,
        data_fingerprint=s.fingerprint,
    )
    result = run_eval(
        pipeline,
        s.questions,
        out or runs / run_name(config, dataset.name),
        config,
        extra_manifest=_manifest(dataset, settings),
        **options,
    )
    return dataclasses.replace(result, aggregate=with_faith(result))


def run_set(
    factory: EvalFactory,
    dataset: Dataset,
    qset: QuestionSet,
    split: str,
    *,
    mode: str,
    limit: int | None,
    seed: int,
    out: Path | None = None,
    runs_dir: Path = Path("runs"),
    check: bool = True,
    ceiling: bool = True,
    retry_errors: bool = False,
    progress: bool = True,
) -> RunResult:
    """Answer the seeded sample of one set with ``mode`` into ``out`` (default:
    ``runs_dir/<name from the config>``), resuming what is there. The result's aggregate
    includes the faithfulness figures (:func:`with_faith`)."""
    s = load_sample(dataset, qset, split, limit, seed)
    return _answer(
        factory,
        dataset,
        s,
        split,
        limit,
        factory.pipeline(mode),
        runs_dir,
        out,
        retriever=factory.retriever() if mode in GRAPH_MODES and ceiling else None,
        checker=checker_for(factory, dataset) if check else None,
        entity_names=dataset.entity_names(),
        retry_errors=retry_errors,
        progress=progress,
    )


@dataclass(frozen=True)
class Samples:
    """The questions of an experiment: the seeded sample of ``limit`` questions of each set
    of ``dataset``, for each seed."""

    dataset: Dataset
    sets: Sequence[QuestionSet]
    split: str
    limit: int | None
    seeds: Sequence[int]

    def load(self) -> list[Sample]:
        """Every (set, seed) sample, loaded up front so that a missing file fails before any
        run."""
        return [
            load_sample(self.dataset, q, self.split, self.limit, seed)
            for q in self.sets
            for seed in self.seeds
        ]


def _table(
    results: Sequence[Mapping[str, Any]],
    sets: Sequence[QuestionSet],
    keys: list[str],
    metrics: list[str],
    then: Callable[[dict[str, Any]], Any],
) -> Table:
    """The per-run results grouped over seeds, rows in the order of ``sets``, then ``then``."""
    order = {q.key: i for i, q in enumerate(sets)}
    rows = summary_rows(results, keys, metrics)
    return Table(sorted(rows, key=lambda r: (order[r["hops"]], then(r))), keys, metrics)


def grid(
    factory_for: Callable[[int, int], EvalFactory],
    samples: Samples,
    *,
    n_values: Sequence[int],
    k_values: Sequence[int],
    mode: str,
    out: Path,
    check: bool = True,
    progress: bool = True,
) -> Table:
    """Experiment 1: ``mode`` in every N x K cell (one factory, hence one model load, per
    cell from ``factory_for(N, K)``) on every (set, seed) sample; mean ± std over seeds."""
    dataset, split = samples.dataset, samples.split
    loaded = samples.load()
    names = dataset.entity_names()
    results: list[dict[str, Any]] = []
    for n in n_values:
        for k in k_values:
            with closing(factory_for(n, k)) as factory:
                pipeline = factory.pipeline(mode)
                checker = checker_for(factory, dataset) if check else None
                for s in loaded:
                    run = _answer(factory, dataset, s, split, samples.limit, pipeline, out,
                                  checker=checker, entity_names=names, progress=progress)  # fmt: skip
                    row = {"hops": s.qset.key, "seed": s.seed, "N": n, "K": k}
                    results.append(row | run.aggregate)
    metrics = ["hit1_paper", "hit1_entity", "f1"]
    return _table(results, samples.sets, ["hops", "N", "K"], metrics, lambda r: (r["N"], r["K"]))


def ceiling_grid(
    factory: EvalFactory,
    samples: Samples,
    *,
    n_values: Sequence[int],
    k_values: Sequence[int],
    out: Path,
    progress: bool = True,
) -> Table:
    """Experiment 1's retrieval ceiling: gold among the candidates (each N) and their top-K
    (each K) on every (set, seed) sample, no LLM; one run directory per set and seed."""
    retriever = factory.retriever()
    results: list[dict[str, Any]] = []
    dataset = samples.dataset
    for s in samples.load():
        config = CeilingConfig(
            s.data_file, s.qset.hops, samples.split, samples.limit, s.seed, tuple(n_values),
            tuple(k_values), s.fingerprint,
        )  # fmt: skip
        run = run_ceiling(
            retriever,
            s.questions,
            out / run_name(config, dataset.name),
            config,
            progress=progress,
            extra_manifest=_manifest(dataset, factory.settings),
        )
        for n, cell in run.aggregate["by_n"].items():
            row = {
                "hops": s.qset.key,
                "seed": s.seed,
                "N": int(n),
                "n": run.aggregate["n"],
                "in_candidates": cell["in_candidates"],
            }
            for k, v in cell["in_top_k"].items():
                results.append({**row, "K": int(k), "in_top_k": v})
    metrics = ["in_candidates", "in_top_k"]
    return _table(results, samples.sets, ["hops", "N", "K"], metrics, lambda r: (r["N"], r["K"]))


def compare(
    factory: EvalFactory,
    samples: Samples,
    *,
    modes: Sequence[str],
    out: Path,
    check: bool = True,
    progress: bool = True,
) -> Table:
    """Experiment 2: every mode on the same (set, seed) samples, with one factory so that the
    models load once; mean ± std over seeds per set and mode."""
    pipelines = {m: factory.pipeline(m) for m in modes}
    retriever = factory.retriever() if GRAPH_MODES & set(modes) else None
    checker = checker_for(factory, samples.dataset) if check else None
    dataset = samples.dataset
    names = dataset.entity_names()
    results: list[dict[str, Any]] = []
    for s in samples.load():
        for m in modes:
            run = _answer(factory, dataset, s, samples.split, samples.limit, pipelines[m], out,
                          retriever=retriever, checker=checker, entity_names=names,
                          progress=progress)  # fmt: skip
            results.append({"hops": s.qset.key, "seed": s.seed, "mode": m} | run.aggregate)
    metrics = ["hit1_paper", "hit1_entity", "f1", "mistake_rate", "omissions", "seconds_median"]
    order = list(modes)
    return _table(
        results, samples.sets, ["hops", "mode"], metrics, lambda r: order.index(r["mode"])
    )
