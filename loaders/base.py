"""What every KB reader returns, and the stable triple id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# Triple ids are 63-bit so that they fit Neo4j's and FAISS's signed 64-bit integers.
_ID_MASK = (1 << 63) - 1


def triple_id(subject: str, relation: str, obj: str) -> int:
    """A stable id derived from the triple's content: the same triple gets the same id on
    every load and every machine. The unit separator keeps ("a|b", "c") and ("a", "b|c") apart."""
    digest = hashlib.sha256(f"{subject}\x1f{relation}\x1f{obj}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & _ID_MASK


@dataclass(frozen=True)
class RawTriple:
    id: int
    subject: str
    relation: str
    object: str
    line: int


@dataclass
class ParsedKB:
    """The valid, de-duplicated triples of a file and the bad lines, in file order."""

    path: str
    triples: list[RawTriple] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    lines_read: int = 0
    blank_lines: int = 0
    duplicates: int = 0

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
