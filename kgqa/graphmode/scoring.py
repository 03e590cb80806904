"""How a sub-question is compared with the steps at the frontier: embedding similarity between
the question (its ``[entity]`` written as X) and each step's phrasings from the KB profile.

Measured against the other signals in ``benchmarks/bench_relation_signals.py`` (results in
docs/results.md): the cheap signal graph mode uses for a one-step question and for a free-text
step."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from kgqa.answers.brackets import BRACKETED
from kgqa.graph.paths import PathStep
from kgqa.graphmode.walk import Groups, OptionScorer
from kgqa.profile.model import KBProfile
from kgqa.profile.steps import PLACEHOLDER


def normalize_question(text: str) -> str:
    """``[Entity]`` -> ``X``: the phrasings speak of the hop's start entity as X."""
    return BRACKETED.sub(PLACEHOLDER, text)


def phrase_scorer(embed: Callable[[list[str]], np.ndarray], profile: KBProfile) -> OptionScorer:
    """Score each step by the best dot product between the sub-question and the step's
    phrasings. Phrasing vectors are embedded once per step and kept."""

    @cache
    def vectors(step: PathStep) -> np.ndarray:
        return embed(list(profile.step_phrases(step)))

    def score(text: str, groups: Groups) -> dict[PathStep, float]:
        q = embed([normalize_question(text)])[0]
        return {key: float((vectors(PathStep(*key)) @ q).max()) for key in groups}

    return score
