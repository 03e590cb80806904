"""Candidate retrieval from Neo4j vs. an in-memory BFS, and the retrieval ceiling.

For the topic entities of seeded samples of MetaQA dev questions, for N = 1, 2, 3:
p50/p95 latency and candidate counts of ``Neo4jStore.candidates`` (one var-length Cypher
query over Bolt), beside a plain-Python adjacency-list BFS over the same KB with the same hub
rule (the ratio says what Neo4j and Bolt cost), and beside the way before session 25 (the same
query; its rows grouped by hop through adjacency lists, with Python's cyclic garbage collector
running meanwhile): its p50/p95, the ratio of p95s, and how many candidate sets came out the
same (they must all). Then the recall ceiling: the fraction of
questions whose gold answers are among the candidates (N = the question's hops) and, when the
vector index exists, among the top-K for the whole question (K = 10/20/30).

Needs the full KB loaded (``kgqa load ../shared/metaqa/kb.txt``). Run:

    .venv/bin/python benchmarks/bench_retrieval.py --sample 200 --seed 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from kgqa.errors import KGQAError
from kgqa.eval.metaqa import load_split, sample
from kgqa.factory import Factory
from kgqa.graph.expand import ExpandPolicy
from kgqa.loaders.metaqa import read as read_kb
from kgqa.settings import load_settings
from kgqa.types import Triple


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


class MemoryGraph:
    """Adjacency lists in plain Python: the baseline."""

    def __init__(self, kb_path: Path):
        kb = read_kb(kb_path)
        self.adj: dict[str, list[int]] = defaultdict(list)
        self.triples = kb.triples
        for i, t in enumerate(kb.triples):
            self.adj[t.subject].append(i)
            self.adj[t.object].append(i)

    def expand(self, entities: list[str], hops: int, hub_cap: int) -> set[int]:
        seen_nodes = {e: 0 for e in entities}
        found: set[int] = set()
        queue = deque(entities)
        while queue:
            node = queue.popleft()
            d = seen_nodes[node]
            if d >= hops:
                continue
            if d > 0 and hub_cap and len(self.adj[node]) > hub_cap:
                continue
            for i in self.adj[node]:
                found.add(i)
                t = self.triples[i]
                other = t.object if t.subject == node else t.subject
                if other not in seen_nodes:
                    seen_nodes[other] = d + 1
                    queue.append(other)
        return found


def grouped_before(rows: Sequence[Sequence[Any]], entities: list[str], n: int, cap: int) -> Any:
    """The candidates' hop groups as kgqa computed them before session 25 (the baseline):
    Triples first, adjacency lists over them, a BFS, a sort by attributes."""
    triples = [Triple(tid, s, r, o) for tid, s, r, o, _, _ in rows]
    degrees = {}
    for _, s, _, o, ds, do in rows:
        degrees[s], degrees[o] = ds, do
    adjacency: dict[str, list[str]] = {}
    for t in triples:
        adjacency.setdefault(t.subject, []).append(t.object)
        adjacency.setdefault(t.object, []).append(t.subject)
    start = set(entities)

    def expandable(node: str) -> bool:
        return node in start or not cap or degrees.get(node, 0) <= cap

    dist = {e: 0 for e in entities if e in adjacency}
    queue = deque(dist)
    while queue:
        node = queue.popleft()
        if expandable(node):
            for nxt in adjacency[node]:
                if nxt not in dist:
                    dist[nxt] = dist[node] + 1
                    queue.append(nxt)
    reach = {node: d for node, d in dist.items() if expandable(node)}
    by_hop: list[list[Triple]] = [[] for _ in range(n)]
    for t in triples:
        hop = min(reach.get(t.subject, 1 << 30), reach.get(t.object, 1 << 30)) + 1
        by_hop[min(hop, n) - 1].append(t)
    return tuple(tuple(sorted(g, key=attrgetter("subject", "relation", "object"))) for g in by_hop)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/metaqa"))
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hub-cap", type=int, default=None)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    settings = load_settings({"retrieval.hub_cap": args.hub_cap})
    policy_cap = settings.retrieval.hub_cap
    max_c = settings.retrieval.max_candidates
    t0 = time.perf_counter()
    mem = MemoryGraph(args.data / "kb.txt")
    print(f"in-memory graph built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    results: dict[str, object] = {"sample": args.sample, "seed": args.seed, "hub_cap": policy_cap}
    with Factory(settings) as factory:
        graph = factory.graph()
        index = embedder = None
        try:
            index, embedder = factory.vector_index(), factory.embedder()
        except KGQAError as e:  # the index is optional for this benchmark
            print(f"no vector index ({e}); skipping the top-K ceiling", file=sys.stderr)
        print(
            "| questions | N | Neo4j p50 / p95 ms | BFS p50 / p95 ms | ratio p50 | "
            "before p50 / p95 ms | before / now p95 | same sets | "
            "candidates p50 / p95 / max | truncated | gold in candidates |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for qhops in (1, 2, 3):
            questions = sample(load_split(args.data, qhops, "dev"), args.sample, args.seed)
            for n in (1, 2, 3):
                neo_ms, bfs_ms, before_ms, counts, hit, trunc, same = [], [], [], [], 0, 0, 0
                cap = policy_cap if policy_cap > 0 else 2**31 - 1
                for i, q in enumerate(questions):
                    for way in ("now", "before") if i % 2 == 0 else ("before", "now"):
                        t = time.perf_counter()
                        if way == "now":
                            policy = ExpandPolicy(n, policy_cap, max_c)
                            cands = graph.candidates(list(q.entities), policy)
                            neo_ms.append((time.perf_counter() - t) * 1000)
                        else:  # the same steps as Neo4jStore.candidates
                            graph.require_entities(list(q.entities))
                            got = graph._read(
                                f"candidates_hops{n}",
                                entities=list(q.entities),
                                hub_cap=cap,
                                limit=max_c + 1,
                            )
                            rows = got[0]["rows"][:max_c] if got else []
                            old = grouped_before(rows, list(q.entities), n, policy_cap)
                            before_ms.append((time.perf_counter() - t) * 1000)
                    same += old == cands.by_hop
                    t = time.perf_counter()
                    mem.expand(list(q.entities), n, policy_cap)
                    bfs_ms.append((time.perf_counter() - t) * 1000)
                    counts.append(len(cands))
                    trunc += cands.truncated
                    names = {x for tr in cands.triples for x in (tr.subject, tr.object)}
                    hit += any(g in names for g in q.answers)
                row = {
                    "neo4j_p50_ms": statistics.median(neo_ms),
                    "neo4j_p95_ms": pct(neo_ms, 0.95),
                    "bfs_p50_ms": statistics.median(bfs_ms),
                    "bfs_p95_ms": pct(bfs_ms, 0.95),
                    "before_p50_ms": statistics.median(before_ms),
                    "before_p95_ms": pct(before_ms, 0.95),
                    "same_candidate_sets": same,
                    "candidates_p50": statistics.median(counts),
                    "candidates_p95": pct(counts, 0.95),
                    "candidates_max": max(counts),
                    "truncated": trunc,
                    "gold_in_candidates": hit / len(questions),
                }
                results[f"{qhops}hop_N{n}"] = row
                ratio = row["neo4j_p50_ms"] / max(row["bfs_p50_ms"], 1e-6)
                print(
                    f"| {qhops}-hop | {n} | {row['neo4j_p50_ms']:.1f} / {row['neo4j_p95_ms']:.1f} | "
                    f"{row['bfs_p50_ms']:.2f} / {row['bfs_p95_ms']:.2f} | {ratio:.1f}x | "
                    f"{row['before_p50_ms']:.1f} / {row['before_p95_ms']:.1f} | "
                    f"x{row['before_p95_ms'] / max(row['neo4j_p95_ms'], 1e-6):.2f} | "
                    f"{same}/{len(questions)} | "
                    f"{row['candidates_p50']:.0f} / {row['candidates_p95']:.0f} / "
                    f"{row['candidates_max']} | {trunc} | {row['gold_in_candidates']:.3f} |",
                    flush=True,
                )
        if index is not None and embedder is not None:
            from kgqa.mentions import strip_brackets
            from kgqa.pipeline.retrieve import GraphRetriever

            retriever = GraphRetriever(graph, index, embedder, ExpandPolicy(3, policy_cap, max_c))
            print("\n| questions | N | K=10 | K=20 | K=30 | top-K p50 / p95 ms |")
            print("|---|---|---|---|---|---|")
            for qhops in (1, 2, 3):
                questions = sample(load_split(args.data, qhops, "dev"), args.sample, args.seed)
                hits = {10: 0, 20: 0, 30: 0}
                ms: list[float] = []
                for q in questions:
                    cands = retriever.candidates(list(q.entities), qhops)
                    t = time.perf_counter()
                    top = retriever.top_k(strip_brackets(q.text), cands, 30)
                    ms.append((time.perf_counter() - t) * 1000)
                    for k in hits:
                        names = {x for s in top[:k] for x in (s.triple.subject, s.triple.object)}
                        hits[k] += any(g in names for g in q.answers)
                row2 = {f"gold_in_top{k}": v / len(questions) for k, v in hits.items()}
                row2 |= {"topk_p50_ms": statistics.median(ms), "topk_p95_ms": pct(ms, 0.95)}
                results[f"{qhops}hop_topk"] = row2
                print(
                    f"| {qhops}-hop | {qhops} | {row2['gold_in_top10']:.3f} | "
                    f"{row2['gold_in_top20']:.3f} | {row2['gold_in_top30']:.3f} | "
                    f"{row2['topk_p50_ms']:.1f} / {row2['topk_p95_ms']:.1f} |",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
