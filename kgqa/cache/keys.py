"""What an answer depends on, as one cache key.

An answer is a function of the question, its topic entities, the mode and the check flag, of
every setting that reaches a prompt, a sampler, the retrieval or the walk, of the model's
weights, of the knowledge base and of kgqa's own code and prompts. The key is the sha256 of
all of them, so that a changed KB, model, setting or release never serves a stale answer:

- the question with its whitespace collapsed (the service answers that same text);
- the topic entities as resolved (given, bracketed or linked), in order, and the mode;
- settings: ``retrieval``, ``graph``, ``embed`` (not the batch size), ``llm`` (not the API
  key, the time-out or the retry count), ``profile``, and the Neo4j URI, database, entity
  labels and name properties (which KB is read; never the password);
- the model's identity (:func:`model_identity`): the pinned sha256 of a known model, the
  path, size and modification time of any other GGUF file, or the server and model name of
  an OpenAI-compatible backend (whose weights kgqa cannot see);
- the KB's fingerprints (:func:`kb_identity`): the triple-id fingerprint that ``kgqa load`` /
  ``kgqa index`` record in the vector index's manifest and in the KB profile (the digest of
  every triple id, :func:`kgqa.index.faiss_index.kb_fingerprint`);
- the contents of a prompts folder or profile file given by path, and a digest of kgqa's
  package files (code, prompts, Cypher, packaged profiles): :func:`code_identity`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgqa.settings import Settings

# Bump when the key's layout or the cached value's shape changes.
KEY_VERSION = 1
_SPACE = re.compile(r"\s+")
# Settings that change nothing in an answer.
_NOT_ANSWER_SETTINGS = {
    "llm": ("api_key", "timeout", "max_retries"),
    "embed": ("batch_size",),
}


def normalize_question(question: str) -> str:
    """The question with runs of whitespace made one space and the ends stripped. Case is
    kept: entity names are case-sensitive ("[ada]" is not "[Ada]"), and the LLM reads it."""
    return _SPACE.sub(" ", question).strip()


def _section(settings: Settings, name: str) -> dict[str, Any]:
    data = dataclasses.asdict(getattr(settings, name))
    for field in _NOT_ANSWER_SETTINGS.get(name, ()):
        data.pop(field, None)
    return {k: str(v) if isinstance(v, Path) else v for k, v in data.items()}


def answer_settings(settings: Settings) -> dict[str, Any]:
    """The settings that can change an answer, JSON-ready (no secrets)."""
    n = settings.neo4j
    return {
        "retrieval": _section(settings, "retrieval"),
        "graph": _section(settings, "graph"),
        "embed": _section(settings, "embed"),
        "llm": _section(settings, "llm"),
        "profile": _section(settings, "profile"),
        "kb": {
            "uri": _without_credentials(n.effective_uri),
            "database": n.database,
            "entity_labels": n.entity_labels,
            "name_properties": n.name_properties,
        },
    }


def _without_credentials(uri: str) -> str:
    return re.sub(r"//[^/@]*@", "//", uri)


def model_identity(settings: Settings) -> str:
    """A stable identity of the LLM's weights (see the module doc)."""
    s = settings.llm
    if s.backend == "openai":
        return f"openai:{s.base_url}:{s.model}"
    from kgqa.llm.models import KNOWN_MODELS

    known = KNOWN_MODELS.get(s.model)
    if known is not None:
        return f"sha256:{known.sha256}"
    path = Path(s.model).expanduser()
    try:
        st = path.stat()
    except OSError:
        return f"path:{path}:missing"
    return f"path:{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@lru_cache(maxsize=64)
def _fingerprint_in(path: str, mtime_ns: int, size: int) -> str | None:
    # Keyed by the file's modification time and size: a profile of a large KB is re-read only
    # when `kgqa load` / `kgqa index` wrote it again.
    data = _read_json(Path(path))
    if data is None:
        return None
    value = data.get("kb_fingerprint", data.get("fingerprint"))
    return str(value) if value else None


def _file_fingerprint(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return _fingerprint_in(str(path), st.st_mtime_ns, st.st_size)


def kb_identity(settings: Settings) -> dict[str, str | None]:
    """The KB fingerprints recorded beside the index (``None`` where a file is missing)."""
    from kgqa.index.faiss_index import MANIFEST_FILE
    from kgqa.profile.model import PROFILE_FILE

    folder = settings.index_dir
    return {
        "index": _file_fingerprint(folder / MANIFEST_FILE),
        "profile": _file_fingerprint(folder / PROFILE_FILE),
    }


def _digest_files(paths: Iterable[Path], root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def _package_dirs() -> list[Path]:
    import importlib.util

    dirs: list[Path] = []
    for name in ("kgqa", "kgqa.cypher", "kgqa.loaders"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(Path(p) for p in spec.submodule_search_locations)
    return dirs


@lru_cache(maxsize=1)
def code_identity() -> str:
    """A digest of kgqa's own files (``*.py``, prompts, Cypher, packaged profiles), computed
    once per process: a new release, or any edit, answers afresh."""
    h = hashlib.sha256()
    for folder in _package_dirs():
        files = [
            p
            for p in folder.rglob("*")
            if p.suffix in (".py", ".txt", ".cypher", ".toml")
            and p.is_file()
            and not {"__pycache__", "node_modules"} & set(p.parts)
        ]
        h.update(_digest_files(files, folder).encode())
    return h.hexdigest()


def _contents(path: Path | str | None) -> str | None:
    """A digest of a file's or a folder's contents (prompts folder, profile file)."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if p.is_dir():
        return _digest_files([f for f in p.rglob("*") if f.is_file()], p)
    if p.is_file():
        return hashlib.sha256(p.read_bytes()).hexdigest()
    return None  # a packaged profile name: part of code_identity


def answer_key(
    settings: Settings,
    question: str,
    entities: Sequence[str],
    mode: str,
    *,
    check: bool,
) -> str:
    """The cache key of one answer (see the module doc)."""
    parts = {
        "version": KEY_VERSION,
        "question": normalize_question(question),
        "entities": list(entities),
        "mode": mode,
        "check": check,
        "settings": answer_settings(settings),
        "model": model_identity(settings),
        "kb": kb_identity(settings),
        "prompts": _contents(settings.llm.prompts_dir),
        "profile_file": _contents(settings.profile.file),
        "code": code_identity(),
    }
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
