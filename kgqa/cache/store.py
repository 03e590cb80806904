"""The answer cache on disk: :mod:`diskcache` (SQLite + files), bounded in size, the least
recently used answers evicted first. Safe across threads and processes (a server and
``kgqa ask`` may share it).

A cache only saves time: a cache that cannot be read or written (a full disk, a damaged
file) is reported through ``log`` and the answer is computed as if it were empty.
"""

from __future__ import annotations

import pickle
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgqa.service import AskResult

# What a damaged or unreadable cache raises.
_CACHE_ERRORS = (OSError, sqlite3.Error, pickle.PickleError, EOFError)


@dataclass(frozen=True)
class CacheInfo:
    """How an answer relates to the cache: served from it (``hit``) or stored in it."""

    hit: bool
    key: str
    stored_at: str

    def to_json(self) -> dict[str, Any]:
        return {"hit": self.hit, "key": self.key, "stored_at": self.stored_at}


class AnswerCache:
    """``get(key)`` / ``put(key, result)`` of :class:`~kgqa.service.AskResult` values."""

    def __init__(
        self, folder: Path, size_mb: int = 256, log: Callable[[str], object] | None = None
    ):
        self.folder = Path(folder)
        self.size_limit = max(1, size_mb) * 2**20
        self.log = log or (lambda _msg: None)
        self._cache: Any = None
        # A server looks answers up on request threads and stores them from its worker.
        self._lock = threading.Lock()

    def _open(self) -> Any:
        with self._lock:
            return self._opened()

    def _opened(self) -> Any:
        if self._cache is None:
            import diskcache

            # Answers quote the KB: the folder is the user's alone, as the server's are.
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._cache = diskcache.Cache(
                str(self.folder),
                size_limit=self.size_limit,
                eviction_policy="least-recently-used",
            )
        return self._cache

    def get(self, key: str) -> tuple[AskResult, str] | None:
        """The stored result and when it was stored, or ``None``."""
        try:
            entry = self._open().get(key)
        except _CACHE_ERRORS as e:
            self.log(f"answer cache {self.folder} unreadable ({e}); answering afresh")
            return None
        if not (isinstance(entry, tuple) and len(entry) == 2):
            return None
        return entry[0], str(entry[1])

    def put(self, key: str, result: AskResult) -> str | None:
        """Store ``result``; the time it was stored (``None`` if it could not be)."""
        stored_at = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            self._open().set(key, (result, stored_at))
        except _CACHE_ERRORS as e:
            self.log(f"answer cache {self.folder} not written ({e})")
            return None
        return stored_at

    def __len__(self) -> int:
        return len(self._open())

    def volume(self) -> int:
        """Bytes the cache takes on disk."""
        return int(self._open().volume())

    def clear(self) -> int:
        return int(self._open().clear())

    def close(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None
