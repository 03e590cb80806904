"""Every Cypher query is a named ``.cypher`` file in the top-level ``cypher/`` folder
(shipped as the ``kgqa.cypher`` package). Values always travel as ``$parameters``."""

from __future__ import annotations

from functools import cache
from importlib import resources

from kgqa.errors import KGQAError


def names() -> list[str]:
    """Names of all packaged queries (file stems), sorted."""
    root = resources.files("kgqa.cypher")
    return sorted(p.name[: -len(".cypher")] for p in root.iterdir() if p.name.endswith(".cypher"))


@cache
def query(name: str) -> str:
    """The text of ``cypher/<name>.cypher``; an unknown name lists the valid ones."""
    path = resources.files("kgqa.cypher") / f"{name}.cypher"
    if not path.is_file():
        raise KGQAError(f"no Cypher query named {name!r}; known: {', '.join(names())}")
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("//")]
    return "\n".join(lines).strip()
