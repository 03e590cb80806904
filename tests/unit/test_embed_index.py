"""Embedding and the vector index with the hash embedder: no model, no services."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from kgqa.embed.base import Embedder
from kgqa.embed.hashing import HashingEmbedder
from kgqa.errors import IndexMismatch, ModelNotFound
from kgqa.index.faiss_index import INDEX_FILE, MANIFEST_FILE, VectorIndex, kb_fingerprint
from kgqa.index.sync import rebuild_index, sync_index
from kgqa.loaders.base import triple_id
from kgqa.types import Triple

pytestmark = pytest.mark.unit


def make_triple(s: str, r: str, o: str) -> Triple:
    return Triple(triple_id(s, r, o), s, r, o)


def kb(n: int, seed: int = 0) -> list[Triple]:
    rng = random.Random(seed)
    rels = ["directed_by", "written_by", "starred_actors", "has_genre", "release_year"]
    return [
        make_triple(f"Movie {i}", rng.choice(rels), f"Thing {rng.randrange(n)}") for i in range(n)
    ]


class RecordingEmbedder(HashingEmbedder):
    """Remembers every text it embedded; can fail after a number of texts."""

    def __init__(self, dim: int = 32, name: str | None = None, fail_after: int | None = None):
        super().__init__(dim, name)
        self.texts: list[str] = []
        self.fail_after = fail_after

    def embed(self, texts, batch_size=None, progress=False):  # type: ignore[no-untyped-def]
        if self.fail_after is not None and len(self.texts) + len(texts) > self.fail_after:
            raise RuntimeError("simulated crash while embedding")
        self.texts.extend(texts)
        return super().embed(texts, batch_size, progress)


def test_hashing_embedder_is_an_embedder_deterministic_and_normalized():
    e = HashingEmbedder(dim=16)
    assert isinstance(e, Embedder)
    a = e.embed(["(Kismet, directed by, William Dieterle)", "", "kismet"])
    b = HashingEmbedder(dim=16).embed(["(Kismet, directed by, William Dieterle)", "", "kismet"])
    assert a.dtype == np.float32 and a.shape == (3, 16)
    np.testing.assert_array_equal(a, b)
    assert np.linalg.norm(a[0]) == pytest.approx(1.0)
    assert not a[1].any()  # nothing to hash
    # Shared words give a higher score than unrelated text.
    c = e.embed(["kismet william", "unrelated words only"])
    assert a[0] @ c[0] > a[0] @ c[1]


def test_sync_embeds_the_paper_verbalization(tmp_path):
    t = make_triple("Kismet", "directed_by", "William Dieterle")
    emb = RecordingEmbedder()
    sync_index(tmp_path, emb, [t], progress=False)
    assert emb.texts == ["(Kismet, directed by, William Dieterle)"] == [t.verbalize()]
    np.testing.assert_allclose(
        VectorIndex.open(tmp_path).vectors([t.id])[0], HashingEmbedder(32).embed([t.verbalize()])[0]
    )


def test_sync_embeds_only_new_triples_and_reload_embeds_nothing(tmp_path):
    triples = kb(300)
    emb = RecordingEmbedder()
    first = sync_index(tmp_path, emb, triples[:200], progress=False)
    assert (first.embedded, first.already_present, first.total) == (200, 0, 200)

    emb.texts.clear()
    again = sync_index(tmp_path, emb, triples[:200], progress=False)
    assert (again.embedded, again.already_present, again.total) == (0, 200, 200)
    assert emb.texts == []

    more = sync_index(tmp_path, emb, list(reversed(triples)) + triples[:10], progress=False)
    assert (more.embedded, more.already_present, more.total) == (100, 200, 300)
    assert sorted(emb.texts) == sorted(t.verbalize() for t in triples[200:])


def test_index_survives_save_and_load(tmp_path):
    triples = kb(120)
    emb = HashingEmbedder(32)
    sync_index(tmp_path, emb, triples, progress=False)
    assert (tmp_path / INDEX_FILE).is_file() and (tmp_path / MANIFEST_FILE).is_file()

    reopened = VectorIndex.open(tmp_path, HashingEmbedder(32))
    ids = [t.id for t in triples]
    assert len(reopened) == 120
    assert np.array_equal(reopened.ids, np.sort(np.array(ids, dtype=np.int64)))
    np.testing.assert_allclose(reopened.vectors(ids), emb.embed([t.verbalize() for t in triples]))

    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert manifest["model"] == "hashing-32" and manifest["dim"] == 32
    assert manifest["count"] == 120
    assert manifest["kb_fingerprint"] == kb_fingerprint(ids)
    assert {"created", "updated", "kgqa_version"} <= set(manifest)


@pytest.mark.parametrize(
    "other",
    [
        HashingEmbedder(32, name="another-model"),
        HashingEmbedder(48, name="hashing-32"),
        HashingEmbedder(32, name="hashing-32+static"),  # embed.backend static: other vectors
    ],
)
def test_index_built_with_another_model_or_dim_is_detected(tmp_path, other):
    sync_index(tmp_path, HashingEmbedder(32), kb(20), progress=False)
    with pytest.raises(IndexMismatch, match=r"kgqa index --rebuild"):
        VectorIndex.open(tmp_path, other)
    with pytest.raises(IndexMismatch):
        sync_index(tmp_path, other, kb(20), progress=False)
    # A rebuild replaces it.
    report = rebuild_index(tmp_path, other, kb(20), progress=False)
    assert report.embedded == 20
    assert VectorIndex.open(tmp_path, other).manifest.model == other.name


def test_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(IndexMismatch, match="kgqa index"):
        VectorIndex.open(tmp_path / "nowhere")


def test_fingerprint_is_order_independent_and_content_sensitive():
    ids = [t.id for t in kb(50)]
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    assert kb_fingerprint(ids) == kb_fingerprint(shuffled) == kb_fingerprint(np.array(shuffled))
    assert kb_fingerprint(ids) == kb_fingerprint(ids + ids[:5])
    assert kb_fingerprint(ids) != kb_fingerprint(ids[:-1])


def test_same_kb_in_another_order_gives_same_manifest_fingerprint(tmp_path):
    triples = kb(80)
    sync_index(tmp_path / "a", HashingEmbedder(16), triples, progress=False)
    sync_index(tmp_path / "b", HashingEmbedder(16), triples[::-1], progress=False)
    a = VectorIndex.open(tmp_path / "a").manifest
    b = VectorIndex.open(tmp_path / "b").manifest
    assert a.kb_fingerprint == b.kb_fingerprint


@pytest.mark.parametrize("method", ["numpy", "faiss", "faiss-ids", "auto"])
@pytest.mark.parametrize("k", [1, 7, 30, 500])
def test_top_k_matches_brute_force(tmp_path, method, k):
    rng = np.random.default_rng(0)
    n, dim = 400, 24
    # 63-bit positive ids like real triple ids, distinct.
    ids = np.unique(rng.integers(1, 1 << 63, size=n + 10, dtype=np.int64))[:n]
    rng.shuffle(ids)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    index = VectorIndex.create(tmp_path, "random", dim)
    index.add(ids, vecs)
    index.save()
    index = VectorIndex.open(tmp_path)
    for trial in range(5):
        cand_pos = rng.choice(n, size=int(rng.integers(1, n)), replace=False)
        query = rng.standard_normal(dim).astype(np.float32)
        got = index.top_k(query, ids[cand_pos], k, method=method)
        scores = vecs[cand_pos] @ query
        ref = np.argsort(-scores)[: min(k, len(cand_pos))]
        assert [i for i, _ in got] == [int(ids[cand_pos][j]) for j in ref], trial
        np.testing.assert_allclose([s for _, s in got], scores[ref], rtol=1e-5, atol=1e-5)


def test_top_k_ranks_only_candidates_and_accepts_text(tmp_path):
    triples = [
        make_triple("Kismet", "directed_by", "William Dieterle"),
        make_triple("Kismet", "written_by", "Edward Knoblock"),
        make_triple("Dieterle Story", "directed_by", "William Dieterle"),
    ]
    emb = HashingEmbedder(64)
    sync_index(tmp_path, emb, triples, progress=False)
    index = VectorIndex.open(tmp_path, emb)
    cand = [triples[1].id, triples[2].id]
    hits = index.top_k("who directed Kismet William Dieterle", cand, k=5)
    assert [i for i, _ in hits] == [triples[2].id, triples[1].id]
    assert index.top_k("anything", [], k=5) == []
    assert index.top_k("anything", cand, k=0) == []


def test_duplicate_candidates_are_ranked_once(tmp_path):
    rng = np.random.default_rng(3)
    index = VectorIndex.create(tmp_path, "random", 8)
    index.add(np.arange(1, 21), rng.standard_normal((20, 8)).astype(np.float32))
    q = rng.standard_normal(8).astype(np.float32)
    cand = list(range(1, 21)) * 3
    for method in ("numpy", "faiss", "faiss-ids"):
        hits = index.top_k(q, cand, k=10, method=method)
        assert len({i for i, _ in hits}) == 10
        assert hits == index.top_k(q, list(range(1, 21)), k=10, method=method)


def test_every_method_ranks_the_same_after_vectors_are_removed_and_added(tmp_path):
    """The bitmap scan reads storage rows: rows move when FAISS compacts on remove."""
    rng = np.random.default_rng(5)
    n, dim = 300, 12
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    ids = np.arange(1000, 1000 + n, dtype=np.int64)
    index = VectorIndex.create(tmp_path, "random", dim)
    index.add(ids, vecs)
    q = rng.standard_normal(dim).astype(np.float32)
    index.top_k(q, ids[:50], k=5, method="faiss")  # builds the row tables
    assert index.remove(ids[::3]) == len(ids[::3])
    extra = rng.standard_normal((10, dim)).astype(np.float32)
    index.add(np.arange(5000, 5010), extra)
    kept = np.concatenate([ids[np.arange(n) % 3 != 0], np.arange(5000, 5010)])
    table = dict(zip(ids.tolist(), vecs, strict=True)) | dict(
        zip(range(5000, 5010), extra, strict=True)
    )
    cand = rng.choice(kept, size=120, replace=False)
    scores = np.array([table[int(i)] @ q for i in cand])
    want = [int(cand[j]) for j in np.argsort(-scores)[:20]]
    for method in ("numpy", "faiss", "faiss-ids"):
        assert [i for i, _ in index.top_k(q, cand, k=20, method=method)] == want, method


def test_unknown_candidate_ids_are_reported_not_ignored(tmp_path, caplog):
    index = VectorIndex.create(tmp_path, "random", 4)
    index.add([10, 20, 30], np.eye(3, 4, dtype=np.float32))
    q = np.array([1, 0, 0, 0], dtype=np.float32)
    with pytest.raises(IndexMismatch, match=r"2 of 4 triples are not in the vector index"):
        index.top_k(q, [10, 20, 99, 5], k=2)
    result = index.search(q, [10, 20, 99, 5], k=2)
    assert result.unknown == (5, 99)
    assert [i for i, _ in result.hits] == [10, 20]
    with caplog.at_level("WARNING"):
        assert [i for i, _ in index.top_k(q, [99, 20, 10], k=1, strict=False)] == [10]
    assert "1 of 3 candidate triples are not in the vector index" in caplog.text
    with pytest.raises(IndexMismatch, match="run `kgqa index`"):
        index.vectors([10, 12345])
    np.testing.assert_array_equal(index.contains([30, 31, 10]), [True, False, True])


def test_wrong_query_dimension_is_an_error(tmp_path):
    index = VectorIndex.create(tmp_path, "random", 4)
    index.add([1], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(IndexMismatch, match="3 dimensions"):
        index.top_k(np.ones(3, dtype=np.float32), [1], k=1)


def test_interrupted_sync_resumes_without_duplicates(tmp_path):
    triples = kb(1000)
    crashing = RecordingEmbedder(fail_after=600)
    with pytest.raises(RuntimeError, match="simulated crash"):
        sync_index(tmp_path, crashing, triples, progress=False, save_every=256, batch_size=64)
    saved = VectorIndex.open(tmp_path)
    # Everything embedded before the crash was kept (pieces of 256 texts: 512 < 600 < 768).
    assert len(saved) == 512

    emb = RecordingEmbedder()
    report = sync_index(tmp_path, emb, triples, progress=False, save_every=256, batch_size=64)
    assert (report.embedded, report.already_present, report.total) == (488, 512, 1000)
    index = VectorIndex.open(tmp_path)
    assert len(index) == 1000 and len(np.unique(index.ids)) == 1000
    assert set(crashing.texts).isdisjoint(emb.texts)
    assert index.manifest.kb_fingerprint == kb_fingerprint([t.id for t in triples])


def test_checkpoints_are_written_during_a_long_sync(tmp_path):
    seen_counts: list[int] = []

    class Spy(RecordingEmbedder):
        def embed(self, texts, batch_size=None, progress=False):  # type: ignore[no-untyped-def]
            if (tmp_path / MANIFEST_FILE).is_file():
                seen_counts.append(json.loads((tmp_path / MANIFEST_FILE).read_text())["count"])
            return super().embed(texts, batch_size, progress)

    sync_index(tmp_path, Spy(), kb(1000), progress=False, save_every=300, batch_size=64)
    # Pieces of 256; a save once 300 were unsaved: after 512 and after 1000 (the end).
    assert seen_counts == [512, 512]
    assert VectorIndex.open(tmp_path).manifest.count == 1000


def test_prune_removes_triples_gone_from_the_kb(tmp_path):
    triples = kb(50)
    sync_index(tmp_path, HashingEmbedder(16), triples, progress=False)
    report = sync_index(tmp_path, HashingEmbedder(16), triples[:40], progress=False, prune=True)
    assert (report.embedded, report.removed, report.total) == (0, 10, 40)
    assert VectorIndex.open(tmp_path).manifest.kb_fingerprint == kb_fingerprint(
        [t.id for t in triples[:40]]
    )


def test_texts_are_sorted_by_length_but_ids_stay_aligned(tmp_path):
    triples = [make_triple("A" * (50 - i), "r", "o") for i in range(40)]
    emb = RecordingEmbedder(dim=16)
    sync_index(tmp_path, emb, triples, progress=False)
    assert [len(t) for t in emb.texts] == sorted(len(t) for t in emb.texts)
    index = VectorIndex.open(tmp_path)
    for t in triples:
        np.testing.assert_allclose(
            index.vectors([t.id])[0], HashingEmbedder(16).embed([t.verbalize()])[0]
        )


def test_unknown_embedding_model_names_the_choices():
    from kgqa.embed.sentence_transformers import resolve_model

    with pytest.raises(ModelNotFound, match="all-MiniLM-L6-v2"):
        resolve_model("no-such-model")


def test_known_model_resolves_without_loading():
    from kgqa.embed.sentence_transformers import KNOWN_MODELS, SentenceTransformerEmbedder

    known = KNOWN_MODELS["all-MiniLM-L6-v2"]
    try:
        emb = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    except ModelNotFound as e:
        assert known.package in str(e)  # the error names what to install
        return
    assert emb.name == "all-MiniLM-L6-v2" and emb.dim == 384
    assert (emb.path / "modules.json").is_file()
    assert emb._model is None  # nothing loaded until the first embed


def test_status_compares_index_with_model_and_graph(tmp_path):
    from kgqa.index.sync import index_status

    triples = kb(30)
    emb = HashingEmbedder(16)
    missing = index_status(tmp_path, emb, [t.id for t in triples])
    assert missing.manifest is None and "kgqa index" in (missing.problem or "")
    assert (missing.graph_triples, missing.missing, missing.stale) == (30, 30, 0)

    sync_index(tmp_path, emb, triples[:25], progress=False)
    graph_ids = [t.id for t in triples[5:]]  # 5 triples gone from the graph, 5 new ones
    st = index_status(tmp_path, emb, graph_ids)
    assert st.problem is None and st.manifest is not None and st.manifest.count == 25
    assert (st.graph_triples, st.missing, st.stale, st.in_sync) == (25, 5, 5, False)
    assert index_status(tmp_path, emb, [t.id for t in triples[:25]]).in_sync
    other = index_status(tmp_path, HashingEmbedder(16, name="other"), None)
    assert "built with model 'hashing-16'" in (other.problem or "") and not other.in_sync
