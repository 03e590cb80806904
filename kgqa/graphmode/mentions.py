"""Which of the KB's relations a question's own words name: "who co-wrote films with [X]"
names the relation whose words are "written by" / "who wrote X", and no relation about
actors.

A small model writing steps sometimes ends a path with a relation the question never speaks
of ("movies written by [X]", then "actors of those movies" for "who co-wrote films with
[X]"), and an embedding of the whole path reads both endings about as close to the question.
The question's words are a sharper signal there: a path each of whose relations the question
names beats one with a relation it does not (:meth:`RelationMentions.covers`).

A relation's words are the profile's (its name, verb, nouns and questions), less those that
another relation's words share (the kinds of node many relations link, "movies", "players")
and glue words; its inverse counts as the same relation. A question word names a relation
when it is one of those words, shares a long enough beginning with one ("acted" / "actors",
"writers" / "written"), or contains one's first four letters ("screenwriter" / "writ"). Plain
English; no KB is known here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from kgqa.graph.paths import PathStep
from kgqa.graphmode.asked import FUNCTION_WORDS
from kgqa.profile.model import KBProfile

_BRACKETED = re.compile(r"\[[^\]]*\]")
_WORD = re.compile(r"[a-z]+")
# Glue words of questions and of the profile's relation questions ("which movies did X
# direct"): they name no relation.
_GLUE = FUNCTION_WORDS | frozenset(["what", "how", "many", "much", "it", "x"])


def words(text: str) -> list[str]:
    """The content words of ``text``, lower-cased, bracketed names left out."""
    return [w for w in _WORD.findall(_BRACKETED.sub(" ", text.lower())) if w not in _GLUE]


def _names(word: str, own: str) -> bool:
    """Whether question ``word`` names a relation word ``own``."""
    if word == own:
        return True
    n = 0
    while n < min(len(word), len(own)) and word[n] == own[n]:
        n += 1
    if n >= 3 and n >= 0.6 * min(len(word), len(own)):
        return True
    return len(own) >= 4 and len(word) > len(own) and own[:4] in word


class RelationMentions:
    """The profile's relations and the question words that name each of them."""

    def __init__(self, profile: KBProfile):
        self._canonical: Callable[[PathStep], PathStep] = profile.canonical
        own: dict[str, set[str]] = {}
        for rel in profile.relations.values():
            w = rel.words
            text = " ".join(
                [
                    rel.relation.replace("_", " "),
                    w.words,
                    w.verb,
                    w.object,
                    w.ask_object,
                    w.ask_subject,
                ]
            )
            own.setdefault(self._base(rel.relation), set()).update(words(text))
        shared = Counter(word for ws in own.values() for word in ws)
        self.words = {r: frozenset(w for w in ws if shared[w] == 1) for r, ws in own.items()}

    def _base(self, relation: str) -> str:
        return self._canonical(PathStep(relation, True)).relation

    def naming(self, question: str, relation: str) -> set[str]:
        """The question's words that name ``relation`` (or its inverse)."""
        own = self.words.get(self._base(relation), frozenset())
        return {q for q in words(question) if any(_names(q, w) for w in own)}

    def covers(self, question: str, path: Sequence[PathStep]) -> int | None:
        """How many of the question's words name the path's relations, or ``None`` where the
        question names some relation of the path by no word."""
        named: set[str] = set()
        for step in path:
            found = self.naming(question, step.relation)
            if not found:
                return None
            named |= found
        return len(named)

    def best(self, question: str, paths: Iterable[Sequence[PathStep]]) -> list[int]:
        """Of ``paths``, the indexes of those the question names every relation of, with the
        most of its words; empty where it names every relation of none."""
        counts = [self.covers(question, p) for p in paths]
        top = max((c for c in counts if c is not None), default=None)
        return [i for i, c in enumerate(counts) if top is not None and c == top]
