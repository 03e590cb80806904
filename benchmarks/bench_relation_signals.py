"""Which signal chooses the step a one-hop question asks for, on any KB, with only the profile
kgqa derived from it?

For seeded questions of a dataset in MetaQA's layout (`<dir>/1-hop/qa_dev.txt`, `kb.txt`), the
options are the steps (relation, direction, read canonically) that the topic entity has; the
right ones are those whose answers match the gold answers best (F1; no qtype file is needed).
Each signal picks one option:

- ``phrases``: embedding similarity between the question (its entity as X) and each step's
  phrasings from the profile (graph mode's default one-step choice);
- ``phrases-raw``: the same without the first-hop direction rule;
- ``triples``: the best similarity between the question and the option's own triples at the
  entity, verbalized;
- ``llm``: the first step the LLM writes under the step grammar (graph mode's decomposition
  prompt, examples and hints from the profile), whatever it writes after it;
- ``llm-one``: the LLM's step when it writes exactly one, else ``phrases``;
- ``llm+phrases``: the LLM's first step unless the best phrasing score beats it by ``--margin``.

Prints the share of questions each signal gets right, the share of questions the LLM
decomposed into more than one step, and the seconds per question; writes every question's
scores to ``--out`` (JSON lines) so that other combinations can be read off without the LLM.
No Neo4j: the KB is read into memory (kgqa.graph.memory_store).

    .venv/bin/python benchmarks/bench_relation_signals.py --data ../shared/wc2014 \\
        --profile ~/.local/share/kgqa/index/neo4j --sample 100 --seed 0 --out /tmp/wc.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from _dev_kb import load_dev_kb

from kgqa.factory import Factory
from kgqa.graphmode.pipeline import GraphPipeline
from kgqa.graphmode.scoring import normalize_question, phrase_scorer, phrase_vectors
from kgqa.graphmode.vocabulary import StepVocabulary
from kgqa.graphmode.walk import GraphWalker
from kgqa.pipeline.pipeline import PipelineParams
from kgqa.settings import load_settings
from kgqa.types import StageCost


def f1(reached: set[str], gold: set[str]) -> float:
    hits = len(reached & gold)
    if not hits:
        return 0.0
    p, r = hits / len(reached), hits / len(gold)
    return 2 * p * r / (p + r)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--profile", type=Path, required=True, help="folder with profile.json")
    ap.add_argument("--profile-file", help="a profile file applied over it (e.g. metaqa)")
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--margin", type=float, default=0.3)  # graph.one_step_margin
    ap.add_argument("--no-llm", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    profile, store, questions = load_dev_kb(
        args.data, args.profile, args.profile_file, "1-hop", args.sample, args.seed
    )
    settings = load_settings()
    with Factory(settings) as f:
        embed = f.question_embedder().embed
        vocab = StepVocabulary(profile)
        vectors = phrase_vectors(embed, profile, vocab.steps)
        walker = GraphWalker(
            store.frontier_edges,
            phrase_scorer(embed, profile, vectors),
            known=vocab.steps,
            canonical=profile.canonical,
        )
        pipe = None
        if not args.no_llm:
            pipe = GraphPipeline(
                f.llm(), walker, PipelineParams.from_settings(settings), profile=profile
            )
        right: dict[str, int] = defaultdict(int)
        multi, seconds = 0, []
        out = args.out.open("w", encoding="utf-8") if args.out else None
        for q in questions:
            entity = q.entities[0]
            groups = walker._groups([entity])
            gold = {g.lower() for g in q.answers}
            score = {
                s: f1({e.to_name.lower() for e in edges} - {entity.lower()}, gold)
                for s, edges in groups.items()
            }
            best = max(score.values(), default=0.0)
            good = {s for s, v in score.items() if v == best and v > 0}
            phrased = walker._score(q.text, groups, None)
            phrase_pick = phrased.options[0].step if phrased.options else None
            scores = {o.step: o.score for o in phrased.options}
            # the same phrasings without the first-hop direction rule (an option whose reverse
            # the entity lacks takes the better of both directions' scores)
            raw = walker.scorer(q.text, groups)
            raw_pick = max(raw, key=raw.get) if raw else None
            qv = embed([normalize_question(q.text).replace("X", entity)])[0]
            triple_scores = {}
            for s, edges in groups.items():
                texts = [e.triple.verbalize() for e in edges[:50]]
                triple_scores[s] = float((embed(texts) @ qv).max())
            triple_pick = max(triple_scores, key=triple_scores.get) if triple_scores else None
            llm_first, n_steps = None, 0
            if pipe is not None:
                first = pipe.first_steps([entity])
                grammar = vocab.grammar(first, pipe.params.hops) if first else None
                from kgqa.graphmode.pipeline import with_hint

                asked = with_hint(q.text, vocab, first) if pipe.hints else q.text
                costs: list[StageCost] = []
                start = time.perf_counter()
                steps = list(pipe.decomposer.run(asked, costs, grammar=grammar).sub_questions)
                seconds.append(time.perf_counter() - start)
                keys = vocab.keys(steps, first) if grammar else []
                llm_first = keys[0] if keys else None
                n_steps = len(steps)
                multi += n_steps > 1
            picks = {"phrases": phrase_pick, "phrases-raw": raw_pick, "triples": triple_pick}
            if pipe is not None:
                picks["llm"] = llm_first
                picks["llm-one"] = llm_first if n_steps == 1 and llm_first else phrase_pick
                combo = llm_first
                if llm_first is None or (
                    phrase_pick is not None
                    and scores.get(phrase_pick, 0) > scores.get(llm_first, -1) + args.margin
                ):
                    combo = phrase_pick
                picks["llm+phrases"] = combo
            for name, pick in picks.items():
                right[name] += pick in good
            if out is not None:
                row = {
                    "id": q.id,
                    "question": q.text,
                    "good": [list(s) for s in good],
                    "phrases": {f"{s[0]}|{s[1]}": v for s, v in scores.items()},
                    "triples": {f"{s[0]}|{s[1]}": v for s, v in triple_scores.items()},
                    "llm_first": list(llm_first) if llm_first else None,
                    "llm_steps": n_steps,
                    "picks": {k: list(v) if v else None for k, v in picks.items()},
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
        n = len(questions)
        print(f"{args.data.name} 1-hop, {n} questions, seed {args.seed}, profile {profile.source}")
        for name, k in right.items():
            print(f"  {name:<12} {k / n:.3f}")
        if seconds:
            print(
                f"  decomposed into >1 step: {multi / n:.3f}; decomposition median {statistics.median(seconds):.2f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
