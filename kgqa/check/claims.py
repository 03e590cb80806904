"""The checklist of one answer: every entity it names, where (final answer, sub-answer i,
reasoning) and from which span, read with :mod:`kgqa.answers` and one batched exact look-up
(the precise rules: docs/faithfulness.md, "Claims")."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgqa.answers import (
    MAX_ITEM_WORDS,
    TITLE_ENDINGS,
    EntityNames,
    Item,
    answer_items,
    declines,
    looks_like_name,
    name_spans,
    norm,
    pick_names,
    text_candidates,
)
from kgqa.types import Answer

STAGE_ANSWER = "answer"
STAGE_REASONING = "reasoning"


def sub_answer_stage(index: int) -> str:
    """The stage label of sub-answer ``index`` (1-based, as in ``SubAnswer.index``)."""
    return f"sub-answer {index}"


@dataclass(frozen=True)
class Claim:
    """One checklist item: an entity the answer names, where, and whether the KB supports it.

    ``stage`` is ``answer``, ``sub-answer i`` or ``reasoning``; ``span`` the text item it was
    read from; ``entity`` the KB name it resolved to (``None``: no entity has that name);
    ``on_path`` (final-answer claims, when a relation path is known) whether the path reaches
    it: a supported claim off the path is a wrong but real answer, not a hallucination."""

    stage: str
    span: str
    entity: str | None
    supported: bool
    reason: str
    on_path: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "span": self.span,
            "entity": self.entity,
            "supported": self.supported,
            "reason": self.reason,
            "on_path": self.on_path,
        }


@dataclass(frozen=True)
class Mention:
    """A candidate claim before the KB judges it."""

    stage: str
    span: str
    name: str
    # Graph mode: the triple ids the answer says support this entity.
    support: tuple[int, ...] | None = None
    # Counts as a claim only if some entity has this name (ignoring case).
    tentative: bool = False


def read_mentions(
    answer: Answer, exact: Callable[[set[str]], set[str]], stop_words: Collection[str]
) -> tuple[list[Mention], set[str]]:
    """Every candidate claim of ``answer`` with its stage and span, and the exact KB names
    among all candidates: one batched look-up (``exact``) of every listed name and every
    name-like span of the free text, which is then parsed with the names known."""
    lists: list[tuple[str, Sequence[tuple[str, tuple[int, ...] | None]]]] = []
    texts: list[tuple[str, str]] = []
    if answer.ranked_entities:
        lists.append(
            (STAGE_ANSWER, [(e.name, tuple(e.support) or None) for e in answer.ranked_entities])
        )
    elif answer.text.strip():
        texts.append((STAGE_ANSWER, answer.text))
    for s in answer.sub_answers:
        stage = sub_answer_stage(s.index)
        if s.entities:
            lists.append((stage, [(n, None) for n in s.entities]))
        elif s.answer.strip():
            texts.append((stage, s.answer))
    reasoning_spans = name_spans(answer.reasoning, 2, stop_words) if answer.reasoning else []

    candidates: set[str] = {s.text for s in reasoning_spans}
    candidates |= {n for _, items in lists for n, _ in items}
    for _, text in texts:
        candidates |= text_candidates(text, stop_words)
    known = exact(candidates) if candidates else set()
    by_norm: dict[str, list[str]] = {}
    for name in sorted(known):
        by_norm.setdefault(norm(name), []).append(name)

    mentions: list[Mention] = []
    for stage, items in lists:
        mentions += [Mention(stage, n, n, support) for n, support in items if n.strip()]
    vocab = EntityNames(by_norm) if by_norm else None
    for stage, text in texts:
        for item in answer_items(text, (), vocab):
            mentions += _item_mentions(stage, item, known, by_norm, stop_words)
    for span in pick_names(reasoning_spans, known.__contains__):
        mentions.append(Mention(STAGE_REASONING, span.text, span.text))
    return mentions, known


def _item_mentions(
    stage: str,
    item: Item,
    known: set[str],
    by_norm: Mapping[str, list[str]],
    stop_words: Collection[str],
) -> list[Mention]:
    if item.known:
        exact = item.text if item.text in known else by_norm[norm(item.text)][0]
        return [Mention(stage, item.text, exact)]
    # The shared parser strips final "!", "." and "?", which some titles end with
    # ("Hatari!", "With Friends Like These..."): the text had them, so that is the name.
    for name in sorted(known):
        if name.startswith(item.text) and not name[len(item.text) :].strip(TITLE_ENDINGS):
            return [Mention(stage, name, name)]
    inner = pick_names(name_spans(item.text, 1, stop_words), known.__contains__)
    if inner:
        return [Mention(stage, item.text, s.text) for s in inner]
    if declines(item.text) or len(item.text.split()) > MAX_ITEM_WORDS:
        return []
    # No exact KB name: a case-insensitive look-up decides; failing it, a name-like item
    # ("John Smith") is a mistake and a phrase ("based on the triples") no claim at all.
    return [Mention(stage, item.text, item.text, tentative=not looks_like_name(item.text))]
