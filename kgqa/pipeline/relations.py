"""How a relation is asked about: phrasings per (relation, direction), the cheap signal that
graph mode uses to choose which relation a sub-question follows.

Measured on 200 seeded 1-hop dev questions (docs/results.md): choosing the gold relation by
embedding similarity to these phrasings is right 99.5 % of the time, against 68 % for the
best-matching triple and 87 % (30 questions) for the 1.5B LLM choosing with a grammar.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from kgqa.errors import ConfigError
from kgqa.types import Edge

Key = tuple[str, bool]  # (relation, outgoing)
_BRACKETED = re.compile(r"\[[^\]]+\]")
PLACEHOLDER = "X"


def generated_phrases(relation: str, outgoing: bool) -> list[str]:
    """Phrasings for a relation nobody described, from its name alone."""
    words = relation.replace("_", " ").strip()
    if outgoing:
        return [f"what is the {words} of {PLACEHOLDER}", f"{PLACEHOLDER} {words} what"]
    return [f"what is {words} {PLACEHOLDER}", f"which have {words} {PLACEHOLDER}"]


class RelationPhrases:
    """``phrases(relation, outgoing)``: described phrasings, else generated ones; ``words``:
    each described relation's step vocabulary (``noun``, ``verb``) and ``subject_noun``."""

    def __init__(
        self,
        described: dict[Key, list[str]],
        words: dict[str, tuple[str, str]] | None = None,
        subject_noun: str = "movies",
    ):
        self.described = described
        self.words = words or {}
        self.subject_noun = subject_noun

    @classmethod
    def load(cls, path: Path | None = None) -> RelationPhrases:
        """A TOML file of ``[relation] out = [...] in = [...]``; default: the packaged
        phrasings for MetaQA's movie relations."""
        try:
            text = (
                path.read_text(encoding="utf-8")
                if path is not None
                else (resources.files("kgqa") / "data" / "relations_metaqa.toml").read_text(
                    encoding="utf-8"
                )
            )
            data = tomllib.loads(text)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read relation phrasings {path}: {e}") from e
        described: dict[Key, list[str]] = {}
        words: dict[str, tuple[str, str]] = {}
        for relation, table in data.items():
            if not isinstance(table, dict):
                continue
            for direction, outgoing in (("out", True), ("in", False)):
                phrases = table.get(direction)
                if phrases:
                    described[(relation, outgoing)] = [str(p) for p in phrases]
            if table.get("noun") and table.get("verb"):
                words[relation] = (str(table["noun"]), str(table["verb"]))
        return cls(described, words, str(data.get("subject_noun", "movies")))

    def phrases(self, relation: str, outgoing: bool) -> list[str]:
        return self.described.get((relation, outgoing)) or generated_phrases(relation, outgoing)


def normalize_question(text: str) -> str:
    """``[Entity]`` -> ``X``: the phrasings speak of the hop's start entity as X."""
    return _BRACKETED.sub(PLACEHOLDER, text)


def phrase_scorer(
    embed: Callable[[list[str]], np.ndarray], phrases: RelationPhrases
) -> Callable[[str, dict[Key, list[Edge]]], dict[Key, float]]:
    """Score each option by the best dot product between the sub-question and the option's
    phrasings. Phrasing vectors are embedded once per option and kept."""

    @cache
    def vectors(key: Key) -> np.ndarray:
        return embed(phrases.phrases(*key))

    def score(text: str, groups: dict[Key, list[Edge]]) -> dict[Key, float]:
        q = embed([normalize_question(text)])[0]
        return {key: float((vectors(key) @ q).max()) for key in groups}

    return score


# -- the step vocabulary ------------------------------------------------------------------------

_GBNF_SPECIAL = str.maketrans({"\\": "\\\\", '"': '\\"'})


def _lit(text: str) -> str:
    return '"' + text.translate(_GBNF_SPECIAL) + '"'


class StepVocabulary:
    """The steps graph mode's decomposition may write, one per (relation, direction), and the
    GBNF grammar that holds the LLM to them.

    From a subject (a movie) a step follows a relation out ("directors of [Gigi]", "directors
    of those movies"); from anything else it follows one in ("movies directed by [Ridley
    Scott]"); a later step back into movies goes along the relation just followed and reads
    "movies of those directors". The grammar tracks which side of the
    relations the frontier is on, so a step can only ask for what the frontier can have, and
    the first step can only follow a relation the topic entity actually has. Each step maps
    back to exactly one (relation, direction): the walk needs no guess about what a step
    meant.
    """

    def __init__(self, phrases: RelationPhrases, relations: Sequence[str] | None = None):
        self.subject_noun = phrases.subject_noun
        names = sorted(relations if relations is not None else phrases.words)
        self.words: dict[str, tuple[str, str]] = {}
        for relation in names:
            spoken = relation.replace("_", " ").strip()
            self.words[relation] = phrases.words.get(relation, (spoken, f"with {spoken}"))
        self._parse: list[tuple[re.Pattern[str], Key]] = []
        # "movies of those directors": back into subjects along the relation just followed.
        self._back = re.compile(rf"^{re.escape(self.subject_noun)} of those (.+?)\??$", re.I)
        for relation, (noun, verb) in self.words.items():
            subj = re.escape(self.subject_noun)
            self._parse.append(
                (
                    re.compile(rf"^{re.escape(noun)} of (?:those {subj}|\[.+\])\??$", re.I),
                    (relation, True),
                )
            )
            self._parse.append(
                (
                    re.compile(rf"^{subj} {re.escape(verb)} (?:those .+|\[.+\])\??$", re.I),
                    (relation, False),
                )
            )

    def key(self, step: str) -> Key | None:
        """The (relation, outgoing) a step written in this vocabulary follows, else ``None``."""
        text = step.strip()
        back = self._back.match(text)
        if back is not None:
            noun = back.group(1).lower()
            return next(((r, False) for r, (n, _) in self.words.items() if n.lower() == noun), None)
        for pattern, key in self._parse:
            if pattern.match(text):
                return key
        return None

    def grammar(self, first: Iterable[Key], max_steps: int, end: str = "<END>") -> str:
        """GBNF for up to ``max_steps`` numbered steps, then ``end``; step 1 follows one of
        ``first`` (the options at the topic entity), each later step continues from the side
        of the relation the previous one reached."""
        first = sorted(k for k in set(first) if k[0] in self.words)
        if not first or max_steps < 1:
            raise ValueError("a step grammar needs at least one first option and one step")
        subj = self.subject_noun
        rules: dict[str, str] = {}

        def after(relation: str, outgoing: bool, n: int) -> str:
            """The rule name for 'step n just followed (relation, outgoing)'."""
            return f"s{n}-{'o' if outgoing else 'i'}-{relation.replace('_', '-')}"

        def step_text(relation: str, outgoing: bool, anchor: str) -> str:
            noun, verb = self.words[relation]
            return _lit(f"{noun} of {anchor}" if outgoing else f"{subj} {verb} {anchor}")

        def next_text(previous: str, outgoing: bool, relation: str) -> str:
            """Step n+1 after following ``previous``: from subjects, "genres of those
            movies"; back into subjects, "movies of those directors"."""
            if not outgoing:
                return step_text(relation, True, f"those {subj}")
            return _lit(f"{subj} of those {self.words[previous][0]}")

        def alternatives(options: list[tuple[str, bool, str]], n: int) -> str:
            return " | ".join(f"{text} {after(r, o, n)}" for r, o, text in options)

        # root: step 1 from the topic entity, written with its [brackets].
        name = '"[" [^\\]\\n]+ "]"'
        root = [(r, o, f"{step_text(r, o, '')} {name}") for r, o in first]
        rules["root"] = f'"1. " ({alternatives(root, 1)})'
        for n in range(1, max_steps + 1):
            for relation in self.words:
                for outgoing in (True, False):
                    if n == 1 and (relation, outgoing) not in first:
                        continue
                    if n < max_steps:
                        # After an in-step the frontier is subjects: any relation out. After
                        # an out-step it is the relation's objects, and the only way on is
                        # back into subjects along the same relation ("movies of those directors"): a small model
                        # offered "movies starring those directors" too takes it for "the
                        # movies ... starred who" and drops the last step (6 of 60 3-hop dev
                        # decompositions, seeds 0-1). Paths that enter subjects along another
                        # relation are thus not written; no MetaQA question needs one.
                        nxt = (
                            [(relation, False, next_text(relation, outgoing, relation))]
                            if outgoing
                            else [(r, True, next_text(relation, outgoing, r)) for r in self.words]
                        )
                        more = f'"\\n{n + 1}. " ({alternatives(nxt, n + 1)})'
                        rules[after(relation, outgoing, n)] = f'"\\n" {_lit(end)} | {more}'
                    else:
                        rules[after(relation, outgoing, n)] = f'"\\n" {_lit(end)}'
        return "\n".join(f"{k} ::= {v}" for k, v in rules.items()) + "\n"
