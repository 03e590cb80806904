"""MetaQA's ``subject|relation|object`` lines (also any KB in that shape)."""

from __future__ import annotations

from pathlib import Path

from kgqa.errors import KBFormatError
from kgqa.loaders import register
from kgqa.loaders.base import ParsedKB, RawTriple, triple_id


def parse_lines(lines: list[bytes], path: str = "<memory>") -> ParsedKB:
    """Parse raw lines. Tolerated: a UTF-8 BOM, CRLF endings, blank lines, exact duplicates.
    Reported as problems: non-UTF-8 bytes, a field count other than 3, empty fields, and a
    triple id that collides with a different triple."""
    kb = ParsedKB(path=path)
    by_id: dict[int, RawTriple] = {}
    for number, raw in enumerate(lines, start=1):
        kb.lines_read += 1
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\r\n")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            kb.problems.append((number, f"not valid UTF-8 (byte {e.start})"))
            continue
        if not text.strip():
            kb.blank_lines += 1
            continue
        fields = [f.strip() for f in text.split("|")]
        if len(fields) != 3:
            kb.problems.append((number, f"expected 3 fields separated by '|', found {len(fields)}"))
            continue
        subject, relation, obj = fields
        empty = [n for n, v in zip(("subject", "relation", "object"), fields, strict=True) if not v]
        if empty:
            kb.problems.append((number, f"empty {' and '.join(empty)}"))
            continue
        tid = triple_id(subject, relation, obj)
        seen = by_id.get(tid)
        if seen is not None:
            if (seen.subject, seen.relation, seen.object) == (subject, relation, obj):
                kb.duplicates += 1
            else:
                kb.problems.append((number, f"triple id {tid} collides with line {seen.line}"))
            continue
        triple = RawTriple(tid, subject, relation, obj, number)
        by_id[tid] = triple
        kb.triples.append(triple)
    return kb


@register("metaqa")
def read(path: Path) -> ParsedKB:
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise KBFormatError(f"KB file {path} does not exist") from e
    except OSError as e:
        raise KBFormatError(f"cannot read KB file {path}: {e.strerror}") from e
    return parse_lines(data.splitlines(keepends=True), str(path))
