"""``ask``: one question answered, as the CLI and the server serve it.

Links the topic entities (the question's ``[brackets]``, the ones given, or one found in the
question's words), checks that they are in the graph (an unknown or mis-cased name is an
:class:`~kgqa.errors.EntityNotFound` with suggestions, in every mode), answers in the chosen
mode, and optionally checks the answer against the graph and saves the run. The CLI renders an
:class:`AskResult`; nothing here prints.

With an :class:`~kgqa.cache.AnswerCache` the answer is looked up first, keyed by everything it
depends on (:mod:`kgqa.cache.keys`; the topic entities are still linked and checked against
the graph), and stored after; a run to save (``save``) is always answered afresh. With an
:class:`~kgqa.progress.Observer` each stage is reported as it ends (the server's stream).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kgqa.answers import topic_names
from kgqa.errors import ConfigError
from kgqa.modes import CLOSED_BOOK, MODES

if TYPE_CHECKING:
    from kgqa.cache import AnswerCache, CacheInfo
    from kgqa.check.report import FaithReport
    from kgqa.factory import Factory
    from kgqa.pipeline.base import QAPipeline
    from kgqa.progress import Observer
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
    # Whether the answer came from the answer cache (and its key), when one was used.
    cache: CacheInfo | None = None

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
        if self.cache is not None:
            out["cache"] = self.cache.to_json()
        return out


class Pipelines:
    """Each mode's pipeline built once from one factory, its stages observable
    (:func:`kgqa.progress.observed`): what a long-running server answers with. ``kgqa ask``
    builds the one it needs (:func:`ask` without ``pipelines``)."""

    def __init__(self, factory: Factory):
        self.factory = factory
        self._built: dict[str, QAPipeline] = {}

    def get(self, mode: str) -> QAPipeline:
        if mode not in self._built:
            from kgqa.progress import observed

            self._built[mode] = observed(self.factory.pipeline(mode))
        return self._built[mode]


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


def _prepared(
    factory: Factory, question: str, entities: Sequence[str], mode: str
) -> tuple[str, list[str], str | None]:
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    from kgqa.cache.keys import normalize_question

    question = normalize_question(question)
    topic, linked = topic_entities(factory, question, entities, mode)
    return question, topic, linked


def _lookup(
    factory: Factory,
    cache: AnswerCache,
    question: str,
    topic: Sequence[str],
    linked: str | None,
    mode: str,
    check: bool,
) -> tuple[str, AskResult | None]:
    from kgqa.cache import CacheInfo
    from kgqa.cache.keys import answer_key

    key = answer_key(factory.settings, question, topic, mode, check=check)
    hit = cache.get(key)
    if hit is None:
        return key, None
    result, stored_at = hit
    return key, replace(result, linked=linked, cache=CacheInfo(True, key, stored_at))


def cached(
    factory: Factory,
    cache: AnswerCache | None,
    question: str,
    *,
    entities: Sequence[str] = (),
    mode: str = "graph",
    check: bool = False,
) -> AskResult | None:
    """The answer :func:`ask` would take from ``cache``, or ``None``: no LLM call, so the
    server serves hits without queueing them. The topic entities are linked and checked as
    :func:`ask` does, with a cache or without (an unknown one raises the same error before
    anything is queued)."""
    question, topic, linked = _prepared(factory, question, entities, mode)
    if cache is None:
        return None
    return _lookup(factory, cache, question, topic, linked, mode, check)[1]


def ask(
    factory: Factory,
    question: str,
    *,
    entities: Sequence[str] = (),
    mode: str = "graph",
    check: bool = False,
    save: bool = False,
    cache: AnswerCache | None = None,
    observer: Observer | None = None,
    pipelines: Pipelines | None = None,
) -> AskResult:
    """Answer ``question`` (see the module doc). The question is answered with its
    whitespace collapsed, as the cache keys it. ``pipelines``: each mode's pipeline built
    once (the server); without, the mode's pipeline is built for this question."""
    from kgqa.progress import observed, observing

    question, topic, linked = _prepared(factory, question, entities, mode)
    if observer is not None:
        observer.emit("entities", {"entities": topic, "linked": linked})
    key = None
    if cache is not None and not save:
        key, hit = _lookup(factory, cache, question, topic, linked, mode, check)
        if hit is not None:
            return hit
    if pipelines is not None:
        pipeline = pipelines.get(mode)
    else:
        pipeline = factory.pipeline(mode)
        if observer is not None:
            pipeline = observed(pipeline)
    with observing(observer):
        answer = pipeline.answer(question, topic)
    if observer is not None:
        observer.check()
    report = None
    if check:
        from kgqa.check import FaithfulnessChecker, ask_hops

        stop = factory.profile().stop_words if mode != "llm" else ()
        checker = FaithfulnessChecker(factory.rubric(), extra_stop_words=stop)
        report = checker.check(answer, topic, ask_hops(answer))
        if observer is not None:
            observer.emit("check", report.to_json())
    run_id = None
    if save:
        from kgqa.answers import answer_names

        run_id = factory.graph().save_run(answer, answer_names=answer_names(answer.text))
    from kgqa.graph.inspect import answer_cypher

    schema = getattr(factory.graph(), "schema", None)
    cypher = answer_cypher(answer, schema=schema)
    result = AskResult(answer, tuple(topic), linked, report, run_id, cypher)
    if cache is not None and key is not None:
        from kgqa.cache import CacheInfo

        stored_at = cache.put(key, result)
        if stored_at is not None:
            result = replace(result, cache=CacheInfo(False, key, stored_at))
    return result
