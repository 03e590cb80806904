"""How a sub-question is compared with the steps at the frontier: embedding similarity between
the question (its ``[entity]`` written as X) and each step's phrasings from the KB profile.

Measured against the other signals in ``benchmarks/bench_relation_signals.py`` (results in
docs/results.md): the cheap signal graph mode uses for a one-step question and for a free-text
step."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

import numpy as np

from kgqa.answers.brackets import BRACKETED
from kgqa.graph.paths import PathStep
from kgqa.graphmode.walk import Groups, OptionScorer
from kgqa.profile.model import KBProfile
from kgqa.profile.steps import PLACEHOLDER


def normalize_question(text: str, kind_words: Iterable[str] = ()) -> str:
    """``[Entity]`` -> ``X``: the phrasings speak of the hop's start entity as X. A word
    of ``kind_words`` (the names of the KB's kinds of node) right before the entity, with its
    article, goes too: "which words describe film [X]" reads as "which words describe X"."""
    text = BRACKETED.sub(PLACEHOLDER, text)
    words = tuple(sorted(kind_words, key=lambda w: (-len(w), w)))
    return _apposition(words).sub("", text) if words else text


@functools.lru_cache(maxsize=8)
def _apposition(words: tuple[str, ...]) -> re.Pattern[str]:
    """A kind word (with its article) right before the placeholder: "the film X"."""
    alternatives = "|".join(map(re.escape, words))
    return re.compile(rf"(?:\b(?:the|a|an)\s+)?\b(?:{alternatives})\s+(?={PLACEHOLDER}\b)", re.I)


def phrase_vectors(
    embed: Callable[[list[str]], np.ndarray], profile: KBProfile, steps: Iterable[PathStep]
) -> dict[PathStep, np.ndarray]:
    """The phrasings of ``steps`` embedded in one batch: one matrix (rows = phrasings) each."""
    steps = list(dict.fromkeys(PathStep(*s) for s in steps))
    texts = [list(profile.step_phrases(s)) for s in steps]
    flat = [t for group in texts for t in group]
    if not flat:
        return {}
    vectors = embed(flat)
    out: dict[PathStep, np.ndarray] = {}
    start = 0
    for step, group in zip(steps, texts, strict=True):
        out[step] = vectors[start : start + len(group)]
        start += len(group)
    return out


def phrase_scorer(
    embed: Callable[[list[str]], np.ndarray],
    profile: KBProfile,
    vectors: dict[PathStep, np.ndarray] | None = None,
) -> OptionScorer:
    """Score each step by the best dot product between the sub-question and the step's
    phrasings. ``vectors``: phrasings embedded beforehand (:func:`phrase_vectors`, kept beside
    the index); a step without them is embedded on first use and kept."""
    known: dict[PathStep, np.ndarray] = dict(vectors or {})

    def of(step: PathStep) -> np.ndarray:
        if step not in known:
            known[step] = embed(list(profile.step_phrases(step)))
        return known[step]

    def score(text: str, groups: Groups) -> dict[PathStep, float]:
        q = embed([normalize_question(text, profile.stop_words)])[0]
        return {key: float((of(PathStep(*key)) @ q).max()) for key in groups}

    return score
