"""Which signal picks the relation a 1-hop question asks about?

For seeded 1-hop MetaQA dev questions, the options are the (relation, direction) pairs present
at the topic entity (kgqa.graph.expand.frontier_edges); the gold one comes from the question's
qtype. Compared: the best-matching triple (vectors embedded at load time), the mean over the
option's triples, the KB profile's step phrasings (the derived profile, or a profile file's via
KGQA_PROFILE_FILE=metaqa), and the
same phrasings read in either direction when the entity has only one (what graph mode uses).
Needs the full KB loaded and indexed.

    .venv/bin/python benchmarks/bench_relation_choice.py --sample 200 --seed 1
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from kgqa.eval.datasets import load_split, sample
from kgqa.eval.metaqa import metaqa_path
from kgqa.factory import Factory
from kgqa.graph.paths import PathStep
from kgqa.graphmode.scoring import normalize_question
from kgqa.settings import load_settings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/metaqa"))
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    settings = load_settings()
    right: dict[str, int] = defaultdict(int)
    with Factory(settings) as f:
        graph, emb, index = f.graph(), f.embedder(), f.vector_index()
        profile = f.profile()
        questions = sample(load_split(args.data, 1, "dev"), args.sample, args.seed)
        cache: dict[tuple[str, bool], np.ndarray] = {}
        for q in questions:
            gold = metaqa_path(q.qtype)[0]
            groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
            for e in graph.frontier_edges(list(q.entities)):
                groups[(e.triple.relation, e.outgoing)].append(e.triple.id)
            keys = list(groups)
            plain = emb.embed([q.text.replace("[", "").replace("]", "")])[0]
            masked = emb.embed([normalize_question(q.text)])[0]
            for key in keys + [(r, not o) for r, o in keys]:
                if key not in cache:
                    cache[key] = emb.embed(list(profile.step_phrases(PathStep(*key))))
            # graph mode's first hop: an option whose reverse the entity lacks takes the better
            # of both directions' phrasings (the entity fixes the direction, not the wording)
            phrased = {k: float((cache[k] @ masked).max()) for k in cache}
            either = [
                max(phrased[k], phrased[(k[0], not k[1])])
                if (k[0], not k[1]) not in groups
                else phrased[k]
                for k in keys
            ]
            scores = {
                "best triple": [float((index.vectors(groups[k]) @ plain).max()) for k in keys],
                "mean of triples": [float((index.vectors(groups[k]) @ plain).mean()) for k in keys],
                "relation phrasings": [phrased[k] for k in keys],
                "phrasings, either way": either,
            }
            for name, values in scores.items():
                right[name] += keys[int(np.argmax(values))] == (gold.relation, gold.outgoing)
    print(f"{len(questions)} one-hop dev questions, seed {args.seed}")
    for name, n in right.items():
        print(f"  {name:<20} {n / len(questions):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
