"""What every KB reader provides: a :class:`KBFile` read in passes, the checks every value
passes before anything is written, and the stable triple id.

A load reads a file twice (:mod:`kgqa.graph.load`): :meth:`KBFile.check` streams the whole
file once and yields its problems (line number, reason) and counts; only then
:meth:`KBFile.stream` streams the valid triples again, in file order, to be written in
batches. Neither pass holds the file's triples, so memory does not grow with the file
(RDF's label map is the one exception: see :mod:`kgqa.loaders.rdf`). :class:`ParsedKB` is the
same interface over triples already in memory (small files, tests, tools).
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field

# Triple ids are 63-bit so that they fit Neo4j's and FAISS's signed 64-bit integers.
_ID_MASK = (1 << 63) - 1

# (line number, reason). Line 0: a problem of the file as a whole.
Problem = tuple[int, str]

# What Neo4j refuses, checked while reading so that a refused value never reaches a write.
# Entity names are keys of the uniqueness constraint's RANGE index, which refuses an entry
# of about 8 kB ("Property value is too large to index"; measured on 5.26: 8,160 ASCII bytes
# pass, 8,167 fail; 8,100 bytes of 3-byte characters pass, 8,166 fail). 4,000 leaves room
# for RDF's disambiguated names ("label <IRI>", each part checked against its own limit).
MAX_NAME_BYTES = 4_000
MAX_IRI_BYTES = 4_000
# Relationship types are tokens; Neo4j accepts long ones (70,000 characters measured), but
# a relation name this long is a misread column, not a relation.
MAX_RELATION_BYTES = 1_000
# C0 controls and DEL. NUL cannot be in a relationship type (Neo.ClientError.Schema.
# TokenNameError); the unit separator would let two different triples share an id (see
# triple_id); the others are corruption, or line breaks that no name should hold.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SURROGATE = re.compile(r"[\ud800-\udfff]")


def triple_id(subject: str, relation: str, obj: str) -> int:
    """A stable id derived from the triple's content: the same triple gets the same id on
    every load and every machine. The unit separator keeps ("a|b", "c") and ("a", "b|c") apart."""
    digest = hashlib.sha256(f"{subject}\x1f{relation}\x1f{obj}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & _ID_MASK


def value_problem(what: str, value: str, limit: int = MAX_NAME_BYTES) -> str | None:
    """Why Neo4j would refuse ``value`` as a name (or ``what`` says which field), or None.

    Not checked here: emptiness (each reader words it in its own terms)."""
    control = _CONTROL.search(value)
    if control:
        return (
            f"{what} contains the control character U+{ord(control.group()):04X} "
            f"(character {control.start() + 1})"
        )
    if SURROGATE.search(value):
        return f"{what} is not valid Unicode (a lone surrogate, e.g. from a JSON \\ud800 escape)"
    # Fast path: fewer than limit/4 characters can never exceed the limit in UTF-8.
    if len(value) * 4 > limit:
        size = len(value.encode("utf-8"))
        if size > limit:
            return (
                f"{what} is too long for Neo4j to index: {len(value):,} characters "
                f"({size:,} bytes in UTF-8; the limit is {limit:,})"
            )
    return None


def triple_problem(subject: str, relation: str, obj: str) -> str | None:
    """The first reason Neo4j would refuse this triple, or None (fields already non-empty)."""
    return (
        value_problem("subject", subject)
        or value_problem("relation", relation, MAX_RELATION_BYTES)
        or value_problem("object", obj)
    )


def empty_fields(**fields: str) -> str | None:
    """``"empty subject and object"`` for the empty ones among ``fields``, or None."""
    empty = [name for name, value in fields.items() if not value]
    return f"empty {' and '.join(empty)}" if empty else None


@dataclass(frozen=True, slots=True)
class RawTriple:
    """One triple as it will be written: entity names, relation name, the id of the three,
    the line it came from; for RDF also the IRIs behind the names (None for a literal)."""

    id: int
    subject: str
    relation: str
    object: str
    line: int
    subject_iri: str | None = None
    object_iri: str | None = None
    relation_iri: str | None = None


def make_triple(
    subject: str,
    relation: str,
    obj: str,
    line: int,
    subject_iri: str | None = None,
    object_iri: str | None = None,
    relation_iri: str | None = None,
) -> RawTriple:
    return RawTriple(
        triple_id(subject, relation, obj),
        subject,
        relation,
        obj,
        line,
        subject_iri,
        object_iri,
        relation_iri,
    )


@dataclass
class ReadStats:
    """What the last :meth:`KBFile.check` pass saw."""

    lines_read: int = 0
    blank_lines: int = 0
    # Valid triples (repeats included: telling them apart would cost memory per triple).
    triples: int = 0
    problems: int = 0
    # RDF: label triples used as entity names, and triples left out by design (blank nodes,
    # empty literals), with a count per reason.
    labels: int = 0
    left_out: dict[str, int] = field(default_factory=dict)


class KBFile(ABC):
    """A KB file opened by a reader: read once to check it, then again to write it. Both
    passes read the same bytes the same way, so :meth:`stream` leaves out exactly the lines
    that :meth:`check` reported."""

    path: str
    stats: ReadStats

    @abstractmethod
    def check(self) -> Iterator[Problem]:
        """Read the whole file; yield each problem, in file order; fill :attr:`stats`."""

    @abstractmethod
    def stream(self) -> Iterator[RawTriple]:
        """The valid triples in file order (call after :meth:`check`)."""


class LineKB(KBFile):
    """A reader whose one pass is :meth:`records`: triples and problems, in file order."""

    def __init__(self, path: str):
        self.path = path
        self.stats = ReadStats()

    @abstractmethod
    def records(self) -> Iterator[RawTriple | Problem]:
        """Triples and problems in file order; counts lines into :attr:`stats`."""

    def check(self) -> Iterator[Problem]:
        self.stats = ReadStats()
        for record in self.records():
            if isinstance(record, RawTriple):
                self.stats.triples += 1
            else:
                self.stats.problems += 1
                yield record

    def stream(self) -> Iterator[RawTriple]:
        stats, self.stats = self.stats, ReadStats()
        try:
            for record in self.records():
                if isinstance(record, RawTriple):
                    yield record
        finally:
            # The counts of the check pass are the ones a report states.
            self.stats = stats


@dataclass
class ParsedKB(KBFile):
    """The valid, de-duplicated triples of a file and the bad lines, in file order, held in
    memory (small files, tests and tools; ``kgqa load`` streams instead)."""

    path: str
    triples: list[RawTriple] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    lines_read: int = 0
    blank_lines: int = 0
    duplicates: int = 0
    stats: ReadStats = field(default_factory=ReadStats, init=False, repr=False)

    def check(self) -> Iterator[Problem]:
        self.stats = ReadStats(
            lines_read=self.lines_read,
            blank_lines=self.blank_lines,
            triples=len(self.triples),
            problems=len(self.problems),
        )
        yield from self.problems

    def stream(self) -> Iterator[RawTriple]:
        yield from self.triples

    @property
    def entities(self) -> list[str]:
        seen: dict[str, None] = {}
        for t in self.triples:
            seen.setdefault(t.subject)
            seen.setdefault(t.object)
        return list(seen)

    @property
    def relations(self) -> list[str]:
        return sorted({t.relation for t in self.triples})
