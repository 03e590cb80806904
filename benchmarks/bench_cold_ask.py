"""A cold `kgqa ask --mode graph`: the whole process, the way a user runs it, old way and new.

Each seeded question of each set is asked twice as a new process, alternating:

- **before** (``--baseline issue16``, the default): ``embed.backend = torch``
  (sentence-transformers imports torch and loads the model) and ``llm.prompt_states =
  false`` (the decomposition's ~1,000-token pinned prefix is evaluated by every process), as
  every `kgqa ask` ran before issue 16; ``--baseline repack``: ``llm.cpu_repack = on``, the
  weights repacked at load as every `kgqa ask` did before session 20; ``--baseline grammar``:
  ``llm.grammar_check_first = false``, every token of the vocabulary held to the step
  grammar at each step as before session 24; ``--baseline build --baseline-site DIR``: the
  llama-cpp-python installed in DIR first on the path (e.g. the portable AVX2 build every
  `kgqa ask` ran on before session 27), the settings as now;
- **now**: the settings' defaults (ONNX Runtime for the question's texts, the pinned prefix
  loaded from ``<cache_dir>/prompt-states``, the weights used as stored for one question).

It prints wall seconds per process (p50 / p95 / max), the ratio, whether both gave the same
answer entities, and the median of each start-up part that ``--json`` reports
(``timings.startup``). One untimed `now` run first writes the pinned state if it is missing.
The settings come from the environment and kgqa.toml as for `kgqa ask` (a loaded KB).

    .venv/bin/python benchmarks/bench_cold_ask.py --data ../shared/metaqa --limit 5 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _ab import site_first

from kgqa.eval.datasets import read_questions, sample

# The console script beside this interpreter: what a user runs.
KGQA = [str(Path(sys.executable).parent / "kgqa")]
BASELINES = {
    "issue16": {"KGQA_EMBED_BACKEND": "torch", "KGQA_LLM_PROMPT_STATES": "false"},
    "repack": {"KGQA_LLM_CPU_REPACK": "on"},
    "grammar": {"KGQA_LLM_GRAMMAR_CHECK_FIRST": "false"},
    "build": {},  # PYTHONPATH from --baseline-site
}


def ask(question: str, extra_env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, **extra_env}
    start = time.perf_counter()
    done = subprocess.run(
        [*KGQA, "ask", question, "--mode", "graph", "--json", "--no-cache"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"kgqa ask failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return wall, json.loads(done.stdout)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a dataset in MetaQA's layout")
    ap.add_argument("--sets", default="1-hop,2-hop,3-hop")
    ap.add_argument("--limit", type=int, default=5, help="questions per set")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline", choices=sorted(BASELINES), default="issue16")
    ap.add_argument(
        "--baseline-site", type=Path, help="--baseline build: a folder holding llama_cpp"
    )
    args = ap.parse_args()
    before = dict(BASELINES[args.baseline])
    if args.baseline == "build":
        python_path = site_first(args.baseline_site)
        if python_path is None:
            ap.error("--baseline build needs --baseline-site DIR holding a llama_cpp package")
        before["PYTHONPATH"] = python_path

    questions = []
    for set_name in args.sets.split(","):
        path = args.data / set_name / "qa_dev.txt"
        questions += [q.text for q in sample(read_questions(path), args.limit, args.seed)]
    print(
        f"{len(questions)} questions, baseline {args.baseline}, "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    # Each writes its pinned state if this cache has none: not counted.
    ask(questions[0], {})
    ask(questions[0], before)
    walls: dict[str, list[float]] = {"before": [], "now": []}
    parts: dict[str, dict[str, list[float]]] = {"before": {}, "now": {}}
    same = 0
    for i, q in enumerate(questions):
        # Alternate which goes first, so that neither always finds the page cache warmer.
        order = (
            [("before", before), ("now", {})] if i % 2 == 0 else [("now", {}), ("before", before)]
        )
        names = {}
        for label, env in order:
            wall, doc = ask(q, env)
            walls[label].append(wall)
            names[label] = [e["name"] for e in doc["answer_entities"]]
            startup = doc["timings"]["startup"]
            for key, value in {**startup, "stages": doc["timings"]["total_seconds"]}.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    parts[label].setdefault(key, []).append(float(value))
        same += names["before"] == names["now"]
        print(
            f"  {i + 1:2d}/{len(questions)}  before {walls['before'][-1]:6.2f} s  "
            f"now {walls['now'][-1]:5.2f} s  same answer {names['before'] == names['now']}",
            flush=True,
        )
    print()
    for label in ("before", "now"):
        w = walls[label]
        print(
            f"{label:>6}: wall p50 {statistics.median(w):6.2f} s  p95 {pct(w, 0.95):6.2f} s  "
            f"max {max(w):6.2f} s"
        )
    ratio = statistics.median(walls["before"]) / statistics.median(walls["now"])
    print(
        f" ratio: before / now at p50 = x{ratio:.1f}; same answer entities {same}/{len(questions)}"
    )
    print("\nstart-up parts, median seconds (timings.startup; stages = the pipeline's own):")
    keys = sorted(set(parts["before"]) | set(parts["now"]))
    for key in keys:
        row = [
            f"{statistics.median(parts[label][key]):7.3f}" if parts[label].get(key) else "      -"
            for label in ("before", "now")
        ]
        print(f"  {key:>16}  before {row[0]}  now {row[1]}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
