"""A deterministic, dependency-free embedder for tests: a signed bag of hashed tokens.

Texts that share words get a positive dot product, so top-K behaves sensibly, and the same
text always gives the same vector on every machine (blake2b, not Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"\w+")


class HashingEmbedder:
    """Implements :class:`kgqa.embed.base.Embedder`; rows are L2-normalized (zero for a text
    without word characters)."""

    def __init__(self, dim: int = 64, name: str | None = None):
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.name = name or f"hashing-{dim}"
        self.calls = 0  # how many texts were embedded: lets tests check what was (re)embedded

    def _bucket(self, token: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        return h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                col, sign = self._bucket(token)
                out[row, col] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        self.calls += len(texts)
        return out
