"""Loading a KB file into the graph store, streamed: check every line first, then write.

1. **Check** (:func:`check_kb`): the reader streams the whole file once; every bad line is a
   problem with its line number (syntax, sizes and characters Neo4j would refuse, ...). With
   ``on_error="fail"`` (the default) any problem stops the load here, before a connection
   is even needed: nothing is written.
2. **Write** (:func:`load_kb`): the uniqueness constraint first (so every MERGE on a name is
   an index seek), then the reader streams the valid triples again and each batch is one
   write transaction that MERGEs its triples with their entities (RDF into a graph that
   already had entities: two, the entities first, checked against other IRIs). Memory
   holds a few batches, never the file. Parsing the next batch overlaps writing this one
   (a reader thread).
3. **After**: statistics re-sampled, and no triple id may sit on two relationships.

Every write is a MERGE, so a load that stopped (Neo4j down), run again, completes without
duplicates, and a second load writes nothing. A batch that fails is rolled back: the error
says how many triples were written before it and up to which line.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kgqa.errors import GraphUnavailable, KBFormatError, KGQAError
from kgqa.graph.base import GraphWriter

if TYPE_CHECKING:
    from kgqa.loaders.base import KBFile, Problem, RawTriple

OnError = Literal["fail", "skip"]
# Called with the number of triples just written.
Progress = Callable[[int], object]

DEFAULT_BATCH_SIZE = 10_000
# How many bad lines an error message lists before it only gives a count.
MAX_LISTED_PROBLEMS = 20
# How many bad lines a check keeps (the count is always exact): a file of a million bad
# lines must not cost memory per line.
MAX_KEPT_PROBLEMS = 1_000
# The first batch into a graph without relationships (see Neo4jWrites.needs_planner_warmup):
# its plan scans every relationship slot per row, and a database that held a large graph
# before keeps those slots (measured after deleting 1M relationships: 100 rows 5.3 s, 10 rows
# 0.6 s); 10 relationships are enough for the next batch to be planned as an expand (1 is
# not: 53 s for 1,000 rows).
PLANNER_WARMUP_ROWS = 10
# Entity names this load wrote, remembered so that later batches need not MERGE them again:
# a bounded cache (KnownEntities), so memory stays flat; hubs stay in it.
KNOWN_ENTITIES = 100_000
# Batches parsed ahead of the writer.
_QUEUED_BATCHES = 2


# What load_kb needs from a graph store (Neo4jStore and MemoryStore provide it).
KBWriter = GraphWriter


@dataclass(frozen=True)
class KBCheck:
    """What the check pass found: the counts, and the first bad lines."""

    path: str
    lines_read: int
    triples: int
    blank: int
    problem_count: int
    # The first MAX_KEPT_PROBLEMS problems, in file order.
    problems: tuple[Problem, ...]
    labels: int = 0
    left_out: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class LoadReport:
    """What a load did. ``triples_written`` counts relationships that were new; the rest of
    the file's triples were in the graph already or repeated in the file (telling those two
    apart would cost memory per triple)."""

    path: str
    lines_read: int
    triples_in_file: int
    entities_written: int
    triples_written: int
    rejected: int
    blank: int
    seconds: float
    # The rejected lines (line number, reason), when loading with on_error="skip" (the
    # first MAX_KEPT_PROBLEMS of them; ``rejected`` is the exact count).
    problems: tuple[Problem, ...] = ()
    # RDF: label triples used as names; triples left out by design, per reason.
    labels: int = 0
    left_out: tuple[tuple[str, int], ...] = ()

    def summary(self) -> str:
        """One line for the terminal."""
        rdf = f", {_n(self.labels, 'label')}" if self.labels else ""
        rdf += "".join(
            f", {_n(count, 'triple')} with {'an' if reason[0] in 'aeiou' else 'a'} {reason} "
            "left out"
            for reason, count in self.left_out
        )
        return (
            f"{self.path}: {_n(self.lines_read, 'line')} read, {_n(self.triples_in_file, 'triple')} "
            f"({self.triples_written:,} written, {self.triples_in_file - self.triples_written:,} "
            f"already in the graph or repeated), {_n(self.entities_written, 'new entity', 'new entities')}"
            f"{rdf}, {_n(self.rejected, 'line')} rejected, {self.blank:,} blank, "
            f"{self.seconds:.1f} s"
        )


def _n(count: int, word: str, plural: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def describe_problems(
    problems: Sequence[Problem], limit: int = MAX_LISTED_PROBLEMS, total: int | None = None
) -> str:
    """``line N: reason`` for the first ``limit`` problems, then how many more there are."""
    total = len(problems) if total is None else total
    lines = [f"  line {number}: {reason}" for number, reason in problems[:limit]]
    if total > min(limit, len(problems)):
        lines.append(f"  ... and {total - min(limit, len(problems)):,} more")
    return "\n".join(lines)


def check_kb(kb: KBFile, on_error: OnError = "fail") -> KBCheck:
    """Read ``kb`` once and say what it holds. Raise :class:`KBFormatError` listing the bad
    lines, unless ``on_error == "skip"``; raise it too when there is no valid triple at all
    (an empty file is a mistake)."""
    if on_error not in ("fail", "skip"):
        raise ValueError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    kept: list[Problem] = []
    for problem in kb.check():
        if len(kept) < MAX_KEPT_PROBLEMS:
            kept.append(problem)
    stats = kb.stats
    found = KBCheck(
        path=kb.path,
        lines_read=stats.lines_read,
        triples=stats.triples,
        blank=stats.blank_lines,
        problem_count=stats.problems,
        problems=tuple(kept),
        labels=stats.labels,
        left_out=tuple(sorted(stats.left_out.items())),
    )
    count = found.problem_count
    if count == 1 and on_error == "fail":
        ((number, reason),) = kept
        raise KBFormatError(
            f"{kb.path}: line {number}: {reason}; nothing was written (fix the line, or use "
            f"--on-error skip to load the valid lines)",
            problems=kept,
        )
    if count and on_error == "fail":
        raise KBFormatError(
            f"{kb.path}: {count:,} bad lines, nothing was written "
            f"(use --on-error skip to load the valid lines):\n"
            f"{describe_problems(kept, total=count)}",
            problems=kept,
        )
    if not found.triples:
        bad = f" ({count:,} bad lines)" if count else ""
        raise KBFormatError(f"{kb.path}: no triples to load{bad}", kept)
    return found


def load_kb(
    store: KBWriter,
    kb: KBFile,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_error: OnError = "fail",
    progress: Progress | None = None,
    checked: KBCheck | None = None,
    overlap: bool = True,
) -> LoadReport:
    """Write ``kb`` into ``store``. With bad lines and ``on_error="fail"`` (the default),
    raise :class:`KBFormatError` before writing anything; with ``"skip"``, load the valid
    triples and report the rest. After the writes, check that no triple id sits on two
    relationships (a collision with a triple loaded earlier) and raise if one does.

    ``checked``: the result of :func:`check_kb` on this ``kb`` (then the file is not read a
    second time to check it). ``progress`` is called with the number of triples of each
    batch written; the total is ``checked.triples``. ``overlap=False`` parses and writes in
    turn (for the benchmark).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    started = time.perf_counter()
    found = checked if checked is not None else check_kb(kb, on_error)
    # Into an empty graph no name can belong to an IRI loaded before.
    fresh = store.entity_count() == 0
    store.ensure_schema()
    first = PLANNER_WARMUP_ROWS if store.needs_planner_warmup() else batch_size
    batches = _batches(kb.stream(), batch_size, first)

    entities = triples = 0
    written_through = 0  # the last line of the last batch written
    known = KnownEntities()
    for batch in _ahead(batches) if overlap else batches:
        try:
            result = store.write_batch(batch, known, check_names=not fresh)
        except KBFormatError as e:
            raise KBFormatError(
                f"{kb.path}: {describe_problems(e.problems, 3).strip()}; two IRIs must not "
                f"become one entity: the load stopped, {_left(triples, entities, found.triples, written_through)}; "
                f"load the file into an empty graph (or one without these names)",
                problems=e.problems,
            ) from e
        except KGQAError as e:
            kind = GraphUnavailable if isinstance(e, GraphUnavailable) else KGQAError
            # RDF into a graph that had entities: entities and triples are two transactions.
            whole = fresh or batch[0].relation_iri is None
            raise kind(
                f"{kb.path}: the load stopped at line {batch[0].line:,}: {e}; "
                f"{_left(triples, entities, found.triples, written_through, whole)}. Run the "
                f"same `kgqa load` again to complete it (writes are idempotent)"
            ) from e
        entities += result.entities
        triples += result.triples
        written_through = batch[-1].line
        if not fresh:  # only the check of names against the graph's IRIs reads it
            known.add(batch)
        if progress:
            progress(len(batch))

    # The planner's statistics of the name index may still describe an empty graph (until
    # Neo4j's background sampler runs): the next queries would scan the index, not seek it.
    # Re-sampling is only scheduled here, but takes milliseconds.
    store.refresh_statistics()
    duplicates = store.duplicate_triple_ids(limit=MAX_LISTED_PROBLEMS)
    if duplicates:
        listed = "\n".join(
            f"  id {d.id} on {d.copies} relationships, e.g. "
            + "; ".join(f"({s}, {r}, {o})" for s, r, o in d.examples)
            for d in duplicates
        )
        raise KBFormatError(
            f"{kb.path}: triple ids collide in the graph (clear it and reload, or report "
            f"the triples):\n{listed}"
        )

    return LoadReport(
        path=kb.path,
        lines_read=found.lines_read,
        triples_in_file=found.triples,
        entities_written=entities,
        triples_written=triples,
        rejected=found.problem_count,
        blank=found.blank,
        seconds=time.perf_counter() - started,
        problems=found.problems,
        labels=found.labels,
        left_out=found.left_out,
    )


class KnownEntities(Mapping[str, "str | None"]):
    """Entity names (-> IRI) this load has written, the most recent ones only: two
    generations of at most ``limit // 2`` names each, so memory stays bounded and lookups
    and evictions cost O(1); a name seen again moves to the newer generation."""

    def __init__(self, limit: int = KNOWN_ENTITIES):
        self._half = max(1, limit // 2)
        self._new: dict[str, str | None] = {}
        self._old: dict[str, str | None] = {}

    def __getitem__(self, name: str) -> str | None:
        try:
            return self._new[name]
        except KeyError:
            return self._old[name]

    def __contains__(self, name: object) -> bool:
        return name in self._new or name in self._old

    def __iter__(self) -> Iterator[str]:
        yield from self._new
        yield from (n for n in self._old if n not in self._new)

    def __len__(self) -> int:
        return len(self._new) + sum(1 for n in self._old if n not in self._new)

    def add(self, batch: Sequence[RawTriple]) -> None:
        """Remember the entities of a batch just written."""
        new = self._new
        for t in batch:
            for name, iri in ((t.subject, t.subject_iri), (t.object, t.object_iri)):
                if new.get(name) is None:
                    new[name] = iri
            if len(new) >= self._half:
                self._old, self._new = new, {}
                new = self._new


def _left(triples: int, entities: int, total: int, through: int, whole: bool = True) -> str:
    """What a stopped load left; ``whole``: the failed batch was one transaction."""
    written = (
        f"written before it: {triples:,} new triples and {entities:,} new entities, the "
        f"triples of the file's lines up to line {through:,} (of {total:,} triples)"
        if through
        else "no triple of this file was written"
    )
    if whole:
        return f"{written}; the failed batch was rolled back"
    return f"{written}; of the failed batch, at most its entities were written"


def _batches(triples: Iterator[RawTriple], size: int, first: int) -> Iterator[list[RawTriple]]:
    batch: list[RawTriple] = []
    limit = min(first, size)
    for t in triples:
        batch.append(t)
        if len(batch) >= limit:
            yield batch
            batch, limit = [], size
    if batch:
        yield batch


_DONE = object()


def _ahead(batches: Iterator[list[RawTriple]]) -> Iterator[list[RawTriple]]:
    """``batches``, read by a thread up to ``_QUEUED_BATCHES`` ahead of the caller, so that
    parsing the next batch (Python) overlaps writing this one (Neo4j, waiting on a socket).
    Exceptions of the reader reach the caller; stopping early stops the reader."""
    ready: queue.Queue[object] = queue.Queue(maxsize=_QUEUED_BATCHES)
    stop = threading.Event()

    def read() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        ready.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put(_DONE)
        except BaseException as e:  # handed to the caller, raised there
            ready.put(e)

    reader = threading.Thread(target=read, name="kgqa-load-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        reader.join(timeout=5)
