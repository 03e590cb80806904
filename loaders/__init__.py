"""KB readers, registered by name (``kgqa load --format NAME``) and by file extension.

A reader opens a file as a :class:`kgqa.loaders.base.KBFile`, which is read in two streamed
passes: one that checks every line (problems with line numbers, counts), one that yields the
valid triples to write. Readers never touch the database. Built in: ``metaqa``
(``subject|relation|object`` lines), ``csv``, ``tsv``, ``jsonl``, ``nt`` (N-Triples) and
``ttl`` (Turtle); see docs/loading.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.errors import ConfigError, KBFormatError
from kgqa.loaders.base import KBFile


@dataclass(frozen=True)
class ReadOptions:
    """Options some readers take (csv, tsv, jsonl); None means the reader's default."""

    # Which fields hold subject, relation and object: header names or 0-based indexes
    # (csv/tsv), or keys (jsonl).
    columns: tuple[str, str, str] | None = None
    # csv/tsv: whether the first row is a header; None: decided from the first row.
    header: bool | None = None

    def given(self) -> list[str]:
        """The options set, as the CLI spells them."""
        return [
            name
            for name, value in (("--columns", self.columns), ("--header", self.header))
            if value is not None
        ]


Opener = Callable[[Path, ReadOptions], KBFile]


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    opener: Opener
    # The options of ReadOptions this reader uses, as the CLI spells them.
    options: tuple[str, ...] = ()


_REGISTRY: dict[str, Format] = {}


def register(
    name: str, extensions: Sequence[str] = (), options: Sequence[str] = ()
) -> Callable[[Opener], Opener]:
    """Register ``opener`` as the reader ``name``, chosen for files ending in ``extensions``."""

    def wrap(fn: Opener) -> Opener:
        _REGISTRY[name] = Format(name, tuple(e.lower() for e in extensions), fn, tuple(options))
        return fn

    return wrap


def _builtin() -> dict[str, Format]:
    # Import the built-in readers so that they register themselves.
    from kgqa.loaders import delimited, jsonl, metaqa, rdf  # noqa: F401

    return _REGISTRY


def _known() -> str:
    return ", ".join(
        f"{f.name} ({', '.join(f.extensions)})" if f.extensions else f.name
        for f in sorted(_builtin().values(), key=lambda f: f.name)
    )


def get(name: str) -> Format:
    """The reader registered as ``name``; an unknown name is one line listing the known ones."""
    registry = _builtin()
    if name not in registry:
        raise ConfigError(f"unknown KB format {name!r}; known: {_known()}")
    return registry[name]


def formats() -> list[str]:
    return sorted(_builtin())


def format_for(path: Path, name: str | None = None) -> Format:
    """The reader named ``name``, or else the one registered for ``path``'s extension."""
    if name is not None:
        return get(name)
    suffix = path.suffix.lower()
    for fmt in _builtin().values():
        if suffix in fmt.extensions:
            return fmt
    what = f"extension {suffix!r}" if suffix else "no extension"
    raise ConfigError(
        f"cannot tell the KB format of {path} ({what}); pass --format, known: {_known()}"
    )


def open_kb(path: Path, name: str | None = None, options: ReadOptions | None = None) -> KBFile:
    """Open ``path`` with the reader ``name`` (or the one its extension names)."""
    options = options or ReadOptions()
    fmt = format_for(path, name)
    unused = [o for o in options.given() if o not in fmt.options]
    if unused:
        takers = sorted(f.name for f in _builtin().values() if set(unused) <= set(f.options))
        raise ConfigError(
            f"{' and '.join(unused)} do{'es' if len(unused) == 1 else ''} not apply to the "
            f"{fmt.name} format (only to {', '.join(takers)})"
        )
    if not path.exists():
        raise KBFormatError(f"KB file {path} does not exist")
    if path.is_dir():
        raise KBFormatError(f"KB file {path} is a folder")
    return fmt.opener(path, options)
