"""Faithfulness-check benchmark (not a test): the check of ``kgqa.check`` run on
MetaQA dev questions with known answers, against the Neo4j that the settings point at
(read-only). No LLM.

    NEO4J_URI=bolt://127.0.0.1:7687 NEO4J_PASSWORD=... \\
        .venv/bin/python benchmarks/bench_faithfulness.py --limit 40 --seed 0

For each hop and each seeded question (qtype path from ``qa_dev_qtype.txt``):

1. **gold**: the gold answers written as a free-text answer (``"a, b, c"``, read by the same
   parser as eval) must give 0 mistakes; the omissions left are entities the qtype path
   reaches that MetaQA's gold set does not list (the README's quirks), and gold answers the
   path does not reach show up as "off path".
2. **gold-grounded**: the same answers as ``answer_entities`` (no parsing).
3. **shuffled**: the gold answers of another question of the same hop (a derangement of the
   sample): a wrong answer, so mistakes and omissions must appear.

Prints counts, the residuals with examples, and the check's time per question.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from kgqa.check import FaithfulnessChecker, FaithReport
from kgqa.eval.datasets import Question, load_split, sample
from kgqa.eval.metaqa import metaqa_path
from kgqa.factory import Factory
from kgqa.settings import load_settings
from kgqa.types import Answer, AnswerEntity


def _answer(q: Question, names: tuple[str, ...], grounded: bool) -> Answer:
    if grounded:
        entities = tuple(AnswerEntity(n) for n in names)
        return Answer(q.text, q.entities, "gold", ", ".join(names), answer_entities=entities)
    return Answer(q.text, q.entities, "gold", ", ".join(names))


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def run(checker: FaithfulnessChecker, questions: list[Question], hops: int, seed: int) -> None:
    others = list(range(len(questions)))
    rng = random.Random(seed)
    while len(others) > 1 and any(i == j for i, j in enumerate(others)):
        rng.shuffle(others)
    for variant in ("gold", "gold-grounded", "shuffled"):
        reports: list[tuple[Question, FaithReport]] = []
        seconds: list[float] = []
        for i, q in enumerate(questions):
            names = questions[others[i]].answers if variant == "shuffled" else q.answers
            a = _answer(q, names, grounded=variant == "gold-grounded")
            start = time.perf_counter()
            report = checker.check(a, q.entities, hops, metaqa_path(q.qtype or ""))
            seconds.append(time.perf_counter() - start)
            reports.append((q, report))
        claims = sum(len(r.answer_claims) for _, r in reports)
        wrong = sum(len(r.answer_mistakes) for _, r in reports)
        with_mistakes = sum(1 for _, r in reports if r.mistakes)
        omitted = [len(r.omissions or ()) for _, r in reports]
        off = sum(len(r.off_path) for _, r in reports)
        print(
            f"{hops}-hop {variant:<13} n={len(reports)} answer entities={claims} "
            f"mistakes={wrong} ({wrong / max(claims, 1):.3f}) questions with mistakes="
            f"{with_mistakes} omissions mean={statistics.fmean(omitted):.2f} "
            f"(questions with any: {sum(1 for o in omitted if o)}) off-path={off} | check ms "
            f"median={1000 * statistics.median(seconds):.0f} p95={1000 * _pct(seconds, 0.95):.0f} "
            f"max={1000 * max(seconds):.0f}"
        )
        if variant != "shuffled":
            for q, r in reports:
                if r.mistakes or r.omissions or r.off_path:
                    print(
                        f"    q{q.id} {q.qtype} [{q.entity}]: mistakes "
                        f"{[(c.span, c.reason) for c in r.mistakes][:3]} omitted "
                        f"{list(r.omissions or ())[:3]} ({len(r.omissions or ())}) off-path "
                        f"{[c.entity for c in r.off_path][:3]}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/metaqa"))
    parser.add_argument("--hops", default="1,2,3")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = load_settings()
    with Factory(settings) as factory:
        checker = FaithfulnessChecker(factory.rubric())
        for h in (int(x) for x in args.hops.split(",")):
            questions = sample(load_split(args.data, h, "dev"), args.limit, args.seed)
            run(checker, questions, h, args.seed)


if __name__ == "__main__":
    main()
