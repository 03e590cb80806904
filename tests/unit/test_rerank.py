"""The retriever's rerank (``embed.backend = static``): the index's vectors shortlist, the full
model picks the top-K among the shortlist, and each triple is embedded by it once per process."""

from __future__ import annotations

import numpy as np
import pytest

from kgqa.embed.hashing import HashingEmbedder
from kgqa.graph.expand import ExpandPolicy
from kgqa.graph.memory_store import MemoryStore
from kgqa.index.sync import sync_index
from kgqa.loaders.base import triple_id
from kgqa.pipeline.retrieve import GraphRetriever
from kgqa.types import Triple

pytestmark = pytest.mark.unit

QUESTION = "Heat directed by whom"


class Counting(HashingEmbedder):
    """A hashing embedder (another ``dim``: another vector space) that keeps what it embedded."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim, name=f"full-{dim}")
        self.texts: list[str] = []

    def embed(self, texts, batch_size=None, progress=False):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts, batch_size, progress)


def graph() -> MemoryStore:
    rows = [("Heat", "directed_by", "Michael Mann"), ("Heat", "written_by", "Michael Mann")]
    rows += [("Heat", "starred_actors", f"Actor {i}") for i in range(30)]
    rows += [("Heat", "has_tags", f"tag {i}") for i in range(10)]
    return MemoryStore(Triple(triple_id(*r), *r) for r in rows)


def make(tmp_path, depth: int, cache_size: int = 1000) -> tuple[GraphRetriever, Counting]:
    store, shortlist, full = graph(), HashingEmbedder(16, name="static-16"), Counting(48)
    sync_index(tmp_path, shortlist, store.all_triples(), False)
    from kgqa.index.faiss_index import VectorIndex

    index = VectorIndex.open(tmp_path, shortlist)
    policy = ExpandPolicy(1, 500, 20000)
    r = GraphRetriever(store, index, shortlist, policy, full, depth, cache_size=cache_size)
    return r, full


def exact(full: HashingEmbedder, triples: list[Triple], k: int) -> list[tuple[str, float]]:
    """The full model's own top-K over ``triples`` (what a full-model index would give)."""
    scores = full.embed([t.verbalize() for t in triples]) @ full.embed([QUESTION])[0]
    best = sorted(range(len(triples)), key=lambda i: -scores[i])[:k]
    return [(triples[i].verbalize(), round(float(scores[i]), 5)) for i in best]


def test_a_deep_enough_shortlist_gives_the_full_models_top_k(tmp_path):
    r, full = make(tmp_path, depth=100)
    cand = r.candidates(["Heat"], 1)
    got = [(s.triple.verbalize(), round(s.score, 5)) for s in r.top_k(QUESTION, cand, 5)]
    want = exact(HashingEmbedder(48), list(cand.triples), 5)
    assert [score for _, score in got] == [score for _, score in want]  # ties may swap texts
    assert got[0] == want[0] == ("(Heat, directed by, Michael Mann)", want[0][1])


def test_the_full_model_ranks_only_the_shortlist(tmp_path):
    r, full = make(tmp_path, depth=8)
    cand = r.candidates(["Heat"], 1)
    shortlist = {s.triple.id for s in GraphRetriever(
        r.graph, r.index, r.embedder, r.policy).top_k(QUESTION, cand, 8)}  # fmt: skip
    got = r.top_k(QUESTION, cand, 5)
    assert len(got) == 5 and {s.triple.id for s in got} <= shortlist
    assert len(full.texts) == 1 + 8  # the question and the 8 shortlisted triples
    assert got == sorted(got, key=lambda s: -s.score)
    # a K past the depth shortlists K
    assert len(r.top_k(QUESTION, cand, 12)) == 12


def test_each_triple_is_embedded_by_the_full_model_once_and_the_cache_is_bounded(tmp_path):
    r, full = make(tmp_path, depth=20)
    cand = r.candidates(["Heat"], 1)
    first = r.top_k(QUESTION, cand, 5)
    embedded = len(full.texts)
    assert r.top_k(QUESTION, cand, 5) == first
    assert len(full.texts) == embedded + 1  # only the question again
    small, full_small = make(tmp_path / "small", depth=20, cache_size=7)
    assert small.top_k(QUESTION, cand, 5) == first  # a cache smaller than the shortlist
    assert len(small._vectors) == 7


def test_depth_zero_is_the_index_alone(tmp_path):
    r, full = make(tmp_path, depth=0)
    cand = r.candidates(["Heat"], 1)
    plain = GraphRetriever(r.graph, r.index, r.embedder, r.policy)
    assert r.top_k(QUESTION, cand, 5) == plain.top_k(QUESTION, cand, 5)
    assert full.texts == [] and r.reranker is None
    assert r.top_k(QUESTION, cand, 0) == [] and np.isfinite(plain.top_k(QUESTION, cand, 1)[0].score)
