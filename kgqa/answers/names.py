"""Name spans in free text: the phrases that could name a KB entity, found without the KB
(capitalized runs, quoted and bracketed spans), then kept or dropped by one batched look-up.

The words that never make a name alone are generic English; a KB's own words that its prose
capitalizes far more often than they name an entity come from the caller (``stop_words``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from kgqa.answers.items import EntityNames, answer_items

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d\n]+)[\"\u201d]|\[([^\[\]\n]+)\]")
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'`*()[]{}<>\u201c\u201d\u2018\u2019.,;:!?"
_MAX_NAME_TOKENS = 10
# Final characters some names keep ("Them!", "Hatari!", "With Friends Like These...").
TITLE_ENDINGS = "!.?"
# Longer answer items are prose, not names.
MAX_ITEM_WORDS = 8
# Lower-case words that names contain ("Gone with the Wind", "Ludwig van Beethoven").
_CONNECTIVES = frozenset(
    "a an and at by de del der di du e et for from in la le of on the to van von with y".split()  # noqa: SIM905
)
# Capitalized English words that start sentences far more often than they name an entity
# (KBs have entities called "It", "Her", "Up"...): a lone one is never read as a name.
STOP_WORDS = frozenset(
    """a an and answer answers are as at be but by final for from he her here his i
    in is it its no none not of on or she so that the their them then there
    these they this those to was we were what which who with yes you""".split()  # noqa: SIM905
)
# An answer that declines to answer names nothing: it can omit, it cannot hallucinate.
_ABSTAIN = re.compile(
    r"\b(no answer|not (?:be )?found|unknown|cannot|can't|could not|couldn't|do not know|"
    r"don't know|not enough|no information|not sure|none|n/a)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` of the text it was found in."""

    start: int
    end: int
    text: str


def _core(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _EDGE_PUNCT:
        start += 1
    while end > start and text[end - 1] in _EDGE_PUNCT:
        end -= 1
    return start, end


def _capitalized(word: str) -> bool:
    return bool(word) and (word[0].isupper() or word[0].isdigit())


def name_spans(
    text: str, min_tokens: int = 1, stop_words: Collection[str] = STOP_WORDS
) -> list[Span]:
    """Every span that could be an entity name: runs of 1-10 words that start and end with a
    capitalized word (or a number), with edge punctuation stripped (and kept once more with
    its trailing "!", "." or "?" for titles like "Them!"), plus quoted and [bracketed] spans.
    Lone words need ``min_tokens=1`` and are never ``stop_words`` (lower-case)."""
    tokens = [_core(text, m.start(), m.end()) for m in _TOKEN.finditer(text)]
    tokens = [(a, b) for a, b in tokens if b > a]
    spans: list[Span] = []
    for i, (a, b) in enumerate(tokens):
        if not _capitalized(text[a:b]):
            continue
        for j in range(i + max(min_tokens, 1) - 1, min(len(tokens), i + _MAX_NAME_TOKENS)):
            c, d = tokens[j]
            if not _capitalized(text[c:d]):
                continue
            if i == j and text[a:b].lower() in stop_words:
                continue
            spans.append(Span(a, d, text[a:d]))
            e = d
            while e < len(text) and text[e] in TITLE_ENDINGS:
                e += 1
            if e > d:
                spans.append(Span(a, e, text[a:e]))
    for m in _QUOTED.finditer(text):
        group = 1 if m.group(1) is not None else 2
        a, b = _core(text, m.start(group), m.end(group))
        if b > a:
            spans.append(Span(a, b, text[a:b]))
    return spans


def pick_names(spans: Iterable[Span], known: Callable[[str], bool]) -> list[Span]:
    """The known spans, longest first, without overlaps, in text order."""
    chosen: list[Span] = []
    for s in sorted(
        (s for s in spans if known(s.text)), key=lambda s: (-(s.end - s.start), s.start)
    ):
        if all(s.end <= c.start or s.start >= c.end for c in chosen):
            chosen.append(s)
    return sorted(chosen, key=lambda s: s.start)


def looks_like_name(text: str) -> bool:
    """A short phrase whose words are capitalized (or numbers), but for short connectives:
    "John Smith", "Gone with the Wind", "1999"; not "based on the triples"."""
    words = text.split()
    if not words or len(words) > MAX_ITEM_WORDS or not _capitalized(words[0]):
        return False
    return all(_capitalized(w) or w in _CONNECTIVES for w in words)


def declines(text: str) -> bool:
    """Whether the text declines to answer ("unknown", "I could not find ...", "none")."""
    return _ABSTAIN.search(text) is not None


class _Recorder(EntityNames):
    """Stands in for the KB vocabulary in a first :func:`answer_items` pass: it records every
    string the parser asks about and knows none, so one batched look-up can answer them all
    before the real pass."""

    asked: set[str]

    def __contains__(self, item: object) -> bool:
        self.asked.add(str(item))
        return False


def _recorder() -> _Recorder:
    # Non-empty: answer_items consults a vocabulary only when it is truthy.
    r = _Recorder({"\x00"})
    r.asked = set()
    return r


def _original_case(text: str, lowered: str) -> str:
    """The substring of ``text`` that lower-cases to ``lowered`` (the parser lower-cases)."""
    low = text.lower()
    i = low.find(lowered)
    if i < 0 or len(low) != len(text):
        return lowered
    return text[i : i + len(lowered)]


def text_candidates(text: str, stop_words: Collection[str] = STOP_WORDS) -> set[str]:
    """Every string of ``text`` that could name an entity: the items the answer parser would
    look up and the name-like spans (for one batched KB look-up)."""
    rec = _recorder()
    answer_items(text, (), rec)
    found = {_original_case(text, c) for c in rec.asked}
    found.update(s.text for s in name_spans(text, 1, stop_words))
    return found


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)


def mentions(line: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that occur in ``line`` (ignoring case, on word boundaries), longest first
    without overlaps, in the order they occur. Of two names differing only in case, the one
    written with the line's own case wins."""
    spans: list[tuple[int, int, str]] = []
    for name in sorted(set(names), key=lambda n: (-len(n), n not in line, n)):
        for m in _pattern(name).finditer(line):
            if all(m.end() <= a or m.start() >= b for a, b, _ in spans):
                spans.append((m.start(), m.end(), name))
    return [name for _, _, name in sorted(spans)]
