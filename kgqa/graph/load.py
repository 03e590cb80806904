"""Loading a parsed KB into the graph store: validate first, then batched idempotent writes.

Order matters: the uniqueness constraint first (so every MERGE on a name is an index seek),
then all entity nodes, then the relationships. Every write is a MERGE, so a load that was
interrupted, run again, completes without duplicates, and a second load changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from kgqa.errors import KBFormatError

if TYPE_CHECKING:
    from kgqa.graph.neo4j_store import DuplicateId
    from kgqa.loaders.base import ParsedKB, RawTriple

T = TypeVar("T")
OnError = Literal["fail", "skip"]
# Called with the number of rows (entities or triples) just written.
Progress = Callable[[int], object]

DEFAULT_BATCH_SIZE = 10_000
# How many bad lines an error message lists before it only gives a count.
MAX_LISTED_PROBLEMS = 20


class KBWriter(Protocol):
    """What :func:`load_kb` needs from a graph store (``Neo4jStore`` provides it)."""

    def ensure_schema(self) -> None: ...

    def merge_entities(self, names: Sequence[str]) -> int: ...

    def merge_triples(self, triples: Sequence[RawTriple]) -> int: ...

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]: ...

    def refresh_statistics(self) -> None: ...


@dataclass(frozen=True)
class LoadReport:
    """What a load did. ``triples_written`` counts relationships that were new."""

    path: str
    lines_read: int
    triples_in_file: int
    entities_in_file: int
    entities_written: int
    triples_written: int
    duplicates: int
    rejected: int
    blank: int
    seconds: float
    # The rejected lines (line number, reason), when loading with on_error="skip".
    problems: tuple[tuple[int, str], ...] = ()

    def summary(self) -> str:
        """One line for the terminal."""
        return (
            f"{self.path}: {self.lines_read:,} lines read, {self.triples_in_file:,} triples "
            f"({self.triples_written:,} written, {self.triples_in_file - self.triples_written:,} "
            f"already present), {self.entities_written:,} new entities, "
            f"{self.duplicates:,} duplicate lines, {self.rejected:,} lines rejected, "
            f"{self.blank:,} blank, {self.seconds:.1f} s"
        )


def describe_problems(problems: Sequence[tuple[int, str]], limit: int = MAX_LISTED_PROBLEMS) -> str:
    """``line N: reason`` for the first ``limit`` problems, then how many more there are."""
    lines = [f"  line {number}: {reason}" for number, reason in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit:,} more")
    return "\n".join(lines)


def check_problems(parsed: ParsedKB, on_error: OnError = "fail") -> None:
    """Raise :class:`KBFormatError` listing the bad lines, unless ``on_error == "skip"``;
    raise it too when there is no valid triple at all (an empty file is a mistake)."""
    if on_error not in ("fail", "skip"):
        raise ValueError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    if not parsed.triples and not (parsed.problems and on_error == "fail"):
        bad = f" ({len(parsed.problems):,} bad lines)" if parsed.problems else ""
        raise KBFormatError(f"{parsed.path}: no triples to load{bad}", list(parsed.problems))
    if parsed.problems and on_error == "fail":
        count = len(parsed.problems)
        raise KBFormatError(
            f"{parsed.path}: {count:,} bad line{'s' if count != 1 else ''}, nothing was written "
            f"(use --on-error skip to load the valid lines):\n{describe_problems(parsed.problems)}",
            problems=list(parsed.problems),
        )


def load_kb(
    store: KBWriter,
    parsed: ParsedKB,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_error: OnError = "fail",
    progress: Progress | None = None,
) -> LoadReport:
    """Write ``parsed`` into ``store``. With bad lines and ``on_error="fail"`` (the default),
    raise :class:`KBFormatError` before writing anything; with ``"skip"``, load the valid
    triples and report the rest. After the writes, check that no triple id sits on two
    relationships (a collision with a triple loaded earlier) and raise if one does.

    ``progress`` is called with the number of rows of each batch written; the total is
    ``len(parsed.entities) + len(parsed.triples)``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    check_problems(parsed, on_error)
    started = time.perf_counter()
    store.ensure_schema()

    entities = parsed.entities
    entities_written = 0
    for batch in _batches(entities, batch_size):
        entities_written += store.merge_entities(batch)
        if progress:
            progress(len(batch))

    triples_written = 0
    for batch in _batches(parsed.triples, batch_size):
        triples_written += store.merge_triples(batch)
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
            f"{parsed.path}: triple ids collide in the graph (clear it and reload, or report "
            f"the triples):\n{listed}"
        )

    return LoadReport(
        path=parsed.path,
        lines_read=parsed.lines_read,
        triples_in_file=len(parsed.triples),
        entities_in_file=len(entities),
        entities_written=entities_written,
        triples_written=triples_written,
        duplicates=parsed.duplicates,
        rejected=len(parsed.problems),
        blank=parsed.blank_lines,
        seconds=time.perf_counter() - started,
        problems=tuple(parsed.problems),
    )


def _batches(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
