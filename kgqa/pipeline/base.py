"""Interfaces between the pipeline and the parts below it.

The pipeline receives these through its constructor; nothing below the pipeline imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kgqa.types import Answer, Candidates, ScoredTriple


class Retriever(Protocol):
    """Graph retrieval (candidates around the topic entities) and top-K selection."""

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        """Every triple within ``hops`` of ``entities``, bidirectional, grouped by hop.

        Raises :class:`kgqa.errors.EntityNotFound` for an entity that is not in the graph."""
        ...

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        """The ``k`` candidates whose embedded verbalization has the highest dot product
        with the embedded ``text``, best first."""
        ...


class QAPipeline(Protocol):
    """What ``kgqa ask`` and ``kgqa eval`` call."""

    mode: str

    def answer(self, question: str, entities: Sequence[str]) -> Answer: ...
