"""The graph retriever: candidates from the graph store, top-K from the vector index of
triples embedded at load time (never per question)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kgqa.graph.expand import ExpandPolicy
from kgqa.types import Candidates, ScoredTriple

if TYPE_CHECKING:
    from kgqa.embed.base import Embedder
    from kgqa.graph.base import GraphReader
    from kgqa.index.faiss_index import VectorIndex


class GraphRetriever:
    """Implements :class:`kgqa.pipeline.base.Retriever` over a graph store and the FAISS
    index."""

    def __init__(
        self, graph: GraphReader, index: VectorIndex, embedder: Embedder, policy: ExpandPolicy
    ):
        self.graph = graph
        self.index = index
        self.embedder = embedder
        self.policy = policy

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        policy = ExpandPolicy(hops, self.policy.hub_cap, self.policy.max_candidates)
        return self.graph.candidates(entities, policy)

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        if not len(candidates) or k <= 0:
            return []
        by_id = {t.id: t for t in candidates.triples}
        vector = self.embedder.embed([text])[0]
        hits = self.index.top_k(vector, list(by_id), k)
        return [ScoredTriple(by_id[i], float(score)) for i, score in hits]
