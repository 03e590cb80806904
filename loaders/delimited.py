"""Triples in CSV or TSV files: one triple per row, with or without a header row.

Which columns hold subject, relation and object is chosen with ``ReadOptions.columns``
(header names or 0-based indexes); by default the first three. Without ``header`` given,
the first row is a header when ``columns`` names columns, or when its cells are the names
``subject``, ``relation`` and ``object`` (in any order and case; those columns are then
used). CSV follows RFC 4180 (quoted fields may hold commas and quotes); TSV is plain
tab-separated text without quoting (as FB15k-style dumps are): a quote is kept as written.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kgqa.errors import ConfigError, KBFormatError
from kgqa.loaders import ReadOptions, register
from kgqa.loaders.base import (
    SURROGATE,
    LineKB,
    Problem,
    RawTriple,
    empty_fields,
    triple_id,
    triple_problem,
)

DEFAULT_NAMES = ("subject", "relation", "object")


class DelimitedFile(LineKB):
    def __init__(self, path: Path, delimiter: str, options: ReadOptions):
        super().__init__(str(path))
        self._file = path
        self._delimiter = delimiter
        self._columns = options.columns
        self._header = options.header
        if self._columns is not None:
            if len(self._columns) != 3 or not all(c.strip() for c in self._columns):
                raise ConfigError(
                    "--columns takes three columns: subject,relation,object (names or indexes)"
                )
            if len({c.strip() for c in self._columns}) != 3:
                raise ConfigError(f"--columns names one column twice: {','.join(self._columns)}")
            named = [c for c in self._columns if not c.strip().isdigit()]
            if named and self._header is False:
                raise ConfigError(
                    f"--columns names columns ({', '.join(named)}) but --no-header says the "
                    f"file has no header row; give 0-based indexes instead"
                )

    @property
    def _what(self) -> str:
        return "tab" if self._delimiter == "\t" else repr(self._delimiter)

    def _reader(self, f: Iterable[str]) -> Any:
        if self._delimiter == "\t":
            return csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return csv.reader(f, delimiter=self._delimiter)

    def records(self) -> Iterator[RawTriple | Problem]:
        try:
            # utf-8-sig drops a BOM; surrogateescape keeps bad bytes visible as surrogates,
            # so that the row (not the whole file) is reported; newline="" lets csv see CRLF.
            with self._file.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
                yield from self._rows(f)
        except OSError as e:
            raise KBFormatError(f"cannot read KB file {self.path}: {e.strerror}") from e

    def _rows(self, f: Iterable[str]) -> Iterator[RawTriple | Problem]:
        reader = self._reader(f)
        stats = self.stats
        width: int | None = None
        picks: tuple[int, int, int] | None = None
        line = 0  # the physical line the next row starts on, minus one
        while True:
            start = line + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                line = reader.line_num
                yield (start, f"cannot read the row: {e}")
                continue
            line = reader.line_num
            stats.lines_read = line
            where = f" (lines {start}-{line}: a quoted field spans them)" if line > start else ""
            cells = [c.strip() for c in row]
            if not any(cells):
                stats.blank_lines += line - start + 1
                continue
            if any(SURROGATE.search(c) for c in cells):
                yield (start, "not valid UTF-8")
                continue
            if picks is None:
                picks, is_header = self._pick(cells, start)
                width = len(cells)
                if is_header:
                    continue
            if len(cells) != width:
                yield (
                    start,
                    f"expected {width} fields separated by {self._what}, found {len(cells)}{where}",
                )
                continue
            subject, relation, obj = (cells[i] for i in picks)
            problem = empty_fields(
                subject=subject, relation=relation, object=obj
            ) or triple_problem(subject, relation, obj)
            if problem:
                yield (start, problem + where)
                continue
            yield RawTriple(triple_id(subject, relation, obj), subject, relation, obj, start)

    def _pick(self, first: list[str], line: int) -> tuple[tuple[int, int, int], bool]:
        """(column indexes of subject, relation, object; whether ``first`` is a header)."""
        lowered = [c.lower() for c in first]
        header = self._header
        if header is None:
            named = self._columns is not None and any(
                not c.strip().isdigit() for c in self._columns
            )
            header = named or all(n in lowered for n in DEFAULT_NAMES)
        columns = self._columns
        if columns is None:
            columns = (
                DEFAULT_NAMES
                if header and all(n in lowered for n in DEFAULT_NAMES)
                else ("0", "1", "2")
            )
        picks = []
        for column in (c.strip() for c in columns):
            if column.isdigit():
                index = int(column)
                if index >= len(first):
                    raise KBFormatError(
                        f"{self.path}: line {line}: no column {index} (0-based) in a row of "
                        f"{len(first)} field{'s' if len(first) != 1 else ''}"
                    )
            else:
                matches = [i for i, c in enumerate(first) if c == column] or [
                    i for i, c in enumerate(lowered) if c == column.lower()
                ]
                if len(matches) != 1:
                    how = "no" if not matches else "more than one"
                    raise KBFormatError(
                        f"{self.path}: line {line}: the header has {how} column {column!r} "
                        f"(columns: {', '.join(first)}); choose with --columns"
                    )
                index = matches[0]
            picks.append(index)
        if len(set(picks)) != 3:
            raise ConfigError(f"--columns picks one column twice: {','.join(columns)}")
        return (picks[0], picks[1], picks[2]), header


@register("csv", extensions=(".csv",), options=("--columns", "--header"))
def open_csv(path: Path, options: ReadOptions) -> DelimitedFile:
    return DelimitedFile(path, ",", options)


@register("tsv", extensions=(".tsv",), options=("--columns", "--header"))
def open_tsv(path: Path, options: ReadOptions) -> DelimitedFile:
    return DelimitedFile(path, "\t", options)
