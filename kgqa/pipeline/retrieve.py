"""The graph retriever: candidates from Neo4j (kgqa.graph.expand), top-K from the vector
index of triples embedded at load time (never per question)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kgqa.graph.expand import ExpandPolicy, expand
from kgqa.types import Candidates, ScoredTriple

if TYPE_CHECKING:
    import neo4j


class GraphRetriever:
    """Implements :class:`kgqa.pipeline.base.Retriever` over Neo4j and the FAISS index."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str,
        index: Any,
        embedder: Any,
        policy: ExpandPolicy,
    ):
        self.driver = driver
        self.database = database
        self.index = index
        self.embedder = embedder
        self.policy = policy

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        policy = ExpandPolicy(hops, self.policy.hub_cap, self.policy.max_candidates)
        return expand(self.driver, self.database, entities, policy)

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        if not len(candidates) or k <= 0:
            return []
        by_id = {t.id: t for t in candidates.triples}
        vector = self.embedder.embed([text])[0]
        hits = self.index.top_k(vector, list(by_id), k)
        return [ScoredTriple(by_id[i], float(score)) for i, score in hits]
