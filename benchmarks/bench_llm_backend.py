"""Graph mode through an OpenAI-compatible server beside the in-process backend, in one run:
the same model, seed, settings and questions, so that the answers can be compared (issue 15:
the same steps and answers) and the seconds per question too (the HTTP backend's overhead).

Starts llama-cpp-python's own server (`python -m llama_cpp.server`, the `llm-server` extra)
with the model the settings name, on a free loopback port, with the in-process backend's
context window, threads and seed; then asks every question twice, in process and through the
server, one after the other (so both see the same load). A first question per backend, not
counted, loads the model and opens the client. Needs the KB loaded in the Neo4j of the
settings (`kgqa load`) and its stored profile; the figures are graph mode's whole question
(decomposition and walk), timed around `pipeline.answer`.

    .venv/bin/python benchmarks/bench_llm_backend.py --data ../shared/metaqa \\
        --sets 1-hop,2-hop,3-hop --limit 20 --seed 0 --out /tmp/backend.jsonl

Prints one line per set and one for all: questions, how many have the same steps and the same
answer entities in both, entity Hit@1 of each, median and total seconds of each, and the ratio
served / in process (of the medians and of the totals).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from kgqa.eval.datasets import read_questions, sample
from kgqa.eval.metrics import hit1_entity
from kgqa.factory import Factory
from kgqa.llm.models import resolve_model
from kgqa.settings import load_settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(model_path: Path, alias: str, n_ctx: int, threads: int, log: Path) -> Any:
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--seed",
        "0",
    ]
    proc = subprocess.Popen(args, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"llama_cpp.server exited; see {log}")
        try:
            if httpx.get(f"{url}/models").status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit(f"llama_cpp.server did not start in 300 s; see {log}")


def one(pipe: Any, text: str, entities: tuple[str, ...]) -> tuple[Any, float]:
    start = time.perf_counter()
    answer = pipe.answer(text, list(entities))
    return answer, time.perf_counter() - start


def summary(label: str, rows: list[dict[str, Any]]) -> str:
    local = [r["local_s"] for r in rows]
    served = [r["served_s"] for r in rows]
    same_steps = sum(r["same_steps"] for r in rows)
    same_answers = sum(r["same_answers"] for r in rows)
    return (
        f"{label:>8}  n={len(rows):3d}  same steps {same_steps}/{len(rows)}  "
        f"same answers {same_answers}/{len(rows)}  "
        f"Hit@1 {sum(r['local_hit'] for r in rows) / len(rows):.2f} / "
        f"{sum(r['served_hit'] for r in rows) / len(rows):.2f}  "
        f"median s {statistics.median(local):.2f} / {statistics.median(served):.2f} "
        f"(x{statistics.median(served) / statistics.median(local):.3f})  "
        f"total s {sum(local):.1f} / {sum(served):.1f} (x{sum(served) / sum(local):.3f})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a dataset in MetaQA's layout")
    ap.add_argument("--sets", default="1-hop,2-hop,3-hop")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="one JSON line per question")
    ap.add_argument("--log", type=Path, default=Path("/tmp/kgqa-bench-llm-server.log"))
    args = ap.parse_args()

    local_settings = load_settings()
    if local_settings.llm.backend != "llama_cpp":
        sys.exit("run with the in-process backend in the settings (llm.backend = llama_cpp)")
    s = local_settings.llm
    threads = s.n_threads or (os.cpu_count() or 1)
    model_path = resolve_model(s.model, local_settings.cache_dir)
    proc, url = start_server(model_path, s.model, s.n_ctx, threads, args.log)
    served_settings = load_settings({"llm.backend": "openai", "llm.base_url": url})
    print(
        f"model {s.model}, {threads} thread(s), n_ctx {s.n_ctx}, seed {s.seed}; server {url}; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    out = args.out.open("w", encoding="utf-8") if args.out else None
    rows: list[dict[str, Any]] = []
    try:
        with Factory(local_settings) as fl, Factory(served_settings) as fs:
            local, served = fl.pipeline("graph"), fs.pipeline("graph")
            for set_name in args.sets.split(","):
                questions = sample(
                    read_questions(args.data / set_name / "qa_dev.txt"),
                    args.limit + 1,
                    args.seed,
                )
                warm = questions[0]  # loads the model, opens the client: not counted
                one(local, warm.text, warm.entities)
                one(served, warm.text, warm.entities)
                set_rows = []
                for q in questions[1:]:
                    a, a_s = one(local, q.text, q.entities)
                    b, b_s = one(served, q.text, q.entities)
                    row = {
                        "set": set_name,
                        "id": q.id,
                        "question": q.text,
                        "local_steps": [x.original for x in a.sub_answers],
                        "served_steps": [x.original for x in b.sub_answers],
                        "local_answers": [e.name for e in a.answer_entities],
                        "served_answers": [e.name for e in b.answer_entities],
                        "local_hit": hit1_entity(a, q.answers),
                        "served_hit": hit1_entity(b, q.answers),
                        "local_s": a_s,
                        "served_s": b_s,
                        "constrained_by": b.parameters.get("constrained_by"),
                    }
                    row["same_steps"] = row["local_steps"] == row["served_steps"]
                    row["same_answers"] = set(row["local_answers"]) == set(row["served_answers"])
                    set_rows.append(row)
                    if out is not None:
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                print(summary(set_name, set_rows), flush=True)
                rows += set_rows
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if out is not None:
            out.close()
    print(summary("all", rows))
    print(
        f"constrained_by: {sorted({str(r['constrained_by']) for r in rows})}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
