"""``ask``: one question answered, as the CLI and the server serve it.

Links the topic entities (the question's ``[brackets]``, the ones given, or one found in the
question's words), checks that they are in the graph (an unknown or mis-cased name is an
:class:`~kgqa.errors.EntityNotFound` with suggestions, in every mode), answers in the chosen
mode, and optionally checks the answer against the graph and saves the run. The CLI renders an
:class:`AskResult`; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgqa.answers import topic_names
from kgqa.errors import ConfigError
from kgqa.modes import CLOSED_BOOK, MODES

if TYPE_CHECKING:
    from kgqa.check.report import FaithReport
    from kgqa.factory import Factory
    from kgqa.types import Answer


@dataclass(frozen=True)
class AskResult:
    """An answered question: the answer, the topic entities it was asked about (``linked``:
    the one found in the question's words, when none was named), the faithfulness report
    (``check``), the saved run's id (``save``) and the Cypher that shows the evidence."""

    answer: Answer
    entities: tuple[str, ...]
    linked: str | None
    report: FaithReport | None
    run_id: str | None
    browser_cypher: str

    def to_json(self) -> dict[str, Any]:
        """The answer document (``kgqa ask --json``; the server's response)."""
        from kgqa.document import answer_document
        from kgqa.graph.inspect import run_cypher

        out = answer_document(self.answer)
        if self.report is not None:
            out["check"] = self.report.to_json()
        out["browser_cypher"] = self.browser_cypher
        if self.linked is not None:
            out["linked_entity"] = self.linked
        if self.run_id is not None:
            out["saved_run"] = {"run_id": self.run_id, "browser_cypher": run_cypher(self.run_id)}
        return out


def topic_entities(
    factory: Factory, question: str, entities: Sequence[str], mode: str
) -> tuple[list[str], str | None]:
    """The question's topic entities and the one linked from its words (if any), checked to be
    in the graph."""
    topic = topic_names(question, entities)
    linked = None
    if not topic and mode not in CLOSED_BOOK:
        linked = factory.graph().link_question(question)
        topic = [linked]
    if topic:
        factory.graph().require_entities(topic)
    return topic, linked


def ask(
    factory: Factory,
    question: str,
    *,
    entities: Sequence[str] = (),
    mode: str = "graph",
    check: bool = False,
    save: bool = False,
) -> AskResult:
    """Answer ``question`` (see the module doc)."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    topic, linked = topic_entities(factory, question, entities, mode)
    answer = factory.pipeline(mode).answer(question, topic)
    report = None
    if check:
        from kgqa.check import FaithfulnessChecker, ask_hops

        stop = factory.profile().stop_words if mode != "llm" else ()
        checker = FaithfulnessChecker(factory.rubric(), extra_stop_words=stop)
        report = checker.check(answer, topic, ask_hops(answer))
    run_id = None
    if save:
        from kgqa.answers import answer_names

        run_id = factory.graph().save_run(answer, answer_names=answer_names(answer.text))
    from kgqa.graph.inspect import answer_cypher

    schema = getattr(factory.graph(), "schema", None)
    cypher = answer_cypher(answer, schema=schema)
    return AskResult(answer, tuple(topic), linked, report, run_id, cypher)
