"""A static embedding model distilled by kgqa from its own sentence-transformers model.

Model2Vec's idea (Tulkens & van Dongen, 2024), made here without its package: every token of
the model's vocabulary is run through the model once (``[CLS] token [SEP]``, the model's own
pooling and normalisation, through :mod:`kgqa.embed.onnx`), each token's vector is weighted
down by how frequent the token is (SIF weights, frequency from Zipf's law over the vocabulary's
order), and a text's vector is the normalised mean of its tokens' vectors. Distilling MiniLM's
30,522 tokens takes ~11 s on 2 cores, once per model (``<cache_dir>/embed-static/``); after
that, embedding is a table look-up: ~100x the float32 model's throughput, in another vector
space (its own index: the embedder's ``name`` is ``<model>+static``). Retrieval quality
against MiniLM's: docs/benchmarks.md, "Embedding backends".
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgqa.embed.onnx import OnnxEmbedder, _model_key, _slug
from kgqa.errors import ModelNotFound

log = logging.getLogger(__name__)

# Model2Vec's default: weight = a / (a + p(token)).
SIF_COEFFICIENT = 1e-4
SUFFIX = "+static"


class StaticEmbedder:
    """Implements :class:`kgqa.embed.base.Embedder` with a distilled token table."""

    precision = "float32"

    def __init__(self, model: str, cache_dir: Path, batch_size: int = 4096):
        self._source = OnnxEmbedder(model, cache_dir)
        self.name = self._source.name + SUFFIX
        self.path = self._source.path
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None

    @property
    def dim(self) -> int:
        return self._source.dim

    @property
    def source(self) -> OnnxEmbedder:
        """The full model the table was distilled from (``embed.model`` through ONNX Runtime)."""
        return self._source

    @property
    def table_path(self) -> Path:
        folder = f"{_slug(self._source.name)}-{_model_key(self.path)}"
        return self.cache_dir / "embed-static" / folder / "tokens.npy"

    def warm_up(self) -> None:
        """Distil the table if this cache has none (~11 s, once), then read it."""
        if self._table is not None:
            return
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise ModelNotFound("a static embedder needs tokenizers: pip install tokenizers") from e
        tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        path = self.table_path
        if not path.is_file():
            distill(self._source, path)
        try:
            table = np.load(path)
        except (OSError, ValueError) as e:
            raise ModelNotFound(f"cannot read {path} ({e}); delete it to distil again") from e
        if table.ndim != 2 or table.shape[0] < tokenizer.get_vocab_size():
            raise ModelNotFound(f"{path} does not fit the tokenizer; delete it to distil again")
        self._table = table.astype(np.float32, copy=False)
        self._tokenizer = tokenizer

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        self.warm_up()
        assert self._table is not None
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = batch_size or self.batch_size
        for start in range(0, len(texts), step):
            batch = list(texts[start : start + step])
            encoded = self._tokenizer.encode_batch(batch, add_special_tokens=False)
            lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(batch))
            filled = np.flatnonzero(lengths)
            if not len(filled):
                continue  # empty texts: zero vectors
            ids = np.concatenate([np.asarray(encoded[i].ids, dtype=np.int64) for i in filled])
            offsets = np.concatenate([[0], np.cumsum(lengths[filled])[:-1]])
            sums = np.add.reduceat(self._table[ids], offsets, axis=0)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            out[start + filled] = sums / np.maximum(norms, 1e-12)
        return out


def distill(source: OnnxEmbedder, out: Path) -> None:
    """Every vocabulary token through ``source`` as ``[CLS] token [SEP]``, SIF-weighted; saved
    atomically to ``out`` (float32, vocabulary x dim)."""
    source.warm_up()
    tokenizer = source._tokenizer
    size = tokenizer.get_vocab_size()
    special = tokenizer.encode("", add_special_tokens=True).ids  # e.g. [CLS] [SEP]
    if len(special) != 2:
        raise ModelNotFound(
            f"{source.path}: its tokenizer does not frame a text with two special tokens; "
            "a static model is not distilled for it (set embed.backend = auto)"
        )
    log.warning("distilling a static embedding model from %s, once: %s", source.name, out)
    started = time.perf_counter()
    table = np.empty((size, source.dim), dtype=np.float32)
    step = 1024
    for begin in range(0, size, step):
        ids = np.arange(begin, min(size, begin + step), dtype=np.int64)
        frame = np.stack(
            [np.full_like(ids, special[0]), ids, np.full_like(ids, special[1])], axis=1
        )
        feed = {
            "input_ids": frame,
            "attention_mask": np.ones_like(frame),
            "token_type_ids": np.zeros_like(frame),
        }
        table[begin : begin + len(ids)] = source._session.run(None, feed)[0]
    # Zipf's law over the vocabulary's order (frequent tokens first, as in BERT's and BPE
    # vocabularies): p(rank) ~ 1 / rank; frequent tokens say little about a text.
    inverse_rank = 1.0 / np.arange(2, size + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    table *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability)).astype(np.float32)[:, None]
    _save_atomically(out, lambda tmp: np.save(tmp, table))
    log.warning("distilled %d tokens in %.1f s", size, time.perf_counter() - started)


ALIGNED_SUFFIX = "+aligned"
ALIGN_FILE = "aligned-map.npz"
# Triples of the KB the map is fitted on, and the ridge term of the fit. On MetaQA dev
# (docs/benchmarks.md, "Static vectors aligned to the model") 2,000 gave a top-30 overlap
# of 0.79 / 0.93 (1-/2-hop questions) with the model's own ranking, 5,000 0.80 / 0.94,
# 20,000 0.81 / 0.94; the ridge term between 1e-3 and 1e-1 moved it by less than 0.01. The
# model embeds the sample at ~3 ms a triple on 2 cores: 3,000 cost ~9 s once per index.
ALIGN_SAMPLE = 3000
ALIGN_RIDGE = 1e-2


class AlignedStaticEmbedder(StaticEmbedder):
    """The static table mapped into ``embed.model``'s own vector space: a linear map fitted
    by least squares (ridge) from the static vectors of a seeded sample of the KB's own
    triples to the model's vectors of the same texts, once, when the index is first built,
    and kept in the index folder (``aligned-map.npz``). Triples embed at the static speed;
    questions are embedded by the model itself (:attr:`source`), so the question side loses
    nothing and graph mode is unchanged. Nothing about the KB is assumed: the sample is drawn
    from whatever triples the index is built from."""

    def __init__(self, model: str, cache_dir: Path, batch_size: int = 4096):
        super().__init__(model, cache_dir, batch_size)
        self.name = self._source.name + ALIGNED_SUFFIX
        self._map: np.ndarray | None = None

    def prepare_index(self, index_dir: Path, texts: Sequence[str], held: int) -> None:
        """Before ``texts`` are embedded into the index at ``index_dir`` holding ``held``
        vectors: an empty index gets a new map fitted on ``texts`` (saved there first); an
        index with vectors keeps the map they were made with."""
        path = Path(index_dir) / ALIGN_FILE
        if held == 0:
            self._map = self._fit(texts)
            _save_map(path, self._map, self._source.name)
            return
        self._map = _load_map(path, self._source.name, self.dim)

    def _fit(self, texts: Sequence[str]) -> np.ndarray:
        import random

        sample = sorted(set(texts))
        if len(sample) > ALIGN_SAMPLE:
            sample = random.Random(0).sample(sample, ALIGN_SAMPLE)
        if not sample:
            return np.eye(self.dim, dtype=np.float32)
        started = time.perf_counter()
        target = self._source.embed(sample)
        x = super().embed(sample)
        gram = x.T.astype(np.float64) @ x + ALIGN_RIDGE * np.eye(self.dim)
        mapping = np.linalg.solve(gram, x.T.astype(np.float64) @ target).astype(np.float32)
        log.warning(
            "aligned the static vectors to %s on %d of the KB's triples in %.1f s",
            self._source.name,
            len(sample),
            time.perf_counter() - started,
        )
        return mapping

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        if self._map is None:
            raise ModelNotFound(
                f"{self.name} embeds only the triples of its index (kgqa index); "
                "questions are embedded by the model itself"
            )
        vectors = super().embed(texts, batch_size, progress) @ self._map
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


def _save_atomically(out: Path, write: Callable[[Path], None]) -> None:
    """``write`` into a temporary file beside ``out`` (same suffix), renamed onto ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _save_map(path: Path, mapping: np.ndarray, source: str) -> None:
    _save_atomically(path, lambda tmp: np.savez(tmp, map=mapping, source=np.array(source)))


def _load_map(path: Path, source: str, dim: int) -> np.ndarray:
    from kgqa.errors import IndexMismatch
    from kgqa.index.faiss_index import REBUILD_HINT as hint

    try:
        with np.load(path) as saved:
            mapping, made_for = saved["map"], str(saved["source"])
    except FileNotFoundError:
        raise IndexMismatch(
            f"the vector index in {path.parent} has no {ALIGN_FILE} for its aligned static "
            f"vectors; {hint}"
        ) from None
    except (OSError, ValueError, KeyError) as e:
        raise IndexMismatch(f"cannot read {path} ({e}); {hint}") from e
    if made_for != source or mapping.shape != (dim, dim):
        raise IndexMismatch(f"{path} was not fitted for {source} ({dim}-d); {hint}")
    return mapping.astype(np.float32, copy=False)
