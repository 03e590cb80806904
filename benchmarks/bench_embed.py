"""Embed a whole KB into a fresh vector index, then sync again (must embed 0).

    .venv/bin/python benchmarks/bench_embed.py [--kb /work/shared/metaqa/kb.txt]
        [--index-dir /tmp/kgqa-bench/index] [--precision auto|float32|bfloat16] [--baseline 5000]

Before the full run, the same slice of ``--baseline`` triples (file order) is embedded three
ways, to show where the speed comes from: sentence-transformers' default ``encode`` (batch 32;
it sorts by length inside each call), file-order batches of ``--batch-size`` without sorting,
and kgqa's path (sorted by length, batch ``--batch-size``). Prints a JSON summary last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from kgqa.embed.sentence_transformers import SentenceTransformerEmbedder, cpu_count
from kgqa.index.faiss_index import VectorIndex
from kgqa.index.sync import sync_index
from kgqa.loaders import metaqa
from kgqa.types import Triple


def timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run_baseline(emb: SentenceTransformerEmbedder, texts: list[str]) -> dict[str, float]:
    """The same slice, four ways: the library default (float32 model, ``encode`` with batch
    32), kgqa's path in float32, and in ``emb``'s precision in file order and length-sorted."""
    fp32 = SentenceTransformerEmbedder(emb.name, batch_size=emb.batch_size, precision="float32")
    fp32.warm_up()
    bs, n = emb.batch_size, len(texts)
    for e in (fp32, emb):
        e.embed(texts[:256])  # warm caches and allocator so the first variant is not penalized
    _, s_default = timed(lambda: fp32._model.encode(texts, batch_size=32, show_progress_bar=False))
    _, s_fp32 = timed(lambda: fp32.embed(texts))
    _, s_unsorted = timed(lambda: [emb._encode(texts[i : i + bs]) for i in range(0, n, bs)])
    _, s_sorted = timed(lambda: emb.embed(texts))
    p = emb.precision
    return {
        "slice": n,
        "st_default_float32_b32_per_s": n / s_default,
        f"kgqa_float32_sorted_b{bs}_per_s": n / s_fp32,
        f"kgqa_{p}_file_order_b{bs}_per_s": n / s_unsorted,
        f"kgqa_{p}_sorted_b{bs}_per_s": n / s_sorted,
        "speedup_vs_st_default": s_default / s_sorted,
        "speedup_vs_file_order": s_unsorted / s_sorted,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kb", type=Path, default=Path("/work/shared/metaqa/kb.txt"))
    ap.add_argument("--index-dir", type=Path, default=Path("/tmp/kgqa-bench/index"))
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--precision", default="auto", choices=["auto", "float32", "bfloat16"])
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--baseline", type=int, default=5000, help="slice size; 0 skips the baseline")
    ap.add_argument("--limit", type=int, default=0, help="embed only the first N triples")
    args = ap.parse_args()

    start_load = [round(x, 2) for x in os.getloadavg()]
    kb = metaqa.read(args.kb)
    triples = [Triple(t.id, t.subject, t.relation, t.object) for t in kb.triples]
    if args.limit:
        triples = triples[: args.limit]
    print(f"{len(triples)} triples from {args.kb}; {cpu_count()} cores", flush=True)

    emb = SentenceTransformerEmbedder(
        args.model, batch_size=args.batch_size, precision=args.precision
    )
    _, load_s = timed(emb.warm_up)
    print(f"model {emb.name} ({emb.dim}-d, {emb.precision}) loaded in {load_s:.1f} s", flush=True)

    baseline: dict[str, float] = {}
    if args.baseline:
        baseline = run_baseline(emb, [t.verbalize() for t in triples[: args.baseline]])
        for key, value in baseline.items():
            print(f"  baseline {key}: {value:.2f}", flush=True)

    shutil.rmtree(args.index_dir, ignore_errors=True)
    first = sync_index(args.index_dir, emb, triples, progress=True)
    print(
        f"full sync: embedded {first.embedded} in {first.seconds:.1f} s "
        f"({first.rate:.0f} triples/s), index holds {first.total}",
        flush=True,
    )
    second = sync_index(args.index_dir, emb, triples, progress=True)
    print(f"second sync: embedded {second.embedded} in {second.seconds:.2f} s", flush=True)
    index, open_s = timed(lambda: VectorIndex.open(args.index_dir, emb))
    sample = [t.id for t in triples[:: max(1, len(triples) // 100)]]
    check = index.vectors(sample)
    norms = np.linalg.norm(check, axis=1)

    summary = {
        "kb": str(args.kb),
        "triples": len(triples),
        "model": emb.name,
        "dim": emb.dim,
        "precision": emb.precision,
        "batch_size": args.batch_size,
        "cores": cpu_count(),
        # Other work on these shared cores slows everything; the load average says how much.
        "loadavg_start": start_load,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "machine": platform.processor() or platform.machine(),
        "model_load_s": round(load_s, 2),
        "full_sync_s": round(first.seconds, 1),
        "full_sync_triples_per_s": round(first.rate, 1),
        "second_sync_embedded": second.embedded,
        "second_sync_s": round(second.seconds, 2),
        "index_open_s": round(open_s, 2),
        "index_dir": str(args.index_dir),
        "index_bytes": sum(p.stat().st_size for p in args.index_dir.iterdir()),
        "vector_norm_min_max": [round(float(norms.min()), 4), round(float(norms.max()), 4)],
        "baseline": {k: round(v, 2) for k, v in baseline.items()},
    }
    print(json.dumps(summary, indent=2))
    if second.embedded != 0:
        sys.exit("FAIL: the second sync embedded triples again")


if __name__ == "__main__":
    main()
