"""Perfect-path Hit@1: what graph mode would score if every question followed its gold path.

Walks each sampled question's gold relation path (from its MetaQA qtype) over kb.txt, leaves
the topic entity out and ranks the reached entities the way graph mode does (more supporting
triples first, then by name); the question counts when the top entity is a gold answer. Below
1.00 only where the KB merges movies that share a title and the gold answers cover one of them.
No Neo4j, no models: seconds.

    .venv/bin/python benchmarks/path_ceiling.py --data ../shared/metaqa --sample 100 --seeds 2,3,4,5
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from kgqa.eval.datasets import load_split, sample
from kgqa.eval.metaqa import metaqa_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/metaqa"))
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--seeds", default="2,3,4,5")
    args = ap.parse_args()
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    into: dict[tuple[str, str], list[str]] = defaultdict(list)
    with (args.data / "kb.txt").open(encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            if len(parts) == 3:
                out[(parts[0], parts[1])].append(parts[2])
                into[(parts[2], parts[1])].append(parts[0])
    seeds = [int(s) for s in args.seeds.split(",")]
    print("hops | " + " | ".join(f"seed {s}" for s in seeds))
    for hops in (1, 2, 3):
        row = []
        for seed in seeds:
            questions = sample(load_split(args.data, hops, "dev"), args.sample, seed)
            hits = 0
            for q in questions:
                topic = set(q.entities)
                frontier: dict[str, set[tuple[str, str, str]]] = {e: set() for e in topic}
                for step in metaqa_path(q.qtype):
                    reached: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
                    edges = out if step.outgoing else into
                    for name, support in frontier.items():
                        for other in edges[(name, step.relation)]:
                            if other not in topic:
                                reached[other] |= support | {(name, step.relation, other)}
                    frontier = reached
                ranked = sorted(frontier.items(), key=lambda kv: (-len(kv[1]), kv[0]))
                gold = {a.lower() for a in q.answers}
                hits += bool(ranked) and ranked[0][0].lower() in gold
            row.append(f"{hits / len(questions):.2f}")
        print(f"{hops} | " + " | ".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
