"""Graph mode's decomposition with and without the step grammar: right paths and seconds.

For seeded MetaQA dev questions, graph mode's decomposition prompt runs twice on each
question with the default model: with free output, and held by the step grammar
(kgqa.graphmode.vocabulary.StepVocabulary, from the KB profile) to steps that each name one (relation, direction),
the first one among those the topic entity has. A decomposition is right when the relations
its steps follow are the qtype's gold path. Free steps are read the way graph mode read them
before the grammar: each step's relation is the best phrasing match among the options at the
frontier, walking the gold frontier (so a free step is not blamed for an earlier wrong one).
A one-step answer counts as right for a 1-hop question (graph mode then reads the question
itself, 0.995-1.00 right; docs/results.md). Needs the full KB loaded; takes about 2 x 3 s per
question on one thread.

    .venv/bin/python benchmarks/bench_step_grammar.py --sample 30 --seeds 0,1 --hops 1,2,3
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from kgqa.eval.datasets import load_split, sample
from kgqa.eval.metaqa import metaqa_path
from kgqa.factory import Factory
from kgqa.graphmode.pipeline import asks_something
from kgqa.settings import load_settings
from kgqa.types import StageCost

Key = tuple[str, bool]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/metaqa"))
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--hops", default="1,2,3")
    args = ap.parse_args()
    settings = load_settings()
    seeds = [int(s) for s in args.seeds.split(",")]
    with Factory(settings) as f:
        pipeline = f.pipeline("graph")
        walker, vocab, decomposer = pipeline.walker, pipeline.vocabulary, pipeline.decomposer
        assert vocab is not None and decomposer is not None
        stop = pipeline.profile.stop_words if pipeline.profile is not None else frozenset()
        print(f"model {settings.llm.model}, {settings.llm.n_threads or 'default'} thread(s)")
        print(
            "hops | n | free: right paths | grammar: right paths | free s/q | grammar s/q | ratio"
        )
        for hops in [int(h) for h in args.hops.split(",")]:
            right: dict[str, int] = defaultdict(int)
            seconds: dict[str, list[float]] = defaultdict(list)
            n = 0
            for seed in seeds:
                for q in sample(load_split(args.data, hops, "dev"), args.sample, seed):
                    n += 1
                    gold = [(s.relation, s.outgoing) for s in metaqa_path(q.qtype)]
                    for label, grammar in (
                        ("free", None),
                        ("grammar", pipeline.step_grammar(q.entities)),
                    ):
                        costs: list[StageCost] = []
                        steps = [
                            s
                            for s in decomposer.run(q.text, costs, grammar=grammar).sub_questions
                            if grammar is not None or asks_something(s, stop)
                        ]
                        seconds[label].append(costs[0].seconds)
                        if len(steps) <= 1:
                            right[label] += hops == 1
                            continue
                        if grammar is not None:
                            keys = vocab.keys(steps, pipeline.first_steps(q.entities))
                        else:
                            keys = free_keys(walker, list(q.entities), steps, gold)
                        right[label] += keys == gold
            free, gram = (statistics.median(seconds[k]) for k in ("free", "grammar"))
            print(
                f"{hops} | {n} | {right['free'] / n:.2f} | {right['grammar'] / n:.2f} | "
                f"{free:.2f} | {gram:.2f} | {gram / free:.2f}"
            )
    return 0


def free_keys(walker, entities: list[str], steps: list[str], gold: list[Key]) -> list[Key | None]:
    """The option each free step picks at the gold frontier (phrasing match, as the walk does)."""
    keys: list[Key | None] = []
    frontier = entities
    previous: Key | None = None
    for i, step in enumerate(steps):
        scored = walker._score(step, walker._groups(frontier), previous)
        options, groups = scored.options, scored.groups
        keys.append((options[0].relation, options[0].outgoing) if options else None)
        if i >= len(gold) or gold[i] not in groups:
            break
        frontier = sorted({e.to_name for e in groups[gold[i]]} - set(entities))[:2000]
        previous = gold[i]
    return keys


if __name__ == "__main__":
    raise SystemExit(main())
