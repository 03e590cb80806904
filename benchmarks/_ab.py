"""Shared harness of the benchmarks that answer each seeded dev question two ways with one
graph-mode pipeline (bench_step_end.py, bench_grammar_check.py): one untimed question each
way first (the model's load, the pinned prefix), then every question both ways, alternating
which goes first; per hop and overall, the decomposition's seconds (p50 / mean) and
generated tokens, the ratio of the first way's mean seconds to the second's, and how many
questions got the same reasoning (steps and walk) and the same answer entities. Also
:func:`site_first`, the Python path of a baseline that runs another llama.cpp build."""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kgqa.eval.datasets import load_split, sample


def arguments(doc: str) -> argparse.Namespace:
    """The command line both benchmarks take (--data, --hops, --limit, --seed)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.hops = [int(h) for h in args.hops.split(",")]
    return args


def compare(
    pipe: Any,
    ways: Mapping[str, Callable[[], object]],
    data: Path,
    hops: list[int],
    limit: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Each question answered by ``pipe`` each way (``ways``: name -> what switches to it,
    the old way first), its JSON row printed as it ends, then the table."""

    def ask(way: str, text: str, entities: Any) -> Any:
        ways[way]()
        return pipe.answer(text, entities)

    warm = sample(load_split(data, 1, "dev"), 1, seed + 1000)[0]
    for way in ways:
        ask(way, warm.text, warm.entities)
    print(f"# load average at start {os.getloadavg()[0]:.2f}", flush=True)
    rows: list[dict[str, Any]] = []
    for h in hops:
        for n, q in enumerate(sample(load_split(data, h, "dev"), limit, seed)):
            row: dict[str, Any] = {"hops": h, "question": q.text}
            for way in list(ways) if n % 2 == 0 else list(ways)[::-1]:
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
    old, new = ways
    print(
        f"| hops | n | {old}: decompose s p50 / mean | tokens | {new}: s p50 / mean | tokens "
        "| ratio (mean) | same steps / same answer entities |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for part_hops in [*sorted({r["hops"] for r in rows}), "all"]:
        part = [r for r in rows if part_hops == "all" or r["hops"] == part_hops]
        cells = ""
        for way in (old, new):
            sec = [r[way]["seconds"] for r in part]
            tok = statistics.mean(r[way]["generated"] for r in part)
            cells += f"| {statistics.median(sec):.2f} / {statistics.mean(sec):.2f} | {tok:.1f} "
        ratio = statistics.mean(r[old]["seconds"] for r in part) / statistics.mean(
            r[new]["seconds"] for r in part
        )
        steps = sum(r[old]["steps"] == r[new]["steps"] for r in part)
        same = sum(r[old]["entities"] == r[new]["entities"] for r in part)
        print(f"| {part_hops} | {len(part)} {cells}| x{ratio:.2f} | {steps} / {same} |")
    return rows


def site_first(site: Path | None) -> str | None:
    """The ``PYTHONPATH`` that puts ``site`` (a folder holding a ``llama_cpp`` package, e.g.
    a portable llama-cpp-python installed with ``pip install --target``) before this one; None
    when ``site`` holds no such package."""
    if site is None or not (site / "llama_cpp").is_dir():
        return None
    path = [str(site.resolve()), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in path if p)
