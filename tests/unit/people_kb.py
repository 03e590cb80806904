"""An invented KB about people (not movies) for the profile and graph-mode unit tests."""

from __future__ import annotations

from kgqa.graph.memory_store import MemoryStore
from kgqa.loaders.base import triple_id
from kgqa.profile.derive import derive_profile
from kgqa.profile.model import KBProfile
from kgqa.types import Triple

FACTS = [
    ("Ada", "spouse", "Ben"),
    ("Ben", "spouse", "Ada"),
    ("Cy", "spouse", "Di"),
    ("Di", "spouse", "Cy"),
    ("Ada", "has_child", "Cy"),
    ("Cy", "has_child_inverse", "Ada"),
    ("Ben", "has_child", "Cy"),
    ("Cy", "has_child_inverse", "Ben"),
    ("Ada", "nationality", "Norland"),
    ("Ben", "nationality", "Ostmark"),
    ("Cy", "nationality", "Norland"),
    ("Di", "nationality", "Ostmark"),
    ("Ada", "profession", "Engineer"),
    ("Cy", "profession", "Painter"),
    ("Di", "profession", "Painter"),
    ("Norland", "capital", "Port Avel"),
    ("Ostmark", "capital", "Kessa"),
]


def store() -> MemoryStore:
    return MemoryStore(Triple(triple_id(s, r, o), s, r, o) for s, r, o in FACTS)


def derived(namer: object = None) -> KBProfile:
    return derive_profile(store(), "sha256:test", namer=namer)  # type: ignore[arg-type]
