"""MetaQA (vanilla): what only this benchmark has. Its data folder is in the generic layout
(:mod:`kgqa.eval.datasets`); its qtype labels (``writer_to_movie_to_genre``) name relation
paths over its movie KB, which the faithfulness check walks for omissions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kgqa.check import FaithfulnessChecker
from kgqa.errors import KGQAError

# The layout's readers, still importable from here for the benchmarks that read MetaQA
# (benchmarks/bench_retrieval.py, bench_step_grammar.py); new code imports kgqa.eval.datasets.
from kgqa.eval.datasets import Question
from kgqa.eval.datasets import load_split as load_split
from kgqa.eval.datasets import sample as sample
from kgqa.eval.faithfulness import eval_checker
from kgqa.graph.paths import PathStep, RelationPath
from kgqa.types import Answer

# qtype token -> relation. ``movie_to_X`` follows X's relation out of the movie, ``X_to_movie``
# follows it backwards into the movie (MetaQA's subjects are always movies).
METAQA_RELATIONS: Mapping[str, str] = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "genre": "has_genre",
    "language": "in_language",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}


def metaqa_path(qtype: str) -> RelationPath:
    """The relation path of a MetaQA qtype: ``writer_to_movie_to_genre`` ->
    ``(written_by, in), (has_genre, out)``."""
    nodes = qtype.strip().split("_to_")
    steps: list[PathStep] = []
    for a, b in zip(nodes, nodes[1:], strict=False):
        if a == "movie" and b in METAQA_RELATIONS:
            steps.append(PathStep(METAQA_RELATIONS[b], True))
        elif b == "movie" and a in METAQA_RELATIONS:
            steps.append(PathStep(METAQA_RELATIONS[a], False))
        else:
            raise KGQAError(
                f"unknown MetaQA qtype {qtype!r}: each step is movie_to_X or X_to_movie with X "
                f"in {', '.join(sorted(METAQA_RELATIONS))}"
            )
    if not steps:
        raise KGQAError(f"unknown MetaQA qtype {qtype!r}: no step")
    return tuple(steps)


def gold_path(q: Question) -> RelationPath | None:
    """The question's gold path from its qtype label (``None`` without one); an unknown label
    is a :class:`KGQAError` (the eval hook records it as ``faith_error``)."""
    return metaqa_path(q.qtype) if q.qtype else None


def metaqa_checker(checker: FaithfulnessChecker) -> Callable[[Question, Answer], dict[str, Any]]:
    """The eval hook with MetaQA's gold paths (:func:`kgqa.eval.faithfulness.eval_checker`)."""
    return eval_checker(checker, gold_path)
