"""Top-K among candidate triples: numpy gather + dot, FAISS's scan with a bitmap of the
candidates' storage rows, and FAISS's scan with an ID selector (the way before 2026-12-04).

    .venv/bin/python benchmarks/bench_topk.py [--index-dir /tmp/kgqa-bench/index]
        [--sizes 10,100,1000,10000,20000,30000] [--ks 10,30] [--reps 200]

Uses the index that benchmarks/bench_embed.py builds (the full MetaQA KB), or ``--random N``
for a random index of N vectors. Candidate sets are random ids of the index; queries are
stored vectors of random triples plus noise (so scores look like real ones). Each call is
timed end to end as the pipeline makes it (``VectorIndex.search``: id lookup, unknown-id
check, scoring, selection). All methods must return the same ids (ties aside).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from kgqa.index.faiss_index import AUTO_FAISS_FROM, DEFAULT_METHOD, METHODS, VectorIndex


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000, q))


def random_index(n: int, dim: int) -> VectorIndex:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = np.unique(rng.integers(1, 1 << 63, size=n + 100, dtype=np.int64))[:n]
    index = VectorIndex.create(Path(tempfile.mkdtemp()), "random", dim)
    index.add(ids, vecs)
    return index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index-dir", type=Path, default=Path("/tmp/kgqa-bench/index"))
    ap.add_argument("--random", type=int, default=0, help="use a random index of N vectors")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--sizes", default="10,100,1000,3000,10000,20000,30000")
    ap.add_argument("--ks", default="10,30")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--faiss-threads", type=int, default=0, help="0: FAISS's default")
    args = ap.parse_args()

    import faiss

    if args.faiss_threads:
        faiss.omp_set_num_threads(args.faiss_threads)
    t0 = time.perf_counter()
    index = random_index(args.random, args.dim) if args.random else VectorIndex.open(args.index_dir)
    all_ids = index.ids
    index.vectors(all_ids[:1])  # build the lookup tables once, outside the timings
    print(
        f"index: {len(index):,} vectors of {index.dim}-d "
        f"({'random' if args.random else args.index_dir}), opened in "
        f"{time.perf_counter() - t0:.2f} s; faiss threads {faiss.omp_get_max_threads()}, "
        f"loadavg {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    rng = np.random.default_rng(1)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        size = min(size, len(index))
        for k in (int(x) for x in args.ks.split(",")):
            times: dict[str, list[float]] = {m: [] for m in METHODS}
            disagreements = 0
            for _ in range(args.reps):
                cand = rng.choice(all_ids, size=size, replace=False)
                q = index.vectors(rng.choice(all_ids, size=1))[0]
                q = q + 0.3 * rng.standard_normal(index.dim).astype(np.float32) / np.sqrt(index.dim)
                results = {}
                # Alternate the order so neither method always runs on a warm cache.
                for method in METHODS if rng.random() < 0.5 else METHODS[::-1]:
                    t = time.perf_counter()
                    results[method] = index.search(q, cand, k, method=method)
                    times[method].append(time.perf_counter() - t)
                # Same set of ids; the score at the boundary may tie up to float rounding.
                a = results[METHODS[0]]
                for m in METHODS[1:]:
                    b = results[m]
                    if {i for i, _ in a.hits} != {i for i, _ in b.hits}:
                        sa, sb = sorted(s for _, s in a.hits), sorted(s for _, s in b.hits)
                        if not np.allclose(sa, sb, atol=1e-5):
                            disagreements += 1
            row = {"candidates": size, "k": k, "reps": args.reps, "disagreements": disagreements}
            for m in METHODS:
                row[f"{m}_p50_ms"] = round(percentile_ms(times[m], 50), 3)
                row[f"{m}_p95_ms"] = round(percentile_ms(times[m], 95), 3)
            # The default against the way before (numpy below 5,000 candidates, the ID-selector
            # scan from there), in the same run.
            new = "faiss" if size >= AUTO_FAISS_FROM else "numpy"
            old = "faiss-ids" if size >= 5000 else "numpy"
            row["default"], row["before"] = new, old
            row["before_over_default_p95"] = round(row[f"{old}_p95_ms"] / row[f"{new}_p95_ms"], 2)
            rows.append(row)
            print(
                f"candidates {size:>6,}  K={k:<3} "
                + "  ".join(
                    f"{m}: p50 {row[f'{m}_p50_ms']:7.3f} p95 {row[f'{m}_p95_ms']:7.3f}"
                    for m in METHODS
                )
                + f"  (ms)  default {new} p95 {row[f'{new}_p95_ms']:.2f} ms, before {old}"
                + f" {row[f'{old}_p95_ms']:.2f} ms: {row['before_over_default_p95']:.2f}x"
                + (f"  DISAGREE {disagreements}" if disagreements else ""),
                flush=True,
            )
    print(json.dumps({"default_method": DEFAULT_METHOD, "rows": rows}, indent=2))
    if any(r["disagreements"] for r in rows):
        raise SystemExit("FAIL: the methods disagree")


if __name__ == "__main__":
    main()
