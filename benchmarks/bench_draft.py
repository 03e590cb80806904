"""Would drafted tokens (speculative decoding by prompt lookup) make kgrag's generation faster?

Answers seeded MetaQA dev questions with the paper's pipeline and records every call's prompt
tokens and generated tokens; then measures, on the same loaded model, what one decode of a
batch of k tokens costs after a 600-token context (k = 1 … 17); then replays each recorded
generation both ways:

- **one token a decode** (what llama.cpp does now): the measured cost of a batch of 1 per
  generated token;
- **drafted**: at each step the tokens that followed the latest earlier occurrence of the
  context's last n-gram (prompt and output so far, n from ``max`` down to ``min``) are drafted,
  the sampled token and the draft are decoded as one batch, and the step keeps the draft's
  longest prefix that the recorded generation agrees with plus one token (what greedy
  verification would keep); each step costs the measured batch of ``1 + len(draft)``.

The ratio is one-token seconds over drafted seconds, from measured batch costs and the
recorded tokens (a drafted run would add its own overheads, so a ratio below 1 rules it out).

    .venv/bin/python benchmarks/bench_draft.py --data ../shared/metaqa --limit 2 --seed 2
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

import numpy as np
from _ab import arguments

from kgqa.eval.datasets import load_split, sample
from kgqa.factory import Factory
from kgqa.settings import load_settings

# (min n-gram, max n-gram, most drafted tokens)
DRAFTERS = [(1, 3, 4), (2, 3, 2), (2, 3, 4), (2, 3, 8), (2, 3, 16), (3, 3, 8), (3, 4, 16)]


def record(llama: Any, run: Any) -> list[tuple[list[int], list[int]]]:
    """The (prompt tokens, generated tokens) of every generation during ``run()``."""
    calls: list[tuple[list[int], list[int]]] = []
    original = llama.generate

    def generate(tokens: Any, *args: Any, **kwargs: Any) -> Any:
        out: list[int] = []
        calls.append(([int(t) for t in tokens], out))
        for token in original(tokens, *args, **kwargs):
            out.append(int(token))
            yield token

    llama.generate = generate
    try:
        run()
    finally:
        del llama.generate
    return calls


def batch_costs(llama: Any, context: list[int], most: int, repeats: int = 3) -> dict[int, float]:
    """Median seconds of one decode of k tokens (logits at each) after ``context``."""
    import llama_cpp

    llama.reset()
    llama.eval(context)
    base = llama.n_tokens
    costs = {}
    for k in range(1, most + 1):
        seconds = []
        for _ in range(repeats):
            llama.n_tokens = base
            llama._ctx.kv_cache_seq_rm(-1, base, -1)
            start = time.perf_counter()
            llama._batch.set_batch(batch=context[:k], n_past=base, logits_all=True)
            if llama_cpp.llama_decode(llama._ctx.ctx, llama._batch.batch) != 0:
                raise RuntimeError(f"llama_decode failed for a batch of {k}")
            llama_cpp.llama_synchronize(llama._ctx.ctx)  # decode may return before it is done
            seconds.append(time.perf_counter() - start)
        costs[k] = statistics.median(seconds)
    llama.reset()
    return costs


def draft(context: np.ndarray, low: int, high: int, most: int) -> list[int]:
    """The tokens after the latest earlier occurrence of the context's last n-gram."""
    for n in range(high, low - 1, -1):
        if len(context) <= n:
            continue
        windows = np.lib.stride_tricks.sliding_window_view(context[:-1], n)
        hits = np.nonzero(np.all(windows == context[-n:], axis=1))[0]
        if len(hits):
            start = int(hits[-1]) + n
            return [int(t) for t in context[start : start + most]]
    return []


def replay(calls: list[tuple[list[int], list[int]]], costs: dict[int, float], drafter: Any) -> Any:
    low, high, most = drafter
    drafted = 0.0
    steps = kept = 0
    for prompt, out in calls:
        seq = np.array(prompt + out)
        i, end = len(prompt), len(seq)
        while i < end:
            d = draft(seq[: i + 1], low, high, most)
            m = 0
            while m < len(d) and i + 1 + m < end and d[m] == seq[i + 1 + m]:
                m += 1
            drafted += costs[1 + len(d)]
            steps += 1
            kept += m
            i += m + 1
    return drafted, steps, kept


def main() -> None:
    args = arguments(__doc__)
    factory = Factory(load_settings({}))
    pipe = factory.pipeline("kgrag")
    llm: Any = factory.llm()
    llm.warm_up()
    llama = llm._llama
    questions = [
        q
        for hops in args.hops
        for q in sample(load_split(args.data, hops, "dev"), args.limit, args.seed)
    ]
    print(f"# load average at start {os.getloadavg()[0]:.2f}", flush=True)

    def run() -> None:
        for q in questions:
            pipe.answer(q.text, list(q.entities))

    calls = record(llama, run)
    generated = sum(len(out) for _, out in calls)
    most = max(m for _, _, m in DRAFTERS) + 1
    costs = batch_costs(llama, (calls[0][0] * 3)[:600], most)
    print(f"# {len(questions)} questions, {len(calls)} calls, {generated} generated tokens")
    print(
        "# ms for one decode of k tokens: "
        + json.dumps({k: round(s * 1000, 1) for k, s in costs.items()})
    )
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    one = costs[1] * generated
    print(
        "\n| n-gram | drafted at most | one token a decode s | drafted s | ratio | steps | drafted tokens kept |"
    )
    print("|---|---|---|---|---|---|---|")
    for drafter in DRAFTERS:
        drafted, steps, kept = replay(calls, costs, drafter)
        print(
            f"| {drafter[0]}-{drafter[1]} | {drafter[2]} | {one:.1f} | {drafted:.1f} "
            f"| x{one / drafted:.2f} | {steps} | {kept} of {generated} |"
        )
    factory.close()


if __name__ == "__main__":
    main()
