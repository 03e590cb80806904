"""The graph retriever: candidates from the graph store, top-K from the vector index of
triples embedded at load time (never per question).

With a ``reranker`` (``embed.backend = static`` or ``aligned``), the index's vectors only
shortlist: the top ``rerank_depth`` candidates by the index are scored again by the full
model, the question and those triples' texts alike, and the top-K come from that score. The full model's vectors of
reranked triples are kept in a bounded per-process cache, so a triple is embedded once per
process however many questions shortlist it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kgqa.graph.expand import ExpandPolicy
from kgqa.types import Candidates, ScoredTriple, Triple

if TYPE_CHECKING:
    from kgqa.embed.base import Embedder
    from kgqa.graph.base import GraphReader
    from kgqa.index.faiss_index import VectorIndex

# Full-model vectors of reranked triples kept per process: 50,000 x 384 float32 = 77 MB.
RERANK_CACHE = 50_000


class GraphRetriever:
    """Implements :class:`kgqa.pipeline.base.Retriever` over a graph store and the FAISS
    index."""

    def __init__(
        self,
        graph: GraphReader,
        index: VectorIndex,
        embedder: Embedder,
        policy: ExpandPolicy,
        reranker: Embedder | None = None,
        rerank_depth: int = 0,
        cache_size: int = RERANK_CACHE,
    ):
        self.graph = graph
        self.index = index
        self.embedder = embedder
        self.policy = policy
        self.reranker = reranker if rerank_depth > 0 else None
        self.rerank_depth = rerank_depth
        self._cache_size = cache_size
        self._vectors: OrderedDict[int, np.ndarray] = OrderedDict()

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        policy = ExpandPolicy(hops, self.policy.hub_cap, self.policy.max_candidates)
        return self.graph.candidates(entities, policy)

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        if not len(candidates) or k <= 0:
            return []
        by_id = {t.id: t for t in candidates.triples}
        vector = self.embedder.embed([text])[0]
        if self.reranker is None:
            hits = self.index.top_k(vector, list(by_id), k)
            return [ScoredTriple(by_id[i], float(score)) for i, score in hits]
        shortlist = [i for i, _ in self.index.top_k(vector, list(by_id), max(k, self.rerank_depth))]
        if not shortlist:
            return []
        question = vector if self.reranker is self.embedder else self.reranker.embed([text])[0]
        scores = self._full_vectors([by_id[i] for i in shortlist]) @ question
        # Ties keep the index's order (stable sort).
        best = np.argsort(-scores, kind="stable")[:k]
        return [ScoredTriple(by_id[shortlist[j]], float(scores[j])) for j in best]

    def _full_vectors(self, triples: list[Triple]) -> np.ndarray:
        """The reranker's vectors of ``triples`` (rows in order), embedding only those the
        cache lacks; the least recently used fall out past the cache's size."""
        assert self.reranker is not None
        cache = self._vectors
        new = [t for t in triples if t.id not in cache]
        if new:
            for t, v in zip(new, self.reranker.embed([t.verbalize() for t in new]), strict=True):
                cache[t.id] = v
        out = np.stack([cache[t.id] for t in triples])
        for t in triples:
            cache.move_to_end(t.id)
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
        return out
