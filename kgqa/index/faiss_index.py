"""The vector index: one embedded verbalization per triple, keyed by the triple id.

On disk it is a folder with ``index.faiss`` (a FAISS ``IndexIDMap2`` over ``IndexFlatIP``:
exact dot products, ids = triple ids) and ``manifest.json`` (model, dimension, count, KB
fingerprint, times, kgqa version). Both files are replaced atomically, so a crash leaves the
previous consistent state.

Top-K is restricted to the candidate triples of a question (the paper): either a numpy dot
product over the candidates' stored vectors (``method="numpy"``) or a FAISS search with an ID
selector (``method="faiss"``); ``"auto"`` (the default) picks by candidate count, as
``benchmarks/bench_topk.py`` measured.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kgqa.errors import IndexMismatch

if TYPE_CHECKING:
    from kgqa.embed.base import Embedder

log = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
MANIFEST_FILE = "manifest.json"
FORMAT_VERSION = 1
# "numpy": gather the candidates' rows and score them; "faiss": FAISS's flat scan of the
# storage with a bitmap of the candidates' rows; "faiss-ids": FAISS's scan with an ID selector
# over the triple ids (the way before 2026-12-04, kept for the benchmark's baseline).
METHODS = ("numpy", "faiss", "faiss-ids")
# Chosen by benchmarks/bench_topk.py (docs/benchmarks.md, "Top-K"): numpy is faster below
# ~2k candidates; from there the bitmap scan is, by 2x at 10k-20k.
DEFAULT_METHOD = "auto"
AUTO_FAISS_FROM = 2000
REBUILD_HINT = "run `kgqa index --rebuild`"


def kb_fingerprint(ids: Iterable[int] | np.ndarray) -> str:
    """An order-independent digest of a set of triple ids: the same KB gives the same
    fingerprint whatever order its triples were loaded or listed in (duplicates ignored)."""
    arr = np.unique(np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype="<i8"))
    return "sha256:" + hashlib.sha256(arr.tobytes()).hexdigest()[:32]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Manifest:
    """What built the index and over which triples."""

    model: str
    dim: int
    count: int
    kb_fingerprint: str
    created: str
    updated: str
    kgqa_version: str
    metric: str = "inner_product"
    precision: str | None = None
    format_version: int = FORMAT_VERSION

    @classmethod
    def read(cls, path: Path) -> Manifest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
            return cls(**known)
        except (OSError, ValueError, TypeError) as e:
            raise IndexMismatch(f"index manifest {path} is unreadable ({e}); {REBUILD_HINT}") from e

    def write(self, path: Path) -> None:
        _atomic_write_text(path, json.dumps(asdict(self), indent=2) + "\n")


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class TopK:
    """The ``k`` best candidates, best first (ties by ascending id), and the candidate ids the
    index does not hold."""

    hits: tuple[tuple[int, float], ...]
    unknown: tuple[int, ...] = ()


class VectorIndex:
    """A FAISS index of triple vectors keyed by triple id, with its manifest.

    Open an existing one with :meth:`open`, start one with :meth:`create`; :func:`kgqa.index.
    sync.sync_index` keeps it in step with a KB. ``embedder`` is only needed to embed query
    texts passed to :meth:`top_k`.
    """

    def __init__(
        self, index_dir: Path, faiss_index: Any, manifest: Manifest, embedder: Embedder | None
    ):
        self.index_dir = Path(index_dir)
        self._index = faiss_index
        self.manifest = manifest
        self.embedder = embedder
        self._lookup: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._by_row: np.ndarray | None = None

    # -- opening ---------------------------------------------------------------------------
    @staticmethod
    def exists(index_dir: Path) -> bool:
        return (Path(index_dir) / MANIFEST_FILE).is_file()

    @classmethod
    def open(cls, index_dir: Path, embedder: Embedder | None = None) -> VectorIndex:
        """Load the index in ``index_dir``; with an ``embedder``, check that it built it.

        Raises :class:`~kgqa.errors.IndexMismatch` when the index is missing, unreadable, or
        made by another model or dimension.
        """
        import faiss

        index_dir = Path(index_dir)
        if not cls.exists(index_dir):
            raise IndexMismatch(f"no vector index in {index_dir}; run `kgqa index` to build it")
        manifest = Manifest.read(index_dir / MANIFEST_FILE)
        if embedder is not None:
            check_compatible(manifest, embedder, index_dir)
        path = index_dir / INDEX_FILE
        if not path.is_file():
            raise IndexMismatch(f"{path} is missing next to its manifest; {REBUILD_HINT}")
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as e:
            raise IndexMismatch(f"cannot read {path} ({e}); {REBUILD_HINT}") from e
        if index.d != manifest.dim:
            raise IndexMismatch(
                f"{path} holds {index.d}-d vectors but its manifest says {manifest.dim}; "
                f"{REBUILD_HINT}"
            )
        vi = cls(index_dir, index, manifest, embedder)
        if manifest.count != index.ntotal:
            # A crash between the two atomic renames: the index file is the truth.
            log.warning("index manifest count %d != %d vectors; fixing", manifest.count, len(vi))
            vi.manifest = replace(manifest, count=index.ntotal, kb_fingerprint=vi.fingerprint())
        return vi

    @classmethod
    def create(
        cls, index_dir: Path, model: str, dim: int, embedder: Embedder | None = None
    ) -> VectorIndex:
        """A new, empty index in memory (nothing is written until :meth:`save`)."""
        import faiss

        from kgqa import __version__

        now = _now()
        manifest = Manifest(
            model=model,
            dim=dim,
            count=0,
            kb_fingerprint=kb_fingerprint([]),
            created=now,
            updated=now,
            kgqa_version=__version__,
            precision=getattr(embedder, "precision", None),
        )
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        return cls(Path(index_dir), index, manifest, embedder)

    # -- contents --------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sorted ids, row of each sorted id, the stored vectors as an (n, dim) view)."""
        if self._lookup is None:
            import faiss

            n = len(self)
            ids = faiss.vector_to_array(self._index.id_map).astype(np.int64, copy=False)
            order = np.argsort(ids, kind="stable")
            flat: Any = faiss.downcast_index(self._index.index)
            if n:
                # A view of FAISS's own storage: no second copy of the vectors in memory.
                xb = faiss.rev_swig_ptr(flat.get_xb(), n * self.dim).reshape(n, self.dim)
            else:
                xb = np.zeros((0, self.dim), dtype=np.float32)
            self._lookup = (ids[order], order, xb)
        return self._lookup

    @property
    def ids(self) -> np.ndarray:
        """All triple ids in the index, sorted ascending (read-only view)."""
        return self._tables()[0]

    def fingerprint(self) -> str:
        return kb_fingerprint(self.ids)

    def rows(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Storage rows of ``ids`` and a mask of which ids the index holds (rows of unknown
        ids are meaningless)."""
        sorted_ids, order, _ = self._tables()
        query = np.asarray(ids, dtype=np.int64)
        if not len(sorted_ids):
            return np.zeros(len(query), dtype=np.int64), np.zeros(len(query), dtype=bool)
        pos = np.searchsorted(sorted_ids, query)
        np.minimum(pos, len(sorted_ids) - 1, out=pos)
        found = sorted_ids[pos] == query
        return order[pos], found

    def contains(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``ids`` are in the index."""
        return self.rows(ids)[1]

    def vectors(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids`` as a float32 ``(len(ids), dim)`` array.

        Raises :class:`~kgqa.errors.IndexMismatch` if any id is not in the index.
        """
        rows, found = self.rows(ids)
        if not found.all():
            raise self._unknown_error(np.asarray(ids, dtype=np.int64)[~found], len(found))
        return self._tables()[2][rows]

    # -- top-K -----------------------------------------------------------------------------
    def query_vector(self, query: str | np.ndarray) -> np.ndarray:
        if isinstance(query, str):
            if self.embedder is None:
                raise TypeError("this VectorIndex has no embedder: pass a vector, not a text")
            query = self.embedder.embed([query])[0]
        vec = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise IndexMismatch(
                f"query vector has {vec.shape[0]} dimensions, the index {self.dim}; {REBUILD_HINT}"
            )
        return vec

    def search(
        self,
        query: str | np.ndarray,
        candidate_ids: Sequence[int] | np.ndarray,
        k: int = 30,
        method: str | None = None,
    ) -> TopK:
        """The ``k`` candidates with the highest dot product with ``query`` (a text, embedded
        with the index's embedder, or a vector), among ``candidate_ids`` only."""
        method = method or DEFAULT_METHOD
        if method not in (*METHODS, "auto"):
            raise ValueError(f"unknown top-K method {method!r}; valid: auto, {', '.join(METHODS)}")
        vec = self.query_vector(query)
        cand = np.asarray(candidate_ids, dtype=np.int64).reshape(-1)
        if k <= 0 or not len(cand):
            return TopK(())
        rows, found = self.rows(cand)
        unknown: tuple[int, ...] = ()
        if not found.all():
            unknown = tuple(int(i) for i in np.unique(cand[~found]))
            cand, rows = cand[found], rows[found]
        if method == "auto":
            method = "faiss" if len(cand) >= AUTO_FAISS_FROM else "numpy"
        if method == "numpy":
            hits = self._top_numpy(vec, cand, rows, k)
        elif method == "faiss":
            hits = self._top_bitmap(vec, rows, k)
        else:
            hits = self._top_faiss(vec, cand, k)
        return TopK(hits, unknown)

    def top_k(
        self,
        query: str | np.ndarray,
        candidate_ids: Sequence[int] | np.ndarray,
        k: int = 30,
        method: str | None = None,
        strict: bool = True,
    ) -> list[tuple[int, float]]:
        """``[(triple id, score), ...]`` best first, at most ``k``, among ``candidate_ids``.

        Candidate ids the index does not hold mean the index is behind the graph: by default
        that raises :class:`~kgqa.errors.IndexMismatch`; ``strict=False`` logs a warning with
        their count and ranks the rest.
        """
        result = self.search(query, candidate_ids, k, method)
        if result.unknown:
            total = len(np.unique(np.asarray(candidate_ids, dtype=np.int64)))
            if strict:
                raise self._unknown_error(np.asarray(result.unknown), total)
            log.warning(
                "%d of %d candidate triples are not in the vector index %s; ranked the rest",
                len(result.unknown),
                total,
                self.index_dir,
            )
        return list(result.hits)

    def _unknown_error(self, unknown: np.ndarray, total: int) -> IndexMismatch:
        unknown = np.unique(unknown)
        return IndexMismatch(
            f"{len(unknown)} of {total} triples are not in the vector index {self.index_dir} "
            f"(e.g. id {int(unknown[0])}); run `kgqa index` to embed them"
        )

    def _top_numpy(
        self, vec: np.ndarray, cand: np.ndarray, rows: np.ndarray, k: int
    ) -> tuple[tuple[int, float], ...]:
        scores = dot_rows(self._tables()[2], rows, vec)
        m = len(scores)
        sel = np.argpartition(-scores, k - 1)[:k] if k < m else np.arange(m)
        if len(np.unique(cand[sel])) < len(sel):
            # Duplicate candidate ids reached the top: rank the distinct ids instead. (Without
            # duplicates among the k best, those k are also the best k distinct ids.)
            cand, first = np.unique(cand, return_index=True)
            scores = scores[first]
            m = len(scores)
            sel = np.argpartition(-scores, k - 1)[:k] if k < m else np.arange(m)
        best = sel[np.lexsort((cand[sel], -scores[sel]))]
        return tuple((int(cand[i]), float(scores[i])) for i in best)

    def _top_bitmap(
        self, vec: np.ndarray, rows: np.ndarray, k: int
    ) -> tuple[tuple[int, float], ...]:
        """FAISS's flat scan of the stored vectors, scoring only the rows set in a bitmap of
        the candidates' rows: one bit test per stored vector and SIMD dot products in storage
        order, where an ID selector looks every stored id up in a hash set."""
        import faiss

        if not len(rows):
            return ()
        n = len(self)
        mask = np.zeros(n, dtype=bool)
        mask[rows] = True
        bitmap = np.packbits(mask, bitorder="little")  # FAISS reads bit i as (b[i>>3]>>(i&7))&1
        selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
        params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        flat: Any = faiss.downcast_index(self._index.index)
        k = min(k, int(np.count_nonzero(mask)))
        scores, found = flat.search(vec.reshape(1, -1), k, params=params)
        ids = self._row_ids()
        pairs = [
            (int(ids[r]), float(sc)) for r, sc in zip(found[0], scores[0], strict=True) if r >= 0
        ]
        # FAISS breaks ties by storage order; use ascending id like the numpy path.
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return tuple(pairs)

    def _row_ids(self) -> np.ndarray:
        """The triple id of each storage row."""
        sorted_ids, order, _ = self._tables()
        if self._by_row is None:
            by_row = np.empty_like(sorted_ids)
            by_row[order] = sorted_ids
            self._by_row = by_row
        return self._by_row

    def _top_faiss(
        self, vec: np.ndarray, cand: np.ndarray, k: int
    ) -> tuple[tuple[int, float], ...]:
        import faiss

        if not len(cand):
            return ()
        params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(cand))  # type: ignore[call-arg]
        k = min(k, len(cand))
        scores, ids = self._index.search(vec.reshape(1, -1), k, params=params)
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        # FAISS breaks ties by storage order; use ascending id like the numpy path.
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return tuple(pairs)

    # -- changes ---------------------------------------------------------------------------
    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        """Append vectors under ``ids`` (the caller makes sure they are new; see sync)."""
        ids_arr = np.ascontiguousarray(ids, dtype=np.int64)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape != (len(ids_arr), self.dim):
            raise ValueError(
                f"expected vectors of shape ({len(ids_arr)}, {self.dim}), got {vecs.shape}"
            )
        if not len(ids_arr):
            return
        self._index.add_with_ids(vecs, ids_arr)
        self._lookup = self._by_row = None

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Drop ``ids`` (those present); returns how many were removed."""
        import faiss

        ids_arr = np.ascontiguousarray(ids, dtype=np.int64)
        if not len(ids_arr):
            return 0
        removed = int(self._index.remove_ids(faiss.IDSelectorBatch(ids_arr)))
        self._lookup = self._by_row = None
        return removed

    def save(self) -> None:
        """Write index then manifest, each atomically (temporary file, then rename)."""
        import faiss

        self.index_dir.mkdir(parents=True, exist_ok=True)
        path = self.index_dir / INDEX_FILE
        tmp = path.with_name(f".{INDEX_FILE}.tmp-{os.getpid()}")
        faiss.write_index(self._index, str(tmp))
        os.replace(tmp, path)
        self.manifest = replace(
            self.manifest, count=len(self), kb_fingerprint=self.fingerprint(), updated=_now()
        )
        self.manifest.write(self.index_dir / MANIFEST_FILE)


def dot_rows(
    matrix: np.ndarray, rows: np.ndarray, vec: np.ndarray, chunk: int = 2048
) -> np.ndarray:
    """``matrix[rows] @ vec`` without materializing ``matrix[rows]``: the gathered rows are
    scored in cache-sized chunks, and with einsum rather than BLAS, whose threads only add
    overhead for one query vector (and stall when the cores are shared)."""
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), chunk):
        block = matrix[rows[start : start + chunk]]
        np.einsum("ij,j->i", block, vec, out=out[start : start + chunk])
    return out


def check_compatible(manifest: Manifest, embedder: Embedder, index_dir: Path) -> None:
    """Raise :class:`~kgqa.errors.IndexMismatch` if ``embedder`` did not build this index."""
    if manifest.model != embedder.name:
        raise IndexMismatch(
            f"the vector index in {index_dir} was built with model {manifest.model!r}, "
            f"not {embedder.name!r} (settings embed.model, embed.backend); {REBUILD_HINT}"
        )
    if manifest.dim != embedder.dim:
        raise IndexMismatch(
            f"the vector index in {index_dir} holds {manifest.dim}-d vectors, model "
            f"{embedder.name!r} gives {embedder.dim}-d; {REBUILD_HINT}"
        )
