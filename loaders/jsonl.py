"""JSON Lines: one JSON object per line, its triple under three keys.

The keys are ``subject``, ``relation`` and ``object`` unless ``ReadOptions.columns`` names
others (e.g. ``s,p,o``): one rule per file, never guessed per line. Values are strings;
a number stands for its JSON text (``1944`` -> ``"1944"``); anything else is a problem of
that line. Other keys of the object are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from kgqa.errors import ConfigError, KBFormatError
from kgqa.loaders import ReadOptions, register
from kgqa.loaders.base import (
    LineKB,
    Problem,
    RawTriple,
    empty_fields,
    triple_id,
    triple_problem,
)

DEFAULT_KEYS = ("subject", "relation", "object")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), "a number")


class JSONLFile(LineKB):
    def __init__(self, path: Path, options: ReadOptions):
        super().__init__(str(path))
        self._file = path
        keys = options.columns or DEFAULT_KEYS
        if len(keys) != 3 or len(set(keys)) != 3:
            raise ConfigError("--columns takes three different keys: subject,relation,object")
        self._keys = tuple(keys)

    def records(self) -> Iterator[RawTriple | Problem]:
        try:
            with self._file.open("rb") as f:
                yield from self._lines(f)
        except OSError as e:
            raise KBFormatError(f"cannot read KB file {self.path}: {e.strerror}") from e

    def _lines(self, f: Iterator[bytes]) -> Iterator[RawTriple | Problem]:
        stats = self.stats
        for number, raw in enumerate(f, start=1):
            stats.lines_read += 1
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield (number, f"not valid UTF-8 (byte {e.start})")
                continue
            if not text.strip():
                stats.blank_lines += 1
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                yield (number, f"not valid JSON: {e.msg} (column {e.colno})")
                continue
            if not isinstance(value, dict):
                yield (number, f"expected a JSON object, found {_kind(value)}")
                continue
            fields = self._fields(value)
            if isinstance(fields, str):
                yield (number, fields)
                continue
            subject, relation, obj = fields
            problem = empty_fields(
                subject=subject, relation=relation, object=obj
            ) or triple_problem(subject, relation, obj)
            if problem:
                yield (number, problem)
                continue
            yield RawTriple(triple_id(subject, relation, obj), subject, relation, obj, number)

    def _fields(self, value: dict[str, object]) -> tuple[str, str, str] | str:
        """The three values, stripped, or the reason they cannot be had."""
        out = []
        for role, key in zip(DEFAULT_KEYS, self._keys, strict=True):
            if key not in value:
                keys = ", ".join(list(value)[:10]) or "none"
                return f"no key {key!r} for the {role} (keys: {keys}); choose keys with --columns"
            item = value[key]
            if isinstance(item, str):
                out.append(item.strip())
            elif isinstance(item, int | float) and not isinstance(item, bool):
                out.append(json.dumps(item))
            else:
                return f"the {role} ({key!r}) must be a string or a number, found {_kind(item)}"
        return out[0], out[1], out[2]


@register("jsonl", extensions=(".jsonl",), options=("--columns",))
def open_jsonl(path: Path, options: ReadOptions) -> JSONLFile:
    return JSONLFile(path, options)
