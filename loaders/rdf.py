"""N-Triples and Turtle, parsed by pyoxigraph (streamed; ~15x faster than rdflib here).

What each RDF term becomes (docs/loading.md has the reasons):

- An IRI subject or object is an ``:Entity`` whose ``iri`` property is the IRI and whose
  name is its label: ``skos:prefLabel`` before ``rdfs:label``, a label without a language
  tag or in English (``en``, ``en-GB``...) before any other, the first in the file among
  equals. An IRI without a label is named by its local name (after the last ``#``, ``/`` or
  ``:``, percent-decoded). When two different IRIs of the file would get the same name,
  each of them is named ``name <IRI>`` instead, so that they stay two entities.
- A literal object is the entity named by its lexical form (datatype and language tag
  dropped; tabs and line breaks become spaces); the same text is one entity, and it is the
  same node as an IRI entity of that name.
- Label triples (``rdfs:label``/``skos:prefLabel`` with a literal) are names, not triples.
- A relation is named by its predicate's local name; predicates whose local names collide
  are named by their full IRI. The predicate's IRI is the relationship's ``iri`` property.
- Triples with a blank node (or an RDF 1.2 triple term) are left out and counted: a blank
  node has no name, and the ids a parser gives it are not stable across reads.

Memory: the label map (IRI -> label) holds every labelled IRI; the check of shared names
holds 16 bytes per distinct IRI. Nothing else grows with the file.

Line numbers: N-Triples is one triple per line, so a bad line is reported and, with
``--on-error skip``, skipped exactly. Turtle statements span lines: a triple's line is the one
where its last term ends, and a Turtle syntax error stops the load (it cannot be skipped:
what follows it is not reliably parsed).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote

from kgqa.errors import KBFormatError
from kgqa.loaders import ReadOptions, register
from kgqa.loaders.base import (
    MAX_IRI_BYTES,
    MAX_NAME_BYTES,
    MAX_RELATION_BYTES,
    KBFile,
    Problem,
    RawTriple,
    ReadStats,
    triple_id,
    value_problem,
)

if TYPE_CHECKING:
    import numpy as np

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS_PREF_LABEL = "http://www.w3.org/2004/02/skos/core#prefLabel"
# Lower is preferred.
_LABEL_RANK = {SKOS_PREF_LABEL: 0, RDFS_LABEL: 1}
_LINE_BREAKS = re.compile(r"[\t\n\r]+")
# Occurrences of IRIs buffered before they are folded into the sorted distinct set.
_FOLD_EVERY = 1 << 20


class _LineFeeder:
    """Hands the parser one line per read, so that the line being parsed is known (the
    parser asks for more only when it has used what it had)."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self._rest = b""
        self.line = 0

    def read(self, size: int = -1) -> bytes:
        if not self._rest:
            self._rest = self._f.readline()
            if not self._rest:
                return b""
            self.line += 1
            if self.line == 1 and self._rest.startswith(b"\xef\xbb\xbf"):
                self._rest = self._rest[3:]  # a UTF-8 BOM, which the parser refuses
        if size is None or size < 0 or size >= len(self._rest):
            out, self._rest = self._rest, b""
        else:
            out, self._rest = self._rest[:size], self._rest[size:]
        return out


def local_name(iri: str) -> str:
    """The part after the last ``#``, ``/`` or ``:``, percent-decoded; the IRI if empty."""
    name = iri[max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":")) + 1 :]
    if "%" in name:
        decoded = unquote(name)
        if value_problem("name", decoded) is None:
            name = decoded
    return name or iri


def literal_name(value: str) -> str:
    value = value.strip()
    if "\n" in value or "\r" in value or "\t" in value:
        value = _LINE_BREAKS.sub(" ", value)
    return value


class RDFFile(KBFile):
    def __init__(self, path: Path, rdf_format: str):
        self.path = str(path)
        self._file = path
        self._format = rdf_format  # "nt" or "ttl"
        self.stats = ReadStats()
        # Filled by check(): IRI -> (rank, label); predicate IRI -> relation name; the
        # hashes of names that two different IRIs would share.
        self._labels: dict[str, tuple[tuple[int, int], str]] = {}
        self._relations: dict[str, str] = {}
        self._shared: set[int] = set()
        self._checked = False

    # -- parsing ---------------------------------------------------------------------------
    def _parse(self) -> Iterator[tuple[int, Any]]:
        """(line, quad) per triple and (line, SyntaxError) per syntax error, in order."""
        import pyoxigraph as ox

        fmt = ox.RdfFormat.N_TRIPLES if self._format == "nt" else ox.RdfFormat.TURTLE
        try:
            with self._file.open("rb") as f:
                feeder = _LineFeeder(f)
                quads = iter(ox.parse(input=feeder, format=fmt))  # type: ignore[arg-type]
                while True:
                    try:
                        for quad in quads:
                            yield feeder.line, quad
                        break
                    except SyntaxError as e:
                        # The parser never is past the lines fed; after a bad last line it
                        # may report "unexpected end" on the line after it.
                        yield min(e.lineno or feeder.line, feeder.line), e
                self.stats.lines_read = feeder.line
        except OSError as e:
            raise KBFormatError(f"cannot read KB file {self.path}: {e.strerror}") from e

    def _quads(self) -> Iterator[tuple[int, Any]]:
        """(line, quad) per triple of a good line, (line, reason: str) per bad line.

        N-Triples: a bad line is reported once, and any triple the parser still recovered
        from it is dropped. Turtle: the first syntax error ends the read."""
        if self._format == "ttl":
            for line, item in self._parse():
                if isinstance(item, SyntaxError):
                    raise KBFormatError(
                        f"{self.path}: line {line}: {_reason(item)} (a syntax error in Turtle "
                        f"cannot be skipped, even with --on-error skip; nothing was written)",
                        problems=[(line, _reason(item))],
                    )
                yield line, item
            return
        pending: list[Any] = []
        pending_line = 0
        pending_error: str | None = None
        for line, item in self._parse():
            if line != pending_line:
                if pending_error is not None:
                    yield pending_line, pending_error
                else:
                    for quad in pending:
                        yield pending_line, quad
                pending, pending_line, pending_error = [], line, None
            if isinstance(item, SyntaxError):
                pending_error = pending_error or _reason(item)
            else:
                pending.append(item)
        if pending_error is not None:
            yield pending_line, pending_error
        else:
            for quad in pending:
                yield pending_line, quad

    def _statements(self) -> Iterator[tuple[int, str, Any, Any, Any]]:
        """Each statement classified, the one place both passes take their decisions from:
        ``(line, "triple", subject IRI, predicate IRI, object)`` where the object is
        ``(IRI, None)`` or ``(None, literal name)``; ``(line, "label", subject IRI, rank,
        label)``; ``(line, "left out", reason, None, None)``; ``(line, "problem", reason,
        None, None)``."""
        import pyoxigraph as ox

        named_node, literal = ox.NamedNode, ox.Literal
        label_rank = _LABEL_RANK
        iri_fast, relation_fast = MAX_IRI_BYTES // 4, MAX_RELATION_BYTES // 4
        for line, quad in self._quads():
            if type(quad) is str:
                yield line, "problem", quad, None, None
                continue
            subject, obj = quad.subject, quad.object
            subject_type, object_type = type(subject), type(obj)
            if subject_type is not named_node or (
                object_type is not named_node and object_type is not literal
            ):
                blank = subject_type is ox.BlankNode or object_type is ox.BlankNode
                yield line, "left out", "blank node" if blank else "triple term", None, None
                continue
            s_iri: str = subject.value
            p_iri: str = quad.predicate.value
            problem = None
            if len(s_iri) > iri_fast:
                problem = _too_long("subject IRI", s_iri, MAX_IRI_BYTES)
            if problem is None and len(p_iri) > relation_fast:
                problem = _too_long("predicate IRI", p_iri, MAX_RELATION_BYTES)
            if object_type is named_node:
                o_iri: str = obj.value
                if problem is None and len(o_iri) > iri_fast:
                    problem = _too_long("object IRI", o_iri, MAX_IRI_BYTES)
                if problem:
                    yield line, "problem", problem, None, None
                else:
                    yield line, "triple", s_iri, p_iri, (o_iri, None)
                continue
            text = literal_name(obj.value)
            rank = label_rank.get(p_iri)
            if not text:
                why = "empty label" if rank is not None else "empty literal"
                yield line, "left out", why, None, None
                continue
            what = "label" if rank is not None else "object"
            problem = problem or value_problem(what, text, MAX_NAME_BYTES)
            if problem:
                yield line, "problem", problem, None, None
            elif rank is not None:
                yield line, "label", s_iri, (_language_rank(obj.language), rank), text
            else:
                yield line, "triple", s_iri, p_iri, (None, text)

    # -- the two passes --------------------------------------------------------------------
    def check(self) -> Iterator[Problem]:
        import numpy as np

        self.stats = stats = ReadStats()
        labels: dict[str, tuple[tuple[int, int], str]] = {}
        predicates: dict[str, None] = {}
        iri_hashes, name_hashes = array("q"), array("q")
        seen_iris = np.empty(0, np.int64)
        seen_names = np.empty(0, np.int64)
        add_iri, add_name = iri_hashes.append, name_hashes.append
        for line, kind, a, b, c in self._statements():
            if kind == "triple":
                stats.triples += 1
                predicates.setdefault(b)
                add_iri(hash(a))
                add_name(hash(local_name(a)))
                if c[0] is not None:
                    add_iri(hash(c[0]))
                    add_name(hash(local_name(c[0])))
                if len(iri_hashes) >= _FOLD_EVERY:
                    seen_iris, seen_names = _fold(seen_iris, seen_names, iri_hashes, name_hashes)
                    iri_hashes, name_hashes = array("q"), array("q")
                    add_iri, add_name = iri_hashes.append, name_hashes.append
            elif kind == "label":
                stats.labels += 1
                known = labels.get(a)
                if known is None or b < known[0]:
                    labels[a] = (b, c)
            elif kind == "problem":
                stats.problems += 1
                yield (line, a)
            else:
                stats.left_out[a] = stats.left_out.get(a, 0) + 1
        seen_iris, seen_names = _fold(seen_iris, seen_names, iri_hashes, name_hashes)
        self._labels = labels
        self._relations = _relation_names(predicates)
        self._shared = _shared_names(seen_iris, seen_names, labels)
        self._checked = True

    def stream(self) -> Iterator[RawTriple]:
        if not self._checked:
            raise RuntimeError("RDFFile.stream() needs check() first (it builds the names)")
        stats, self.stats = self.stats, ReadStats()
        relations = self._relations
        name_of = self._entity_name
        try:
            for line, _, s_iri, p_iri, (o_iri, o_name) in (
                s for s in self._statements() if s[1] == "triple"
            ):
                s_name = name_of(s_iri)
                if o_iri is not None:
                    o_name = name_of(o_iri)
                relation = relations[p_iri]
                yield RawTriple(
                    triple_id(s_name, relation, o_name),
                    s_name,
                    relation,
                    o_name,
                    line,
                    s_iri,
                    o_iri,
                    p_iri,
                )
        finally:
            self.stats = stats

    def _entity_name(self, iri: str) -> str:
        known = self._labels.get(iri)
        name = known[1] if known else local_name(iri)
        if hash(name) in self._shared:
            return f"{name} <{iri}>"
        return name


def _reason(error: SyntaxError) -> str:
    # "Parser error at line 2 between columns 31 and 35: The subject ... (line 2)"
    message = str(error.msg if error.msg else error)
    message = re.sub(r"^Parser error at line \d+ ", "", message)
    return f"not valid RDF: {message}"


def _too_long(what: str, value: str, limit: int) -> str | None:
    size = len(value.encode("utf-8"))
    if size <= limit:
        return None
    return f"{what} is too long: {size:,} bytes in UTF-8 (the limit is {limit:,})"


def _language_rank(language: str | None) -> int:
    if language is None or language == "en" or language.startswith("en-"):
        return 0
    return 1


def _fold(
    iris: np.ndarray, names: np.ndarray, new_iris: array[int], new_names: array[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct IRI hashes (sorted) with the hash of each one's local name."""
    import numpy as np

    all_iris = np.concatenate([iris, np.frombuffer(new_iris, np.int64)])
    all_names = np.concatenate([names, np.frombuffer(new_names, np.int64)])
    distinct, first = np.unique(all_iris, return_index=True)
    return distinct, all_names[first]


def _shared_names(
    iris: np.ndarray, names: np.ndarray, labels: dict[str, tuple[tuple[int, int], str]]
) -> set[int]:
    """Hashes of the names that two different IRIs would get (label, else local name)."""
    import numpy as np

    names = names.copy()
    if labels and len(iris):
        labelled = np.fromiter((hash(i) for i in labels), np.int64, len(labels))
        label_names = np.fromiter((hash(v[1]) for v in labels.values()), np.int64, len(labels))
        at = np.searchsorted(iris, labelled)
        at[at == len(iris)] = 0
        hit = iris[at] == labelled
        names[at[hit]] = label_names[hit]
    ordered = np.sort(names)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    return {int(h) for h in np.unique(repeated)}


def _relation_names(predicates: dict[str, None]) -> dict[str, str]:
    """Predicate IRI -> relation name: the local name, or the IRI where local names collide."""
    by_name: dict[str, list[str]] = {}
    for iri in predicates:
        by_name.setdefault(local_name(iri), []).append(iri)
    out = {}
    for name, iris in by_name.items():
        for iri in iris:
            out[iri] = name if len(iris) == 1 else iri
    return out


@register("nt", extensions=(".nt",))
def open_ntriples(path: Path, options: ReadOptions) -> RDFFile:
    return RDFFile(path, "nt")


@register("ttl", extensions=(".ttl",))
def open_turtle(path: Path, options: ReadOptions) -> RDFFile:
    return RDFFile(path, "ttl")
