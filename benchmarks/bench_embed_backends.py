"""Embedding backends side by side: throughput on the same triples, and how closely each
reproduces today's MiniLM float32 retrieval on dev questions.

Variants (each skipped with a line if its package is missing):

- ``torch-fp32``: sentence-transformers, float32 — **the baseline** every ratio is against;
- ``torch-bf16``: sentence-transformers, bfloat16 (``embed.precision auto`` on AVX-512 BF16);
- ``onnx-fp32``: ONNX Runtime over kgqa's export (``embed.backend onnx``; kgqa.embed.onnx);
- ``onnx-int8``: that export quantised with ONNX Runtime's dynamic int8;
- ``static``: a model2vec static model distilled from the same MiniLM (``--static DIR``, made
  with ``--distill DIR`` once: ``pip install 'model2vec[distill]'``);
- ``kgqa-static``: kgqa's own distillation of the same idea (``embed.backend static``;
  kgqa.embed.static), made once into the cache;
- ``kgqa-aligned``: that static model mapped into MiniLM's space by the least-squares fit
  ``embed.backend aligned`` makes on the KB's own triples (fitted here on the whole KB, as
  ``kgqa index`` does; the fit's seconds printed apart); its questions embedded by
  ``onnx-fp32``, as kgqa embeds them.

Throughput: ``--triples`` seeded random KB triples (``Triple.verbalize()``), batch 256,
length-sorted, after a warm-up batch. Agreement: for ``--questions`` seeded dev questions of
each ``--sets``, the triples within ``--hops`` of the topic entities (in memory, hub cap 500)
ranked by cosine with the question: overlap of each variant's top-30 with the baseline's, and
whether a gold answer is in the top-30 (the retrieval ceiling a KAPING-style answerer has).

    .venv/bin/python benchmarks/bench_embed_backends.py --data ../shared/metaqa
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kgqa.embed.onnx import OnnxEmbedder
from kgqa.embed.sentence_transformers import (
    SentenceTransformerEmbedder,
    cpu_count,
    embed_sorted,
    resolve_model,
)
from kgqa.embed.static import ALIGN_SAMPLE, AlignedStaticEmbedder, StaticEmbedder
from kgqa.eval.datasets import read_questions, sample
from kgqa.graph.expand import ExpandPolicy
from kgqa.graph.memory_store import MemoryStore
from kgqa.settings import load_settings

K = 30


def onnx_int8(base: OnnxEmbedder) -> Callable[[list[str]], np.ndarray] | None:
    """The export quantised (dynamic int8 weights), embedding with the same tokenizer."""
    if importlib.util.find_spec("onnxruntime.quantization") is None:
        return None
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    base.warm_up()
    path = base.onnx_path.with_name("model.int8.onnx")
    if not path.is_file():
        quantize_dynamic(str(base.onnx_path), str(path), weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = cpu_count()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tokenizer = base._tokenizer

    def encode(batch: list[str]) -> np.ndarray:
        encoded = tokenizer.encode_batch(batch)
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        return np.asarray(session.run(None, feed)[0], dtype=np.float32)

    return encode


def static_model(folder: Path) -> Callable[[list[str]], np.ndarray] | None:
    if importlib.util.find_spec("model2vec") is None or not folder.is_dir():
        return None
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(folder))

    def encode(batch: list[str]) -> np.ndarray:
        v = np.asarray(model.encode(batch, batch_size=len(batch)), dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    return encode


def distill(out: Path) -> None:
    from model2vec.distill import distill as m2v_distill

    start = time.perf_counter()
    model = m2v_distill(model_name=str(resolve_model("all-MiniLM-L6-v2").path), pca_dims=None)
    model.save_pretrained(str(out))
    print(f"distilled into {out} in {time.perf_counter() - start:.1f} s", flush=True)


def cosine(cv: np.ndarray, qv: np.ndarray) -> Callable[[np.ndarray, int], np.ndarray]:
    """Candidate rows' scores for question ``i``: their vectors against its vector."""
    return lambda rows, i: cv[rows] @ qv[i]


def reranked(
    short: tuple[np.ndarray, np.ndarray], full: tuple[np.ndarray, np.ndarray], depth: int
) -> Callable[[np.ndarray, int], np.ndarray]:
    """kgqa.pipeline.retrieve.GraphRetriever with a reranker: the shortlisting vectors' top
    ``depth``, scored again by the model itself; the rest below every one of them."""
    (s_cv, s_qv), (f_cv, f_qv) = short, full

    def score(rows: np.ndarray, i: int) -> np.ndarray:
        shortlist = np.argsort(-(s_cv[rows] @ s_qv[i]), kind="stable")[:depth]
        out = np.full(len(rows), -np.inf)
        out[shortlist] = f_cv[rows[shortlist]] @ f_qv[i]
        return out

    return score


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a dataset in MetaQA's layout")
    ap.add_argument("--sets", default="1-hop,2-hop")
    ap.add_argument("--questions", type=int, default=50, help="per set")
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--triples", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--static", type=Path, help="a model2vec folder to measure")
    ap.add_argument("--distill", type=Path, help="distill MiniLM into this folder first")
    ap.add_argument("--variants", help="comma-separated subset (torch-fp32 always runs)")
    ap.add_argument(
        "--rerank", type=int, default=200,
        help="also rank kgqa-static's top-N again by onnx-fp32 (embed.rerank; 0: not)",
    )  # fmt: skip
    ap.add_argument(
        "--aligned-rerank", default="60,100",
        help="the same for kgqa-aligned's top-N, comma-separated depths ('' for none)",
    )  # fmt: skip
    args = ap.parse_args()

    if args.distill:
        distill(args.distill)
        args.static = args.static or args.distill
    settings = load_settings()
    store = MemoryStore.from_file(args.data / "kb.txt")
    triples = store.all_triples()
    rng = random.Random(args.seed)
    texts = [t.verbalize() for t in rng.sample(triples, min(args.triples, len(triples)))]

    onnx = OnnxEmbedder("all-MiniLM-L6-v2", settings.cache_dir)
    kgqa_static = StaticEmbedder("all-MiniLM-L6-v2", settings.cache_dir)
    kgqa_aligned = AlignedStaticEmbedder("all-MiniLM-L6-v2", settings.cache_dir)
    fp32 = SentenceTransformerEmbedder(precision="float32")
    bf16 = SentenceTransformerEmbedder(precision="bfloat16")
    variants: dict[str, Callable[[list[str]], np.ndarray] | None] = {
        "torch-fp32": lambda b: fp32.embed(b),
        "torch-bf16": lambda b: bf16.embed(b),
        "onnx-fp32": lambda b: onnx.embed(b),
        "onnx-int8": onnx_int8(onnx),
        "static": static_model(args.static) if args.static else None,
        "kgqa-static": lambda b: kgqa_static.embed(b),
        "kgqa-aligned": lambda b: kgqa_aligned.embed(b),
    }
    # The variants whose questions another variant embeds (kgqa embeds them with the model).
    questions_by = {"kgqa-aligned": "onnx-fp32"}
    keep = set(args.variants.split(",")) | {"torch-fp32"} if args.variants else set(variants)
    keep |= {questions_by[k] for k in keep if k in questions_by}
    variants = {k: v for k, v in variants.items() if k in keep}
    if "kgqa-aligned" in variants:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            kgqa_aligned.prepare_index(Path(folder), [t.verbalize() for t in triples], 0)
        print(
            f"kgqa-aligned: fitted on {ALIGN_SAMPLE:,} of the KB's {len(triples):,} triples "
            f"in {time.perf_counter() - start:.1f} s (once per index; not in its triples/s)",
            flush=True,
        )
    print(
        f"{len(texts)} triples, {cpu_count()} thread(s), load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rates: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    for name, encode in variants.items():
        if encode is None:
            print(f"  {name:>10}: skipped (package or model missing)")
            continue
        embed_sorted(texts[:256], 384, 256, encode)  # loads and warms up: not counted
        start = time.perf_counter()
        vectors[name] = embed_sorted(texts, 384, 256, encode)
        rates[name] = len(texts) / (time.perf_counter() - start)
    base = vectors["torch-fp32"]
    print("\n| variant | triples/s | x torch-fp32 | cosine to torch-fp32 mean / min |")
    print("|---|---|---|---|")
    for name, rate in rates.items():
        cos = (vectors[name] * base).sum(1) if vectors[name].shape == base.shape else None
        agree = f"{cos.mean():.5f} / {cos.min():.5f}" if cos is not None else "(other space)"
        print(f"| {name} | {rate:.0f} | x{rate / rates['torch-fp32']:.2f} | {agree} |")

    policy = ExpandPolicy(args.hops, 500, 20000)
    print(f"\nagreement on dev questions (candidates within {args.hops} hops, top-{K}):")
    print("| set | variant | top-30 overlap with torch-fp32 (mean) | gold in top-30 |")
    print("|---|---|---|---|")
    asked = []
    for set_name in args.sets.split(","):
        qs = sample(read_questions(args.data / set_name / "qa_dev.txt"), args.questions, args.seed)
        asked += [(set_name, q, store.candidates(q.entities, policy).triples) for q in qs]
    # Every candidate triple embedded once per variant, then ranked per question.
    union = sorted({t.id: t for _, _, cand in asked for t in cand}.values(), key=lambda t: t.id)
    row = {t.id: i for i, t in enumerate(union)}
    print(f"({len(union)} distinct candidate triples, {len(asked)} questions)", flush=True)
    ranked: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, encode in variants.items():
        if name in vectors and encode is not None:
            ranked[name] = (
                embed_sorted([t.verbalize() for t in union], 384, 256, encode),
                embed_sorted([q.text for _, q, _ in asked], 384, 256, encode)
                if name not in questions_by
                else np.empty(0),
            )
    for name, by in questions_by.items():
        if name in ranked:
            ranked[name] = (ranked[name][0], ranked[by][1])
    scorers = {name: cosine(cv, qv) for name, (cv, qv) in ranked.items()}
    depths = {"kgqa-static": [args.rerank] if args.rerank > 0 else []}
    depths["kgqa-aligned"] = [int(n) for n in args.aligned_rerank.split(",") if n.strip()]
    for short_name, shortlist_depths in depths.items():
        if not {short_name, "onnx-fp32"} <= set(ranked):
            continue
        for depth in shortlist_depths:
            scorers[f"{short_name}>top{depth}>onnx-fp32"] = reranked(
                ranked[short_name], ranked["onnx-fp32"], depth
            )
    for set_name in args.sets.split(","):
        for name, score in scorers.items():
            overlap, gold = [], []
            for i, (s_name, q, cand) in enumerate(asked):
                if s_name != set_name or not cand:
                    continue
                rows = np.array([row[t.id] for t in cand])
                top = rows[np.argsort(-score(rows, i), kind="stable")[:K]]
                base_cv, base_qv = ranked["torch-fp32"]
                base_top = rows[np.argsort(-(base_cv[rows] @ base_qv[i]), kind="stable")[:K]]
                overlap.append(len(set(top) & set(base_top)) / len(base_top))
                answers = {a.lower() for a in q.answers}
                gold.append(
                    any(union[r].subject.lower() in answers or union[r].object.lower() in answers
                        for r in top)
                )  # fmt: skip
            print(
                f"| {set_name} | {name} | {statistics.mean(overlap):.3f} | "
                f"{statistics.mean(gold):.2f} |",
                flush=True,
            )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
