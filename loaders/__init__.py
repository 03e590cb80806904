"""KB readers, registered by name (``kgqa load --format NAME``).

A loader turns a file into :class:`kgqa.loaders.base.ParsedKB`: the valid triples and the
problems (line number, reason) of the bad lines. Readers never touch the database.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgqa.errors import ConfigError
from kgqa.loaders.base import ParsedKB

Reader = Callable[[Path], ParsedKB]

_REGISTRY: dict[str, Reader] = {}


def register(name: str) -> Callable[[Reader], Reader]:
    def wrap(fn: Reader) -> Reader:
        _REGISTRY[name] = fn
        return fn

    return wrap


def get(name: str) -> Reader:
    # Import the built-in readers so that they register themselves.
    from kgqa.loaders import metaqa  # noqa: F401

    if name not in _REGISTRY:
        raise ConfigError(f"unknown KB format {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def formats() -> list[str]:
    from kgqa.loaders import metaqa  # noqa: F401

    return sorted(_REGISTRY)
