"""How often graph mode's step decomposition writes the path a question needs, and what a
too-long (or too-short) decomposition would have answered, on any KB with only its profile.

For seeded questions of a dataset in MetaQA's layout (`<dir>/<set>/qa_dev.txt`, `kb.txt`), the
LLM writes the steps under the step grammar (graph mode's prompt, examples and hints from the
profile). Each prefix of the written path is walked over the KB (in memory), and its answers
are scored against the gold answers (entity Hit@1 as graph mode ranks them, and F1). Printed:
Hit@1 of the full path and of the best prefix (the ceiling of any rule that only cuts steps),
how often the LLM wrote more / fewer / as many steps as the best prefix, and the Hit@1 of
cutting rules read off the recorded scores: ``cut:phrase`` keeps the prefix whose composed
phrase ("the countries of the clubs of [X]") is most similar to the question. Every question's
record goes to ``--out`` (JSON lines).

    .venv/bin/python benchmarks/bench_step_paths.py --data ../shared/wc2014 --set 2-hop \\
        --profile ~/.local/share/kgqa/index/neo4j --sample 50 --seed 0 --out /tmp/wc2.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _dev_kb import load_dev_kb

from kgqa.factory import Factory
from kgqa.graphmode.asked import AskedKinds
from kgqa.graphmode.pipeline import GraphPipeline
from kgqa.graphmode.scoring import phrase_scorer, phrase_vectors
from kgqa.graphmode.vocabulary import StepVocabulary
from kgqa.graphmode.walk import GraphWalker
from kgqa.pipeline.pipeline import PipelineParams
from kgqa.profile.steps import question_phrase
from kgqa.settings import load_settings
from kgqa.types import StageCost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--set", default="2-hop")
    ap.add_argument("--profile", type=Path, required=True, help="folder with profile.json")
    ap.add_argument("--profile-file")
    ap.add_argument("--sample", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--answer-type",
        action="store_true",
        help="the LLM first declares the answer's kind and the grammar holds the path to it",
    )
    ap.add_argument(
        "--asked",
        action="store_true",
        help="read what the question asks for from its wording and hold the path's end to it",
    )
    ap.add_argument("--asked-floor", type=float, default=0.40)
    ap.add_argument("--asked-margin", type=float, default=0.06)
    ap.add_argument(
        "--later-margin",
        type=float,
        help="check each later step against the question with this margin (off if not given)",
    )
    ap.add_argument(
        "--cut-loops",
        action="store_true",
        help="cut an out-and-back loop after the asked kind is reached (GraphPipeline.cut_loop)",
    )
    args = ap.parse_args()
    profile, store, questions = load_dev_kb(
        args.data, args.profile, args.profile_file, args.set, args.sample, args.seed
    )
    settings = load_settings()
    out = args.out.open("w", encoding="utf-8") if args.out else None
    with Factory(settings) as f:
        embed = f.question_embedder().embed
        vocab = StepVocabulary(profile)
        walker = GraphWalker(
            store.frontier_edges,
            phrase_scorer(embed, profile, phrase_vectors(embed, profile, vocab.steps)),
            known=vocab.steps,
            canonical=profile.canonical,
        )
        pipe = GraphPipeline(
            f.llm(),
            walker,
            PipelineParams.from_settings(settings),
            profile=profile,
            answer_type=args.answer_type,
            embed=embed,
            cut_steps=False,
            later_margin=args.later_margin,
            cut_loops=args.cut_loops,
            asked=AskedKinds(
                embed,
                vocab.noun_examples(),
                floor=args.asked_floor,
                margin=args.asked_margin,
                asks=vocab.noun_asks(),
            )
            if args.asked
            else None,
        )
        full_hits, best_hits, cut_hits, longer, shorter, seconds = 0, 0, 0, 0, 0, []
        for q in questions:
            entity = q.entities[0]
            gold = {g.lower() for g in q.answers}
            costs: list[StageCost] = []
            start = time.perf_counter()
            plan = pipe.plan(q.text, [entity], costs)
            seconds.append(time.perf_counter() - start)
            steps = list(plan.sub_questions)
            path = [k for k in plan.keys or [] if k is not None]
            prefixes = []
            qv = embed([q.text])[0]
            for n in range(1, len(path) + 1):
                hops, answers = walker.walk([entity], steps[:n], path[:n])
                top = answers[0].name.lower() if answers else None
                phrase = f"[{entity}]"
                for s in path[:n]:
                    phrase = question_phrase(s, profile.words(s.relation), phrase)
                sim = float(embed([phrase])[0] @ qv)
                prefixes.append({"n": n, "hit": top in gold, "phrase": phrase, "sim": sim})
            full = prefixes[-1]["hit"] if prefixes else False
            best = next((p["n"] for p in prefixes if p["hit"]), None)
            cut = max(prefixes, key=lambda p: p["sim"])["hit"] if prefixes else False
            full_hits += full
            best_hits += best is not None
            cut_hits += cut
            if best is not None and not full:
                longer += best < len(path)
            if best is None:
                shorter += 1
            if out is not None:
                row = {
                    "id": q.id,
                    "question": q.text,
                    "reasoning": plan.reasoning,
                    "steps": steps,
                    "path": [list(s) for s in path],
                    "prefixes": prefixes,
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
        n = len(questions)
        print(
            f"{args.data.name} {args.set}, {n} questions, seed {args.seed}, profile {profile.source}"
            + (", answer kind declared" if pipe.answer_type else "")
            + (
                f", asked kind read (floor {args.asked_floor}, margin {args.asked_margin})"
                if pipe.asked is not None
                else ""
            )
            + (
                f", later steps checked (margin {args.later_margin})"
                if pipe.later_margin is not None
                else ""
            )
            + (", out-and-back loops cut" if pipe.cut_loops else "")
        )
        print(f"  full path hit@1        {full_hits / n:.3f}")
        print(f"  best prefix (ceiling)  {best_hits / n:.3f}")
        print(f"  cut:phrase             {cut_hits / n:.3f}")
        print(f"  wrote too many steps   {longer / n:.3f}; no prefix right {shorter / n:.3f}")
        print(f"  decomposition median {statistics.median(seconds):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
