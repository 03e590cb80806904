"""The paper's pipeline (``--mode kgrag``) per question, its facts written one triple per line
(the paper's way, the baseline) and grouped (``retrieval.facts = grouped``), in one process.

Each seeded dev question of each hop is answered both ways, alternating which goes first, by
one factory (one model, one index, one Neo4j connection; the second way shares them), after
one untimed question each way (the model's load, the pinned prefixes). It
prints, per hop and overall: seconds per question (p50 / mean), the answer stage's prompt
tokens per question, the ratio of the baseline's seconds to the grouped ones, entity Hit@1
of each way, and how many questions got the same top answer entity and the same answer
entities. The settings come from the environment and kgqa.toml as for `kgqa ask` (a loaded
KB with its vector index).

    .venv/bin/python benchmarks/bench_kgrag.py --data ../shared/metaqa --limit 5 --seed 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from kgqa.eval.datasets import load_split, sample
from kgqa.eval.metrics import hit1_entity
from kgqa.factory import Factory
from kgqa.settings import load_settings

WAYS = ("triples", "grouped")


def stage(answer: Any, name: str, field: str) -> float:
    return sum(getattr(c, field) for c in answer.costs if c.stage == name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    base = Factory(load_settings({"retrieval.facts": "triples"}))
    grouped = base.sharing(load_settings({"retrieval.facts": "grouped"}))
    pipes = {"triples": base.pipeline("kgrag"), "grouped": grouped.pipeline("kgrag")}
    rows: list[dict[str, Any]] = []
    # Untimed: loading the model and evaluating the pinned prefixes.
    warm = sample(load_split(args.data, 1, "dev"), 1, args.seed + 1000)[0]
    for way in WAYS:
        pipes[way].answer(warm.text, warm.entities)
    print(f"# load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for hops in (int(h) for h in args.hops.split(",")):
        questions = sample(load_split(args.data, hops, "dev"), args.limit, args.seed)
        for n, q in enumerate(questions):
            row: dict[str, Any] = {"hops": hops, "question": q.text}
            order = WAYS if n % 2 == 0 else WAYS[::-1]
            for way in order:
                start = time.perf_counter()
                answer = pipes[way].answer(q.text, q.entities)
                row[way] = {
                    "seconds": time.perf_counter() - start,
                    "answer_tokens": stage(answer, "answer", "prompt_tokens"),
                    "hit": hit1_entity(answer, q.answers),
                    "entities": [e.name for e in answer.answer_entities],
                }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    print(
        "| hops | n | triples s p50 / mean | grouped s p50 / mean | ratio (mean) "
        "| answer prompt tokens | Hit@1 triples / grouped | same top / same set |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for hops in [*sorted({r["hops"] for r in rows}), "all"]:
        part = [r for r in rows if hops == "all" or r["hops"] == hops]
        sec = {w: [r[w]["seconds"] for r in part] for w in WAYS}
        tok = {w: statistics.mean(r[w]["answer_tokens"] for r in part) for w in WAYS}
        hit = {w: sum(r[w]["hit"] for r in part) for w in WAYS}
        top = sum(r["triples"]["entities"][:1] == r["grouped"]["entities"][:1] for r in part)
        same = sum(r["triples"]["entities"] == r["grouped"]["entities"] for r in part)
        ratio = statistics.mean(sec["triples"]) / statistics.mean(sec["grouped"])
        print(
            f"| {hops} | {len(part)} "
            + "".join(
                f"| {statistics.median(sec[w]):.1f} / {statistics.mean(sec[w]):.1f} " for w in WAYS
            )
            + f"| x{ratio:.2f} | {tok['triples']:.0f} -> {tok['grouped']:.0f} "
            f"| {hit['triples']} / {hit['grouped']} | {top} / {same} |"
        )
    base.close()


if __name__ == "__main__":
    main()
