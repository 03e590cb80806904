"""Load on `kgqa serve`: K concurrent clients asking graph-mode questions for a fixed time.

For K in --clients (default 1, 4, 16), each client asks the questions of
``kgqa/data/sample_qa.tsv`` in turn for --duration seconds over loopback, first with the cache
off, then with it on (every question answered once before, so each request is a hit):
throughput, p50 / p95 latency, errors (any status but 200 and 503, and any answer that
differs from the sequential answer to the same question: must be 0), queue rejections (503;
the client waits the Retry-After, bounded by the time left, and asks again: a rejected request
is not lost), and requests still unanswered at the end. With --real, also the whole-process
`kgqa ask --json` for the first question against the same question over the API (warm), as a
ratio.

Bounded in count and time (at most --duration x 2 x len(--clients) seconds of load plus the
sequential pass), loopback only, no output outside --out.

    # the server's own overhead: the sample KB in memory, a deterministic stand-in LLM
    .venv/bin/python benchmarks/bench_server.py --fake --duration 10
    # the real thing: the graph `make demo` loads, the configured models
    .venv/bin/python benchmarks/bench_server.py --real --duration 60 --out /tmp/bench-server.json
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "kgqa" / "data" / "sample_qa.tsv"


def questions(limit: int) -> list[str]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()[1:]
    return [ln.split("\t")[2] for ln in lines if ln.strip()][:limit]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_state(data_dir: Path) -> Any:
    """The packaged sample KB in memory, the hashing embedder and a stand-in LLM that writes
    the question as its one step (the walk then scores the topic's steps by phrase): the
    server's own cost, no model."""
    from kgqa.cache import AnswerCache
    from kgqa.embed.hashing import HashingEmbedder
    from kgqa.factory import Factory
    from kgqa.graph.memory_store import MemoryStore
    from kgqa.index.sync import sync_index
    from kgqa.llm.base import Completion, GenParams, Prompt
    from kgqa.server.state import ServerState
    from kgqa.settings import Settings

    class StandIn:
        name = "stand-in"

        def complete(self, prompt: Prompt, params: GenParams) -> Completion:
            last = prompt if isinstance(prompt, str) else prompt[-1]["content"]
            return Completion(f"1. {last.splitlines()[0]}\n", 10, 5, 0.0)

    class MemoryFactory(Factory):
        def __init__(self, settings: Settings) -> None:
            super().__init__(settings)
            self.store = MemoryStore.from_file(ROOT / "kgqa" / "data" / "sample_kb.txt")
            self._cache["llm"] = StandIn()
            self._cache["embedder"] = HashingEmbedder(dim=64)

        def graph(self) -> Any:
            return self.store

        def driver(self) -> Any:
            return None

    settings = Settings(data_dir=data_dir).with_overrides({"profile.namer": "rules"})
    factory = MemoryFactory(settings)
    sync_index(settings.index_dir, factory.embedder(), factory.graph().all_triples(), False)
    return ServerState(factory, AnswerCache(settings.answer_cache_dir))


def real_state() -> Any:
    from kgqa.cache import AnswerCache
    from kgqa.factory import Factory
    from kgqa.server.state import ServerState
    from kgqa.settings import load_settings

    settings = load_settings()
    return ServerState(Factory(settings), AnswerCache(settings.answer_cache_dir))


def start(state: Any) -> tuple[str, Any, threading.Thread]:
    import uvicorn

    from kgqa.server.app import create_app

    state.warm_up()
    port = _free_port()
    config = uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", server, thread


def comparable(doc: dict[str, Any]) -> Any:
    """What must be the same in every answer to one question (not the times or the cache)."""
    return (doc["answer"], [(e["name"], e["support"]) for e in doc["answer_entities"]])


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected: int = 0
    unanswered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(
    base: str, qs: list[str], offset: int, until: float, cache: bool, want: dict[str, Any], t: Tally
) -> None:
    lock = t.lock
    i = offset
    with httpx.Client(base_url=base, timeout=600) as c:
        while time.monotonic() < until:
            q = qs[i % len(qs)]
            i += 1
            answered = False
            while time.monotonic() < until:
                start = time.monotonic()
                r = c.post("/v1/ask", json={"question": q, "mode": "graph", "cache": cache})
                took = time.monotonic() - start
                if r.status_code == 503 and r.json()["error"]["type"] == "QueueFull":
                    with lock:
                        t.rejected += 1
                    wait = float(r.headers.get("retry-after", "1"))
                    time.sleep(max(0.0, min(wait, until - time.monotonic())))
                    continue
                with lock:
                    if r.status_code != 200:
                        t.errors.append(f"{r.status_code} {r.text[:200]}")
                    elif (got := comparable(r.json())) != want[q]:
                        t.errors.append(
                            f"answer differs from the sequential one: {q}: "
                            f"{json.dumps(got)[:600]} against {json.dumps(want[q])[:600]}"
                        )
                    else:
                        t.latencies.append(took)
                answered = True
                break
            if not answered:
                with lock:
                    t.unanswered += 1


def run_load(
    base: str, qs: list[str], k: int, seconds: float, cache: bool, want: dict[str, Any]
) -> dict[str, Any]:
    t = Tally()
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client, args=(base, qs, j * 7, until, cache, want, t))
        for j in range(k)
    ]
    began = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.monotonic() - began
    lat = sorted(t.latencies)

    def pct(p: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None

    return {
        "clients": k,
        "cache": cache,
        "seconds": round(wall, 1),
        "answered": len(lat),
        "per_second": round(len(lat) / wall, 2),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "errors": len(t.errors),
        "error_examples": t.errors[:3],
        "queue_rejections": t.rejected,
        "unanswered": t.unanswered,
    }


def whole_process(question: str) -> float:
    start = time.monotonic()
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "kgqa"), "ask", question, "--json", "--no-cache"],
        check=True,
        capture_output=True,
    )
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--fake", action="store_true", help="in-memory sample KB, stand-in LLM")
    which.add_argument("--real", action="store_true", help="the configured Neo4j and models")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per K and cache state")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    qs = questions(args.questions)

    import tempfile

    with tempfile.TemporaryDirectory(prefix="kgqa-bench-server-") as tmp:
        state = fake_state(Path(tmp)) if args.fake else real_state()
        base, server, thread = start(state)
        try:
            want: dict[str, Any] = {}
            with httpx.Client(base_url=base, timeout=600) as c:
                seq = []
                for q in qs:  # the sequential answers (and, stored, the cache for later)
                    start_t = time.monotonic()
                    r = c.post("/v1/ask", json={"question": q, "mode": "graph"})
                    r.raise_for_status()
                    seq.append(time.monotonic() - start_t)
                    want[q] = comparable(r.json())
            rows = []
            for k in [int(x) for x in args.clients.split(",")]:
                for cache in (False, True):
                    rows.append(run_load(base, qs, k, args.duration, cache, want))
                    print(json.dumps(rows[-1]), file=sys.stderr)
            result: dict[str, Any] = {
                "mode": "fake" if args.fake else "real",
                "questions": len(qs),
                "queue_size": state.runner.queue_size,
                "sequential_p50_ms": round(statistics.median(seq) * 1000, 1),
                "rows": rows,
            }
            if args.real:
                api = []
                with httpx.Client(base_url=base, timeout=600) as c:
                    for _ in range(3):
                        s0 = time.monotonic()
                        c.post("/v1/ask", json={"question": qs[0], "cache": False})
                        api.append(time.monotonic() - s0)
                cli = whole_process(qs[0])
                result["whole_process_s"] = round(cli, 2)
                result["api_warm_s"] = round(statistics.median(api), 3)
                result["whole_process_over_api"] = round(cli / statistics.median(api), 1)
        finally:
            server.should_exit = True
            thread.join(30)
            state.close()
    print("| K | cache | answered/s | p50 ms | p95 ms | errors | rejected | unanswered |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['clients']} | {'on' if r['cache'] else 'off'} | {r['per_second']} | "
            f"{r['p50_ms']} | {r['p95_ms']} | {r['errors']} | {r['queue_rejections']} | "
            f"{r['unanswered']} |"
        )
    if "whole_process_over_api" in result:
        print(
            f"whole-process kgqa ask {result['whole_process_s']} s vs the API "
            f"{result['api_warm_s']} s: {result['whole_process_over_api']}x"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
