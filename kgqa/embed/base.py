"""The embedder interface that indexing and top-K selection depend on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors compared by dot product.

    ``name`` is what the vector index records in its manifest: two embedders with the same
    name must produce interchangeable vectors. ``dim`` must be known without loading the model
    so that a mismatched index is detected before any work is done.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        """A float32 array of shape ``(len(texts), dim)``, row i for ``texts[i]``."""
        ...
