"""What a question asks for, read from its English wording, and which of the KB's kinds of
node that is: the end that graph mode's step grammar then holds the path to.

A small model writing steps decides two things at once: which relations to follow and when
to stop. It often stops a step short ("where is the club that [X] plays for" -> the club) or
runs a step on ("which team does [X] play for" -> the club, its players, their positions).
The question's own wh-phrase says where the path must end, in any KB: "which team", "what
number", "the nationality of" name the thing asked for; "who", "where" and "when" ask for a
person, a place, a time. :func:`asked_phrase` finds that phrase (plain English, no KB
knowledge); :class:`AskedKinds` compares it with the names the KB's steps give the nodes they
reach (the profile's nouns: "clubs", "countries", "directors") by embedding, and keeps the
nouns that match clearly, or none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_BRACKETED = re.compile(r"\[[^\]]*\]")
_WORD = re.compile(r"[a-z][a-z'-]*|'s\b|\x00")
_TOPIC = "\x00"
# Auxiliaries and modals: after "which <noun phrase>" they end the phrase ("which team does").
_AUX = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "'s",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
    ]
)
# Words that end a noun phrase ("which films [share] ...": a verb) cannot be told from nouns
# without a tagger; these common ones can.
_STOP = _AUX | frozenset(
    [
        "of",
        "for",
        "in",
        "on",
        "at",
        "by",
        "from",
        "with",
        "to",
        "into",
        "about",
        "as",
        "than",
        "that",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "and",
        "or",
        "not",
        "no",
    ]
)
_DETERMINERS = frozenset(
    ["the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her"]
)
# Words that name nothing in a question: auxiliaries, prepositions, wh-words, determiners
# (kgqa.graphmode.mentions reads relation names past them too).
FUNCTION_WORDS = _STOP | _DETERMINERS
# A noun phrase ends at its verb ("which person [wrote] the movie", "what language [spoken]"):
# past forms, "co-" verbs ("co-write"), and common verbs questions put right after their noun.
_VERBS = frozenset(
    [
        "wrote",
        "written",
        "share",
        "shares",
        "describe",
        "describes",
        "spoken",
        "appear",
        "appears",
        "play",
        "plays",
        "wear",
        "wears",
        "fall",
        "falls",
        "made",
        "did",
        "went",
        "won",
    ]
)
# Nouns that ask for a person as "who" does: the kind, not a thing of it.
_PERSON = frozenset(["person", "people", "persons", "someone", "somebody"])
# A name is asked for by the words after these ("the names of the directors").
_EMPTY_HEADS = frozenset(["name", "names", "one", "ones"])
# Imperatives that ask for a list of things: "name a club that ...", "list the films ...".
_IMPERATIVE = frozenset(["name", "list", "give", "show", "find", "tell"])
# wh-words without a noun: what they ask for, in words an embedder can compare with a KB's
# nouns for its kinds of node.
WH_PHRASES = {
    "who": "person or people",
    "whom": "person or people",
    "where": "place, location or country",
    "when": "time, date or year",
}
# At most this many words of a noun phrase are compared (its head is among them).
_PHRASE_WORDS = 3


@dataclass(frozen=True)
class Asked:
    """The words that say what a question asks for. ``words``: the noun phrase's words (any
    of which may be its head: "prefessional football team"); ``wh``: a bare wh-word's reading
    ("person or people") when the question has no noun for it."""

    words: tuple[str, ...]
    wh: str | None = None
    # The bare wh-word itself ("who"), when that is what asks.
    word: str | None = None

    @property
    def held(self) -> bool:
        """Whether the path must end at the first step that reaches the thing named: a noun
        ("which team") says what the answer is; "who" only what kind it is (the path may
        pass through people first: "who acted in the films directed by the director of X")."""
        return self.wh is None

    def texts(self) -> list[str]:
        """What is compared with the KB's nouns: the bare wh-word's reading, or the noun
        phrase and its head (its last word: "team" of "professional football team")."""
        if self.wh is not None:
            return [self.wh]
        return list(dict.fromkeys([" ".join(self.words), self.words[-1]]))


def asked_phrase(question: str) -> Asked | None:
    """The phrase that says what ``question`` asks for, or ``None`` ("how many", "describe
    [X]", "what did [X] direct": nothing names it)."""
    text = _BRACKETED.sub(f" {_TOPIC} ", question.lower().replace("’", "'"))
    text = re.sub(r"\s+'s\b", " 's", text)
    words = _WORD.findall(text)
    if "how" in words:
        return None
    for i, w in enumerate(words):
        if w in WH_PHRASES:
            return Asked((), WH_PHRASES[w], w)
        if w in ("which", "what"):
            return _after(words, i + 1)
        if i == 0 and w in _IMPERATIVE:
            return _after(words, 1)
    return None


def _after(words: Sequence[str], i: int) -> Asked | None:
    """The noun phrase that starts at ``words[i]`` (after "which"/"what"/"name"), read past a
    copula ("what is the nationality of ..."), a possessive ("what is [X] 's nationality")
    and an empty head ("the names of the directors ...")."""
    if i < len(words) and words[i] in _AUX:
        i += 1
        if i < len(words) and words[i] == _TOPIC:
            j = i + 1
            if j < len(words) and words[j] == "'s":
                return _phrase(words, j + 1)
            return None
    return _phrase(words, i)


def _phrase(words: Sequence[str], i: int) -> Asked | None:
    while i < len(words) and words[i] in _DETERMINERS:
        i += 1
    found: list[str] = []
    while i < len(words) and not _ends_phrase(words[i]):
        if words[i] != "'s":
            found.append(words[i])
        i += 1
    if found and found[-1] in _EMPTY_HEADS and i < len(words) and words[i] == "of":
        return _phrase(words, i + 1)
    found = [w for w in found if w not in _EMPTY_HEADS][:_PHRASE_WORDS]
    if found and found[0] in _PERSON:
        return Asked((), WH_PHRASES["who"], "who")
    return Asked(tuple(found)) if found else None


def _ends_phrase(word: str) -> bool:
    return (
        word in _STOP
        or word in _DETERMINERS
        or word in _VERBS
        or word == _TOPIC
        or (len(word) > 4 and word.endswith("ed"))
        or (word.startswith("co-") and not word.endswith("s"))
    )


_OTHER_SKIPPED = frozenset([_TOPIC, "'s", "what", "how", "why"])


def other_words(question: str) -> list[str]:
    """The words of ``question`` that may name a kind of node, apart from the word that labels
    its entity ("movie" of "describe the movie [X]": what the entity is, not what is asked
    for): no function words, nothing inside brackets."""
    text = _BRACKETED.sub(f" {_TOPIC} ", question.lower().replace("’", "'"))
    text = re.sub(r"\s+'s\b", " 's", text)
    words = _WORD.findall(text)
    label = {i - 1 for i, w in enumerate(words) if w == _TOPIC and i > 0}
    found = [
        w
        for i, w in enumerate(words)
        if i not in label and w not in FUNCTION_WORDS and w not in _OTHER_SKIPPED
    ]
    return list(dict.fromkeys(found))


class AskedKinds:
    """Which of a KB's nouns for its kinds of node a question asks for.

    ``embed``: texts -> unit vectors; ``nouns``: each noun the step vocabulary gives the
    nodes its steps reach, with a few real names of such nodes. A noun's score is the mean
    of its best similarity to the phrase's texts as a bare word and as the word with its
    names ("clubs, such as Juventus FC, ..."): the bare word alone takes "team" for "people",
    the names alone are weak for a word like "ages". A noun is asked for when its score is at
    least ``floor`` and within ``margin`` of the best noun's; none is when even the best stays
    under ``floor`` (the question's words name nothing the KB has).

    ``asks``: the wh-words the KB's own questions for each noun begin with (the profile's
    "who directed X" makes "directors" a "who" noun): a bare wh-word asks for those nouns
    too, whatever an embedder makes of "person" against "directors"."""

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        nouns: Mapping[str, Sequence[str]],
        floor: float = 0.40,
        margin: float = 0.06,
        asks: Mapping[str, Collection[str]] | None = None,
    ):
        self.embed = embed
        self.asks = dict(asks or {})
        self.nouns = list(nouns)
        self.floor = floor
        self.margin = margin
        described = [
            f"{n}, such as {', '.join(names)}" if names else n for n, names in nouns.items()
        ]
        self._bare = embed(self.nouns) if self.nouns else np.zeros((0, 1), dtype=np.float32)
        self._named = embed(described) if self.nouns else self._bare

    def scores(self, asked: Asked, among: Sequence[str] | None = None) -> dict[str, float]:
        """Each noun's (of ``among``, default all) score for the phrase."""
        keep = [i for i, n in enumerate(self.nouns) if among is None or n in among]
        if not keep:
            return {}
        q = self.embed(asked.texts())
        bare = (self._bare[keep] @ q.T).max(axis=1)
        named = (self._named[keep] @ q.T).max(axis=1)
        return {self.nouns[i]: float(s) for i, s in zip(keep, (bare + named) / 2, strict=True)}

    def named(self, question: str, noun: str) -> bool:
        """Whether a word of ``question`` other than its entity's label (:func:`other_words`)
        reads as ``noun`` as a noun phrase of that one word would be chosen: "the
        scriptwriter of [X] also wrote movies" names "movies"; "what are some words that
        describe movie [X]" does not."""
        if noun not in self.nouns:
            return False
        return any(noun in self.choose(Asked((w,))) for w in other_words(question))

    def choose(self, asked: Asked, among: Sequence[str] | None = None) -> list[str]:
        """The nouns asked for, best first; empty when none clearly is."""
        scores = self.scores(asked, among)
        if not scores:
            return []
        best = max(scores.values())
        chosen = (
            {n for n, s in scores.items() if s >= best - self.margin}
            if best >= self.floor
            else set()
        )
        if asked.word is not None:
            chosen |= {n for n in scores if asked.word in self.asks.get(n, ())}
        return sorted(chosen, key=lambda n: -scores[n])
