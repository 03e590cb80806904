"""Graph mode's decomposition stopped where the step grammar's END begins (``END_LINE``, the
default) against stopped after the whole END (before session 22), in one process.

Each seeded dev question of each hop is answered both ways by one pipeline (one model; the
stop string is switched between calls), alternating which way goes first, after one untimed
question each way (the model's load, the pinned prefix). It prints, per hop and overall, the
decomposition's seconds (p50 / mean) and generated tokens per question, the ratio of the old
way's mean seconds to the new one's, and how many questions got the same reasoning (steps and walk) and the same
answer entities (greedy decoding: the text before END cannot differ). The settings come from
the environment and kgqa.toml as for `kgqa ask` (a loaded KB).

    .venv/bin/python benchmarks/bench_step_end.py --data ../shared/metaqa --limit 10 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

import kgqa.graphmode.pipeline as graph_pipeline
from kgqa.eval.datasets import load_split, sample
from kgqa.factory import Factory
from kgqa.graphmode.vocabulary import END, END_LINE
from kgqa.settings import load_settings

WAYS = {"whole END": END, "END_LINE": END_LINE}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    factory = Factory(load_settings())
    pipe = factory.pipeline("graph")

    def ask(way: str, text: str, entities: Any) -> Any:
        graph_pipeline.END_LINE = WAYS[way]  # read by GraphPipeline.plan at each call
        return pipe.answer(text, entities)

    warm = sample(load_split(args.data, 1, "dev"), 1, args.seed + 1000)[0]
    for way in WAYS:
        ask(way, warm.text, warm.entities)
    print(f"# load average at start {os.getloadavg()[0]:.2f}", flush=True)
    rows: list[dict[str, Any]] = []
    for hops in (int(h) for h in args.hops.split(",")):
        for n, q in enumerate(sample(load_split(args.data, hops, "dev"), args.limit, args.seed)):
            row: dict[str, Any] = {"hops": hops, "question": q.text}
            for way in list(WAYS) if n % 2 == 0 else list(WAYS)[::-1]:
                answer = ask(way, q.text, q.entities)
                costs = [c for c in answer.costs if c.stage == "decompose"]
                row[way] = {
                    "seconds": sum(c.seconds for c in costs),
                    "generated": sum(c.completion_tokens for c in costs),
                    "steps": answer.reasoning,
                    "entities": [e.name for e in answer.answer_entities],
                }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    old, new = WAYS
    print(
        f"| hops | n | {old}: s p50 / mean | tokens | {new}: s p50 / mean | tokens "
        "| ratio (mean) | same steps / same answer entities |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for hops in [*sorted({r["hops"] for r in rows}), "all"]:
        part = [r for r in rows if hops == "all" or r["hops"] == hops]
        cells = ""
        for way in WAYS:
            sec = [r[way]["seconds"] for r in part]
            tok = statistics.mean(r[way]["generated"] for r in part)
            cells += f"| {statistics.median(sec):.2f} / {statistics.mean(sec):.2f} | {tok:.1f} "
        ratio = statistics.mean(r[old]["seconds"] for r in part) / statistics.mean(
            r[new]["seconds"] for r in part
        )
        steps = sum(r[old]["steps"] == r[new]["steps"] for r in part)
        same = sum(r[old]["entities"] == r[new]["entities"] for r in part)
        print(f"| {hops} | {len(part)} {cells}| x{ratio:.2f} | {steps} / {same} |")
    graph_pipeline.END_LINE = END_LINE
    factory.close()


if __name__ == "__main__":
    main()
