"""MetaQA's ``subject|relation|object`` lines (also any KB in that shape)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from kgqa.errors import KBFormatError
from kgqa.loaders import ReadOptions, register
from kgqa.loaders.base import (
    LineKB,
    ParsedKB,
    Problem,
    RawTriple,
    ReadStats,
    empty_fields,
    triple_id,
    triple_problem,
)


def line_records(lines: Iterable[bytes], stats: ReadStats) -> Iterator[RawTriple | Problem]:
    """Triples and problems of raw lines, in order. Tolerated: a UTF-8 BOM, CRLF endings,
    blank lines. Problems: non-UTF-8 bytes, a field count other than 3, empty fields, values
    Neo4j would refuse (:func:`~kgqa.loaders.base.triple_problem`)."""
    for number, raw in enumerate(lines, start=1):
        stats.lines_read += 1
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\r\n")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield (number, f"not valid UTF-8 (byte {e.start})")
            continue
        if not text.strip():
            stats.blank_lines += 1
            continue
        fields = [f.strip() for f in text.split("|")]
        if len(fields) != 3:
            yield (number, f"expected 3 fields separated by '|', found {len(fields)}")
            continue
        subject, relation, obj = fields
        problem = empty_fields(subject=subject, relation=relation, object=obj) or triple_problem(
            subject, relation, obj
        )
        if problem:
            yield (number, problem)
            continue
        yield RawTriple(triple_id(subject, relation, obj), subject, relation, obj, number)


def parse_lines(lines: list[bytes], path: str = "<memory>") -> ParsedKB:
    """Parse raw lines into memory, de-duplicated: exact repeats are counted, and a triple id
    that collides with a different triple is a problem."""
    stats = ReadStats()
    kb = ParsedKB(path=path)
    by_id: dict[int, RawTriple] = {}
    for record in line_records(lines, stats):
        if not isinstance(record, RawTriple):
            kb.problems.append(record)
            continue
        seen = by_id.get(record.id)
        if seen is not None:
            if (seen.subject, seen.relation, seen.object) == (
                record.subject,
                record.relation,
                record.object,
            ):
                kb.duplicates += 1
            else:
                kb.problems.append(
                    (record.line, f"triple id {record.id} collides with line {seen.line}")
                )
            continue
        by_id[record.id] = record
        kb.triples.append(record)
    kb.lines_read, kb.blank_lines = stats.lines_read, stats.blank_lines
    return kb


class MetaQAFile(LineKB):
    """A MetaQA file, streamed line by line on each pass."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self._file = path

    def records(self) -> Iterator[RawTriple | Problem]:
        try:
            with self._file.open("rb") as f:
                yield from line_records(f, self.stats)
        except OSError as e:
            raise KBFormatError(f"cannot read KB file {self.path}: {e.strerror}") from e


@register("metaqa", extensions=(".txt",))
def open_metaqa(path: Path, options: ReadOptions) -> MetaQAFile:
    return MetaQAFile(path)


def read(path: Path) -> ParsedKB:
    """The whole file in memory (tools and tests; ``kgqa load`` streams it instead)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise KBFormatError(f"KB file {path} does not exist") from e
    except OSError as e:
        raise KBFormatError(f"cannot read KB file {path}: {e.strerror}") from e
    return parse_lines(data.splitlines(keepends=True), str(path))
