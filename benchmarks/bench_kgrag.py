"""The paper's pipeline (``--mode kgrag``) per question, two ways in one process.

``--compare pin`` (the default): the way before session 25, the answer prompt's instructions
evaluated again for every sub-question (the baseline, its own model instance, since pinned
prefixes belong to a model), against kgqa's default, where they are pinned like the other
stages' fixed prefixes. ``--compare grouped``: facts written one triple per line (the paper's
way, the baseline) against grouped (``retrieval.facts = grouped``), one model for both.
``--compare build --baseline-site DIR``: the pipeline as issue 16 found it (the answer prompt
not pinned, the llama-cpp-python installed in DIR, e.g. the portable AVX2 build, with its
``llm.cpu_repack`` auto choice), answered in a child process, against kgqa's default in this
process (the llama.cpp that ``scripts/setup.sh`` built for this CPU). Each way's seconds are
measured around its pipeline call, in its own process.

Each seeded dev question of each hop is answered both ways, alternating which goes first,
after one untimed question each way (the model's load, the pinned prefixes). It prints, per
hop and overall: seconds per question (p50 / mean), the answer stage's prompt tokens per
question, the ratio of the baseline's seconds to the other's, entity Hit@1 of each way, and
how many questions got the same top answer entity and the same answer entities; then, per
way, where the time went: each stage's calls, seconds, prompt and generated tokens. The settings
come from the environment and kgqa.toml as for `kgqa ask` (a loaded KB with its vector index).

    .venv/bin/python benchmarks/bench_kgrag.py --data ../shared/metaqa --limit 5 --seed 2
    .venv/bin/pip install --no-deps --target /tmp/portable <a portable llama-cpp-python wheel>
    .venv/bin/python benchmarks/bench_kgrag.py --data ../shared/metaqa --limit 2 --seed 2 \
        --compare build --baseline-site /tmp/portable
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

from kgqa.eval.datasets import load_split, sample
from kgqa.eval.metrics import hit1_entity
from kgqa.factory import Factory
from kgqa.prompts import PromptTemplate
from kgqa.settings import load_settings


def without_answer_pin(factory: Factory) -> Factory:
    """``factory`` whose model ignores the pin of the answer prompt (the way before)."""
    llm = factory.llm()
    pin = getattr(llm, "pin_prefix", None)
    answer = PromptTemplate("answer").render(question="", triples="")[:-1]
    if pin is not None:
        llm.pin_prefix = lambda prompt: None if list(prompt)[:-1] == answer else pin(prompt)  # type: ignore[method-assign]
    return factory


def stage(answer: Any, name: str, field: str) -> float:
    return sum(getattr(c, field) for c in answer.costs if c.stage == name)


def answered(pipe: Any, text: str, entities: list[str], answers: list[str]) -> dict[str, Any]:
    """One question answered by ``pipe``: its seconds, answer-stage tokens, hit and stages."""
    start = time.perf_counter()
    answer = pipe.answer(text, entities)
    return {
        "seconds": time.perf_counter() - start,
        "answer_tokens": stage(answer, "answer", "prompt_tokens"),
        "hit": hit1_entity(answer, answers),
        "entities": [e.name for e in answer.answer_entities],
        "stages": [
            [c.stage, c.seconds, c.prompt_tokens, c.completion_tokens] for c in answer.costs
        ],
    }


def build_of(factory: Factory) -> dict[str, Any]:
    """Which llama.cpp build ``factory``'s model runs on, and whether its weights repack."""
    from kgqa.llm.llama_cpp import cpu_features

    llm = factory.llm()
    return {"cpu": cpu_features(), "cpu_repack": getattr(llm, "cpu_repack", None)}


def worker(answer_pin: bool) -> None:
    """Answer JSON lines ``{"text", "entities", "answers"}`` from stdin, one JSON line each on
    stdout; the first line out names the build."""
    factory = Factory(load_settings({}))
    if not answer_pin:
        without_answer_pin(factory)
    pipe = factory.pipeline("kgrag")
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else printed goes to stderr
    print(json.dumps(build_of(factory)), file=out, flush=True)
    for line in sys.stdin:
        q = json.loads(line)
        print(
            json.dumps(answered(pipe, q["text"], q["entities"], q["answers"])), file=out, flush=True
        )
    factory.close()


class ChildWay:
    """A way answered in a child process with ``python_path`` as its ``PYTHONPATH``."""

    def __init__(self, python_path: str, *, answer_pin: bool):
        env = dict(os.environ, PYTHONPATH=python_path)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--data", "-"]
        if not answer_pin:
            cmd.append("--no-answer-pin")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.build = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the baseline process ended (exit {self.proc.wait()})")
        return dict(json.loads(line))

    def answer(self, text: str, entities: list[str], answers: list[str]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        q = {"text": text, "entities": entities, "answers": answers}
        self.proc.stdin.write(json.dumps(q) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--compare", choices=("pin", "grouped", "build"), default="pin")
    ap.add_argument("--baseline-site", type=Path, help="--compare build: the baseline's llama.cpp")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-answer-pin", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(answer_pin=not args.no_answer_pin)
        return
    closing: list[Any] = []

    def local(pipe: Any) -> Any:
        return lambda text, entities, answers: answered(pipe, text, entities, answers)

    if args.compare == "grouped":
        ways = ("triples", "grouped")
        base = Factory(load_settings({"retrieval.facts": "triples"}))
        other = base.sharing(load_settings({"retrieval.facts": "grouped"}))
        pipes = {
            "triples": local(base.pipeline("kgrag")),
            "grouped": local(other.pipeline("kgrag")),
        }
        closing += [other, base]
    elif args.compare == "build":
        python_path = site_first(args.baseline_site)
        if python_path is None:
            ap.error("--compare build needs --baseline-site DIR holding a llama_cpp package")
        ways = ("issue", "now")
        child = ChildWay(python_path, answer_pin=False)
        other = Factory(load_settings({}))
        pipes = {"issue": child.answer, "now": local(other.pipeline("kgrag"))}
        print(f"# issue: {json.dumps(child.build)}\n# now: {json.dumps(build_of(other))}")
        closing += [other, child]
    else:
        ways = ("before", "pinned")
        base = without_answer_pin(Factory(load_settings({})))
        other = Factory(load_settings({}))
        pipes = {"before": local(base.pipeline("kgrag")), "pinned": local(other.pipeline("kgrag"))}
        closing += [other, base]
    first, second = ways
    rows: list[dict[str, Any]] = []
    # Untimed: loading the model and evaluating the pinned prefixes.
    warm = sample(load_split(args.data, 1, "dev"), 1, args.seed + 1000)[0]
    for way in ways:
        pipes[way](warm.text, list(warm.entities), list(warm.answers))
    print(f"# load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for hops in (int(h) for h in args.hops.split(",")):
        questions = sample(load_split(args.data, hops, "dev"), args.limit, args.seed)
        for n, q in enumerate(questions):
            row: dict[str, Any] = {"hops": hops, "question": q.text}
            order = ways if n % 2 == 0 else ways[::-1]
            for way in order:
                row[way] = pipes[way](q.text, list(q.entities), list(q.answers))
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    print(
        f"| hops | n | {first} s p50 / mean | {second} s p50 / mean | ratio (mean) "
        f"| answer prompt tokens | Hit@1 {first} / {second} | same top / same set |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for hops in [*sorted({r["hops"] for r in rows}), "all"]:
        part = [r for r in rows if hops == "all" or r["hops"] == hops]
        sec = {w: [r[w]["seconds"] for r in part] for w in ways}
        tok = {w: statistics.mean(r[w]["answer_tokens"] for r in part) for w in ways}
        hit = {w: sum(r[w]["hit"] for r in part) for w in ways}
        top = sum(r[first]["entities"][:1] == r[second]["entities"][:1] for r in part)
        same = sum(r[first]["entities"] == r[second]["entities"] for r in part)
        ratio = statistics.mean(sec[first]) / statistics.mean(sec[second])
        print(
            f"| {hops} | {len(part)} "
            + "".join(
                f"| {statistics.median(sec[w]):.1f} / {statistics.mean(sec[w]):.1f} " for w in ways
            )
            + f"| x{ratio:.2f} | {tok[first]:.0f} -> {tok[second]:.0f} "
            f"| {hit[first]} / {hit[second]} | {top} / {same} |"
        )
    print("\n| way | stage | calls | seconds | share | prompt tokens | generated tokens |")
    print("|---|---|---|---|---|---|---|")
    for w in ways:
        split: dict[str, list[float]] = {}
        for r in rows:
            for name, seconds, prompt, generated in r[w]["stages"]:
                acc = split.setdefault(name, [0, 0.0, 0, 0])
                acc[0] += 1
                acc[1] += seconds
                acc[2] += prompt
                acc[3] += generated
        total = sum(r[w]["seconds"] for r in rows)
        for name, (calls, seconds, prompt, generated) in split.items():
            print(
                f"| {w} | {name} | {calls:.0f} | {seconds:.1f} | {seconds / total:.0%} "
                f"| {prompt:.0f} | {generated:.0f} |"
            )
        print(f"| {w} | whole questions | {len(rows)} | {total:.1f} | 100% | | |")
    for thing in closing:
        thing.close()


if __name__ == "__main__":
    main()
