"""The packaged MiniLM through ONNX Runtime: exported once, the float32 model's vectors,
no torch in a process that only embeds (slow: exports the model with torch)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from kgqa.embed.onnx import OnnxEmbedder
from kgqa.embed.sentence_transformers import SentenceTransformerEmbedder
from kgqa.factory import Factory
from kgqa.settings import load_settings

pytestmark = pytest.mark.slow

TEXTS = [
    "Heat directed_by Michael Mann",
    "The Long, Hot Summer has_tags paul newman",
    "",
    "a much longer text " * 40,  # past nothing: 256 tokens is the model's limit
    "Ünïcödé and punctuation: [Vidocq] — «quoted»",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def test_the_export_gives_the_float32_models_vectors(cache_dir):
    onnx = OnnxEmbedder("all-MiniLM-L6-v2", cache_dir)
    assert not onnx.onnx_path.exists()
    got = onnx.embed(TEXTS, batch_size=2)  # batches of mixed lengths: padding must not count
    assert onnx.onnx_path.is_file() and onnx.dim == 384
    want = SentenceTransformerEmbedder(precision="float32").embed(TEXTS)
    cosine = (got * want).sum(1)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert cosine.min() > 0.99999, cosine
    # one at a time, the same vectors as in a batch
    alone = np.vstack([onnx.embed([t]) for t in TEXTS])
    assert np.allclose(alone, got, atol=1e-5)


def test_a_process_that_embeds_with_onnx_never_imports_torch(cache_dir):
    OnnxEmbedder("all-MiniLM-L6-v2", cache_dir).warm_up()  # the export exists
    code = (
        "import sys, json; from pathlib import Path; from kgqa.embed.onnx import OnnxEmbedder; "
        f"e = OnnxEmbedder('all-MiniLM-L6-v2', Path({str(cache_dir)!r})); "
        "v = e.embed(['who directed [Heat]']); "
        "print(json.dumps([v.shape[1], 'torch' in sys.modules, 'transformers' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [384, False, False]


def test_the_factory_embeds_questions_as_embed_backend_says(cache_dir):
    def made(backend):
        settings = load_settings({"embed.backend": backend, "cache_dir": str(cache_dir)}, env={})
        with Factory(settings) as f:
            return type(f.question_embedder()).__name__, type(f.embedder()).__name__

    # auto: ONNX for questions, torch (bf16 where the CPU has it) for indexing
    assert made("auto") == ("OnnxEmbedder", "SentenceTransformerEmbedder")
    assert made("onnx") == ("OnnxEmbedder", "OnnxEmbedder")
    assert made("torch") == ("SentenceTransformerEmbedder", "SentenceTransformerEmbedder")


def test_the_static_model_is_distilled_once_and_embeds_by_meaning(cache_dir):
    from kgqa.embed.static import StaticEmbedder

    first = StaticEmbedder("all-MiniLM-L6-v2", cache_dir)
    assert first.name == "all-MiniLM-L6-v2+static"  # its own index, never MiniLM's
    assert not first.table_path.exists()
    got = first.embed(TEXTS)
    table = first.table_path
    assert table.is_file() and np.load(table).shape == (30522, 384)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    norms = np.linalg.norm(got, axis=1)
    assert np.allclose(norms[[0, 1, 3, 4]], 1.0, atol=1e-5) and norms[2] == 0.0  # "" -> zeros
    # a second instance reads the table, it does not distil again, and gives the same vectors
    stamp = table.stat().st_mtime_ns
    again = StaticEmbedder("all-MiniLM-L6-v2", cache_dir).embed(TEXTS, batch_size=2)
    assert table.stat().st_mtime_ns == stamp and np.allclose(again, got, atol=1e-6)
    # nearest by meaning: the question is nearer the triple it asks about
    q = first.embed(["who directed Heat"])[0]
    assert q @ got[0] > q @ got[1] + 0.1, (q @ got[0], q @ got[1])


def test_embed_backend_static_indexes_static_and_reranks_with_the_model(cache_dir, tmp_path):
    from kgqa.graph.memory_store import MemoryStore
    from kgqa.index.sync import sync_index
    from kgqa.loaders.base import triple_id
    from kgqa.types import Triple

    overrides = {"embed.backend": "static", "embed.rerank": 200, "cache_dir": str(cache_dir)}
    settings = load_settings(overrides | {"index.dir": str(tmp_path)}, env={})
    rows = [("Heat", "directed_by", "Michael Mann"), ("Heat", "starred_actors", "Al Pacino")]
    rows += [("Heat", "has_tags", f"tag {i}") for i in range(20)]
    store = MemoryStore(Triple(triple_id(*r), *r) for r in rows)
    with Factory(settings) as f:
        f._graph = store  # type: ignore[assignment]
        assert type(f.embedder()).__name__ == "StaticEmbedder"
        sync_index(tmp_path, f.embedder(), store.all_triples(), False)
        # questions (graph mode, the rerank) go to the model itself, the index is static
        assert f.question_embedder() is f.embedder().source  # type: ignore[attr-defined]
        assert f.question_embedder().name == "all-MiniLM-L6-v2"
        r = f.retriever()
        assert r.embedder is f.embedder() and r.reranker is f.question_embedder()
        assert r.rerank_depth == 200
        top = r.top_k("who directed Heat", r.candidates(["Heat"], 1), 3)
        assert top[0].triple.object == "Michael Mann"
        model = f.question_embedder().embed(["who directed Heat", top[0].triple.verbalize()])
        assert abs(top[0].score - float(model[0] @ model[1])) < 1e-5  # the model's own score


def test_embed_backend_aligned_fits_on_the_kbs_triples_once_and_keeps_the_fit(cache_dir, tmp_path):
    from kgqa.embed.static import ALIGN_FILE
    from kgqa.errors import IndexMismatch, ModelNotFound
    from kgqa.graph.memory_store import MemoryStore
    from kgqa.index.faiss_index import VectorIndex
    from kgqa.index.sync import rebuild_index, sync_index
    from kgqa.loaders.base import triple_id
    from kgqa.types import Triple

    def triples(rows):
        return [Triple(triple_id(*r), *r) for r in rows]

    rows = [("Heat", "directed_by", "Michael Mann"), ("Heat", "starred_actors", "Al Pacino")]
    rows += [("Heat", "has_tags", f"tag {i}") for i in range(20)]
    rows += [(f"Club {i}", "based_in", f"City {i % 3}") for i in range(10)]
    first = triples(rows)
    overrides = {"embed.backend": "aligned", "index.dir": str(tmp_path)}
    settings = load_settings(overrides | {"cache_dir": str(cache_dir)}, env={})
    with Factory(settings) as f:
        aligned = f.embedder()
        assert aligned.name == "all-MiniLM-L6-v2+aligned"  # its own index
        with pytest.raises(ModelNotFound, match="only the triples of its index"):
            aligned.embed(["who directed Heat"])
        sync_index(tmp_path, aligned, first, False)
        fit = tmp_path / ALIGN_FILE
        assert fit.is_file()
        stamp = fit.stat().st_mtime_ns
        index = VectorIndex.open(tmp_path, aligned)
        model = f.question_embedder()
        assert model is aligned.source  # type: ignore[attr-defined]
        # fitted on these very triples: their aligned vectors are near the model's own
        own = model.embed([t.verbalize() for t in first])
        got = index.vectors([t.id for t in first])
        assert ((own * got).sum(1)).min() > 0.9

        # a later sync adds triples with the same fit; the vectors already there are kept
        more = triples([("Thief", "directed_by", "Michael Mann")])
        sync_index(tmp_path, type(aligned)("all-MiniLM-L6-v2", cache_dir), first + more, False)
        assert fit.stat().st_mtime_ns == stamp
        again = VectorIndex.open(tmp_path, aligned)
        assert np.allclose(again.vectors([t.id for t in first]), got, atol=1e-6)
        assert len(again) == len(first) + 1

        # the question side is the model's: the retriever compares its vector with the index
        f._graph = MemoryStore(first + more)  # type: ignore[assignment]
        r = f.retriever()
        assert r.embedder is model and r.reranker is None
        top = r.top_k("who directed Heat", r.candidates(["Heat"], 1), 3)
        assert top[0].triple.object == "Michael Mann"

    # vectors without their fit cannot be extended; a rebuild fits again
    fit.unlink()
    newest = triples([("Ronin", "directed_by", "John Frankenheimer")])
    with pytest.raises(IndexMismatch, match="kgqa index --rebuild"):
        sync_index(tmp_path, type(aligned)("all-MiniLM-L6-v2", cache_dir), first + newest, False)
    rebuild_index(tmp_path, type(aligned)("all-MiniLM-L6-v2", cache_dir), first + newest, False)
    assert fit.is_file() and len(VectorIndex.open(tmp_path, aligned)) == len(first) + 1
