"""kgqa.service.ask: the library call behind `kgqa ask` (and the server to come)."""

from __future__ import annotations

import pytest

from kgqa.errors import ConfigError, EntityNotFound
from kgqa.service import ask
from kgqa.types import Answer, AnswerEntity

pytestmark = pytest.mark.unit


class Factory:
    def __init__(self) -> None:
        from people_kb import store

        self.store = store()
        self.asked: list[tuple[str, list[str]]] = []

    def graph(self):
        return self.store

    def pipeline(self, mode: str):
        factory = self

        class P:
            def answer(self, question, entities):
                factory.asked.append((mode, list(entities)))
                return Answer(
                    question,
                    tuple(entities),
                    mode,
                    "Ben",
                    answer_entities=(AnswerEntity("Ben", "memory:Ben", 1.0, (1,)),),
                )

        return P()


@pytest.mark.parametrize("mode", ["graph", "kgrag", "kaping", "qd", "llm"])
def test_an_unknown_or_miscased_entity_is_an_error_with_suggestions_in_every_mode(mode) -> None:
    f = Factory()
    with pytest.raises(EntityNotFound) as e:
        ask(f, "who is married to [ada]?", mode=mode)
    assert e.value.suggestions == ["Ada"] and not f.asked
    with pytest.raises(EntityNotFound):
        ask(f, "who is married to her?", entities=["No Such Person"], mode=mode)


def test_ask_links_checks_answers_and_renders_one_document() -> None:
    f = Factory()
    result = ask(f, "who is married to [Ada]?")
    assert f.asked == [("graph", ["Ada"])] and result.entities == ("Ada",)
    doc = result.to_json()
    assert doc["answer"] == "Ben" and "MATCH" in doc["browser_cypher"]
    assert "linked_entity" not in doc and "saved_run" not in doc
    linked = ask(f, "who is married to Ada?")
    assert linked.linked == "Ada" and linked.to_json()["linked_entity"] == "Ada"
    # closed-book modes may ask about no entity at all
    assert ask(f, "who wrote Hamlet?", mode="llm").entities == ()
    with pytest.raises(ConfigError, match="unknown mode"):
        ask(f, "q [Ada]", mode="nope")
