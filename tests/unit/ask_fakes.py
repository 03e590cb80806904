"""What `kgqa ask` needs from the factory, faked for the CLI's unit tests (the real factory
builds a driver and models): a graph store that knows every entity, an empty derived profile."""

from __future__ import annotations

from collections.abc import Sequence

from kgqa.profile.model import KBProfile


class FakeGraph:
    database = "neo4j"

    def __init__(self) -> None:
        self.saved: list[tuple[str, object, list[str]]] = []

    def require_entities(self, names: Sequence[str]) -> None:
        return None

    def link_question(self, question: str) -> str:
        return "Linked Entity"

    def save_run(self, answer: object, *, answer_names: Sequence[str] = ()) -> str:
        self.saved.append((self.database, answer, list(answer_names)))
        return "3c1f6756-1b91-4694-b068-7cd4036cf794"


class AskFactoryBase:
    """Subclass and give ``pipeline(mode)`` (and ``rubric()`` for --check)."""

    graph_store = FakeGraph()

    def __init__(self, settings: object, log: object = None, **_: object) -> None:
        self.settings = settings

    def __enter__(self) -> AskFactoryBase:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def graph(self) -> FakeGraph:
        return self.graph_store

    def startup_timings(self) -> dict[str, object]:
        return {}

    def profile(self) -> KBProfile:
        return KBProfile("derived", "", {})
