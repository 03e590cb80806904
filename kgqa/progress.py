"""Stages as they happen: what ``kgqa serve`` streams while a question is answered.

The pipelines record their stages in the answer (``Answer.costs``, sub-answers, hops), which
exists only at the end. :func:`observed` wraps a pipeline's stage objects (the decomposer,
reformulator, answerer and synthesizer, the retriever, graph mode's walker) in pass-through
proxies that, while an :class:`Observer` is active (:func:`observing`), report each stage's
result and cost the moment it returns, and ask the observer before each stage whether to go
on (a request past its time limit stops at the next stage). The proxies return exactly what
the stage returned: an observed pipeline answers as the plain one does (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from kgqa.types import Candidates, Decomposition, ScoredTriple, StageCost, Triple

Emit = Callable[[str, dict[str, Any]], object]
# Triples shown per event (a hop of a hub may move along thousands of edges).
SHOWN_TRIPLES = 50
SHOWN_ENTITIES = 50


def _never_stop() -> None:
    return None


@dataclass(frozen=True)
class Observer:
    """``emit(event, data)`` for each stage; ``check()`` before each stage (it raises to stop
    the question there)."""

    emit: Emit
    check: Callable[[], None] = _never_stop


_current: ContextVar[Observer | None] = ContextVar("kgqa_observer", default=None)


@contextmanager
def observing(observer: Observer | None) -> Iterator[None]:
    """Report the stages of observed pipelines that run in this context to ``observer``."""
    token = _current.set(observer)
    try:
        yield
    finally:
        _current.reset(token)


def emit(event: str, data: dict[str, Any]) -> None:
    """Report ``event`` to the active observer, if any."""
    observer = _current.get()
    if observer is not None:
        observer.emit(event, data)


def triple_doc(t: Triple) -> dict[str, Any]:
    """A triple in an event: its id (and as a string, ``key``: a JavaScript number cannot
    hold a 63-bit id), its parts and its verbalization."""
    return {
        "id": t.id,
        "key": str(t.id),
        "subject": t.subject,
        "relation": t.relation,
        "object": t.object,
        "text": t.verbalize(),
    }


def triple_docs(scored: Sequence[ScoredTriple] | None) -> list[dict[str, Any]]:
    return [
        triple_doc(st.triple) | {"score": round(st.score, 6)}
        for st in (scored or ())[:SHOWN_TRIPLES]
    ]


def _cost_docs(costs: Sequence[StageCost]) -> list[dict[str, Any]]:
    return [
        {
            "stage": c.stage,
            "seconds": round(c.seconds, 4),
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "cut": c.cut,
        }
        for c in costs
    ]


def _describe(stage: str, args: tuple[Any, ...], result: Any) -> dict[str, Any]:
    if stage == "decomposition" and isinstance(result, Decomposition):
        return {
            "reasoning": result.reasoning,
            "sub_questions": list(result.sub_questions),
            "fallback": result.fallback,
        }
    if stage == "reformulation":
        return {"sub_question": args[0], "reformulated": result}
    if stage == "sub_answer":
        top = args[1] if len(args) > 1 else None
        return {"question": args[0], "answer": result, "triples": triple_docs(top)}
    if stage == "synthesis":
        return {"answer_text": result}
    return {}


class _Stage:
    """A stage object whose ``run`` is reported; everything else passes through."""

    def __init__(self, part: Any, stage: str):
        self._part = part
        self._stage = stage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._part, name)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        observer = _current.get()
        if observer is None:
            return self._part.run(*args, **kwargs)
        observer.check()
        # Every stage's last positional argument is the answer's cost list.
        costs = args[-1] if args and isinstance(args[-1], list) else []
        before = len(costs)
        result = self._part.run(*args, **kwargs)
        data = _describe(self._stage, args, result)
        data["costs"] = _cost_docs(costs[before:])
        observer.emit(self._stage, data)
        return result


class _Retriever:
    def __init__(self, part: Any):
        self._part = part

    def __getattr__(self, name: str) -> Any:
        return getattr(self._part, name)

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        observer = _current.get()
        if observer is not None:
            observer.check()
        result: Candidates = self._part.candidates(entities, hops)
        if observer is not None:
            observer.emit(
                "candidates",
                {
                    "entities": list(entities),
                    "hops": hops,
                    "count": len(result),
                    "per_hop": [len(h) for h in result.by_hop],
                    "truncated": result.truncated,
                    "seconds": round(result.seconds, 4),
                },
            )
        return result

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        observer = _current.get()
        if observer is not None:
            observer.check()
        result: list[ScoredTriple] = self._part.top_k(text, candidates, k)
        return result


def hop_docs(hops: Sequence[Any]) -> list[dict[str, Any]]:
    """Graph mode's hops (:class:`kgqa.graphmode.walk.Hop`) as events."""
    out = []
    for i, hop in enumerate(hops, 1):
        chosen = hop.chosen
        out.append(
            {
                "index": i,
                "sub_question": hop.sub_question,
                "start": hop.start,
                "step": chosen.describe() if chosen is not None else None,
                "score": round(chosen.score, 6) if chosen is not None else None,
                "skipped": bool(hop.restated or hop.missing is not None),
                "detour": hop.detour,
                "entity_count": len(hop.entities),
                "entities": list(hop.entities[:SHOWN_ENTITIES]),
                "triples": [triple_doc(t) for t in hop.triples[:SHOWN_TRIPLES]],
                "triple_count": len(hop.triples),
            }
        )
    return out


class _Walker:
    def __init__(self, part: Any):
        self._part = part

    def __getattr__(self, name: str) -> Any:
        return getattr(self._part, name)

    def _observed(self, method: str, *args: Any) -> Any:
        observer = _current.get()
        if observer is not None:
            observer.check()
        result = getattr(self._part, method)(*args)
        if observer is not None:
            hops, _answers = result
            for doc in hop_docs(hops):
                observer.emit("hop", doc)
        return result

    def walk(self, *args: Any) -> Any:
        return self._observed("walk", *args)

    def intersect(self, *args: Any) -> Any:
        return self._observed("intersect", *args)


_STAGES = (
    ("decomposer", "decomposition"),
    ("reformulator", "reformulation"),
    ("answerer", "sub_answer"),
    ("synthesizer", "synthesis"),
)
P = TypeVar("P")


def observed(pipeline: P) -> P:
    """``pipeline`` with its stage objects wrapped (in place, once; see the module doc)."""
    if getattr(pipeline, "_kgqa_observed", False):
        return pipeline
    for attr, stage in _STAGES:
        part = getattr(pipeline, attr, None)
        if part is not None:
            setattr(pipeline, attr, _Stage(part, stage))
    retriever = getattr(pipeline, "retriever", None)
    if retriever is not None:
        setattr(pipeline, "retriever", _Retriever(retriever))  # noqa: B010
    walker = getattr(pipeline, "walker", None)
    if walker is not None:
        setattr(pipeline, "walker", _Walker(walker))  # noqa: B010
    setattr(pipeline, "_kgqa_observed", True)  # noqa: B010
    return pipeline
