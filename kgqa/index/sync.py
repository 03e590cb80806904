"""Keep the vector index in step with a KB: embed each triple once, only if it is new.

Triples are identified by their content-derived id, so reloading the same KB embeds nothing
and adding triples embeds only the added ones. Progress is saved every ``save_every`` vectors
(and when interrupted), so a long first embedding resumes where it stopped.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kgqa.index.faiss_index import Manifest, VectorIndex, check_compatible
from kgqa.types import Triple

if TYPE_CHECKING:
    from kgqa.embed.base import Embedder
    from kgqa.graph.base import GraphReader

SAVE_EVERY = 20_000


@dataclass(frozen=True)
class SyncReport:
    """What one sync did. ``total`` is the number of vectors in the index afterwards."""

    embedded: int
    already_present: int
    total: int
    seconds: float
    removed: int = 0
    index_dir: str = ""
    model: str = ""

    @property
    def rate(self) -> float:
        """Triples embedded per second (0 when nothing was embedded)."""
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else 0.0


def sync_index(
    index_dir: Path,
    embedder: Embedder,
    triples: Sequence[Triple],
    progress: bool = True,
    *,
    prune: bool = False,
    save_every: int = SAVE_EVERY,
    batch_size: int | None = None,
) -> SyncReport:
    """Embed the triples whose id is not yet in the index at ``index_dir`` and save it.

    ``prune=True`` also removes vectors of triples not in ``triples`` (use it only when
    ``triples`` is the whole KB). Raises :class:`~kgqa.errors.IndexMismatch` if the existing
    index was built with another model or dimension.
    """
    t0 = time.perf_counter()
    index_dir = Path(index_dir)
    if VectorIndex.exists(index_dir):
        index = VectorIndex.open(index_dir, embedder)
        changed = False
    else:
        index = VectorIndex.create(index_dir, embedder.name, embedder.dim, embedder)
        changed = True  # write even an empty index, so that it exists afterwards

    unique = list({t.id: t for t in triples}.values())
    ids = np.fromiter((t.id for t in unique), dtype=np.int64, count=len(unique))
    present = index.contains(ids)
    new = [t for t, p in zip(unique, present, strict=True) if not p]

    removed = 0
    if prune and len(index):
        stale = index.ids[~np.isin(index.ids, ids)]
        removed = index.remove(stale)
        changed = changed or removed > 0

    # Sort by text length across the whole batch of new triples (not only per call), so each
    # model batch holds strings of similar length and pads little.
    texts = [t.verbalize() for t in new]
    # An embedder fitted to the KB (kgqa.embed.static.AlignedStaticEmbedder) fits on an
    # empty index's triples, or reads the fit the index's vectors were made with.
    prepare = getattr(embedder, "prepare_index", None)
    if prepare is not None and texts:
        prepare(index_dir, texts, len(index))
    order = sorted(range(len(new)), key=lambda i: len(texts[i]))
    # Pieces of a few model batches: fine-grained progress, and little lost on a crash.
    piece = max(256, 4 * int(batch_size or getattr(embedder, "batch_size", None) or 256))
    unsaved = 0
    from tqdm import tqdm

    bar = tqdm(
        total=len(new),
        unit="triple",
        desc="embedding triples",
        file=sys.stderr,
        disable=not progress or not new,
        smoothing=0.05,
    )
    try:
        for start in range(0, len(order), piece):
            rows = order[start : start + piece]
            vectors = embedder.embed([texts[i] for i in rows], batch_size=batch_size)
            index.add([new[i].id for i in rows], vectors)
            bar.update(len(rows))
            unsaved += len(rows)
            if unsaved >= save_every:
                index.save()
                unsaved = 0
                changed = False
    finally:
        bar.close()
        # Also on Ctrl-C or an embedding failure: keep what is done (every added piece is
        # complete), so the next sync only embeds the rest.
        if unsaved or changed:
            index.save()
    return SyncReport(
        embedded=len(new),
        already_present=len(unique) - len(new),
        total=len(index),
        seconds=time.perf_counter() - t0,
        removed=removed,
        index_dir=str(index_dir),
        model=embedder.name,
    )


def rebuild_index(
    index_dir: Path, embedder: Embedder, triples: Sequence[Triple], progress: bool = True
) -> SyncReport:
    """Drop the index at ``index_dir`` (whatever model built it) and embed all ``triples``."""
    index_dir = Path(index_dir)
    for name in ("manifest.json", "index.faiss"):  # manifest first: no manifest = no index
        (index_dir / name).unlink(missing_ok=True)
    return sync_index(index_dir, embedder, triples, progress)


def sync_with_graph(
    graph: GraphReader,
    index_dir: Path,
    embedder: Embedder,
    *,
    rebuild: bool = False,
    progress: bool = True,
) -> SyncReport:
    """Make the index hold exactly the graph's triples: embed the missing ones, drop vectors
    of triples no longer in the graph; ``rebuild`` starts from an empty index."""
    triples = graph.all_triples()
    if rebuild:
        return rebuild_index(index_dir, embedder, triples, progress)
    return sync_index(index_dir, embedder, triples, progress, prune=True)


@dataclass(frozen=True)
class IndexStatus:
    """The index's manifest and how it compares with the configured model and the graph
    (graph fields are None when the graph was not consulted)."""

    index_dir: str
    configured_model: str
    manifest: Manifest | None
    problem: str | None = None  # why the index cannot be used as is
    graph_triples: int | None = None
    missing: int | None = None  # in the graph, not in the index
    stale: int | None = None  # in the index, not in the graph

    @property
    def in_sync(self) -> bool:
        return self.problem is None and self.missing == 0 and self.stale == 0


def index_status(
    index_dir: Path, embedder: Embedder, graph_ids: Sequence[int] | None = None
) -> IndexStatus:
    """Compare the index in ``index_dir`` with ``embedder`` and, if given, the graph's triple
    ids. Never raises for a missing or mismatched index: that is what it reports."""
    from kgqa.errors import IndexMismatch

    index_dir = Path(index_dir)
    base = IndexStatus(str(index_dir), embedder.name, None)
    try:
        index = VectorIndex.open(index_dir)
    except IndexMismatch as e:
        return _with_graph(base, str(e), None, graph_ids)
    problem = None
    try:
        check_compatible(index.manifest, embedder, index_dir)
    except IndexMismatch as e:
        problem = str(e)
    status = IndexStatus(str(index_dir), embedder.name, index.manifest, problem)
    return _with_graph(status, problem, index.ids, graph_ids)


def _with_graph(
    status: IndexStatus,
    problem: str | None,
    index_ids: np.ndarray | None,
    graph_ids: Sequence[int] | None,
) -> IndexStatus:
    from dataclasses import replace

    if graph_ids is None:
        return replace(status, problem=problem)
    graph = np.unique(np.asarray(graph_ids, dtype=np.int64))
    held = index_ids if index_ids is not None else np.zeros(0, dtype=np.int64)
    return replace(
        status,
        problem=problem,
        graph_triples=len(graph),
        missing=int((~np.isin(graph, held)).sum()),
        stale=int((~np.isin(held, graph)).sum()),
    )
