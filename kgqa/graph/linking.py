"""Entity linking from text, the same for every graph store: which of the names a store found
a question names as whole words (the longest one; a tie is an error, never a guess), and one
name among those equal to a mention when case is ignored."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kgqa.errors import AmbiguousEntity

# A full-text query is one clause per term and Lucene refuses more than 1,024 clauses; a
# question needs far fewer terms to find the names it contains.
MAX_LINK_TERMS = 256


def link_terms(question: str) -> list[str]:
    """The question's words to look names up by (those of two characters or more, each once
    ignoring case), at most :data:`MAX_LINK_TERMS`: from a longer question, capitalized
    words first (they start names), then the longest."""
    first: dict[str, str] = {}
    for w in re.findall(r"\w+", question):
        if len(w) > 1:
            first.setdefault(w.lower(), w)
    words = list(first.values())
    if len(words) <= MAX_LINK_TERMS:
        return words
    return sorted(words, key=lambda w: (not w[:1].isupper(), -len(w)))[:MAX_LINK_TERMS]


def named_in(question: str, names: Iterable[str]) -> str | None:
    """The longest of ``names`` that the question contains as whole words (exact case first,
    then ignoring case); a name inside a longer matching one does not count. ``None`` when
    none occurs; :class:`AmbiguousEntity` when several are equally long."""
    names = list(names)
    for flags in (0, re.IGNORECASE):
        found = [n for n in names if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", question, flags)]
        found = [n for n in found if not any(n != m and n.lower() in m.lower() for m in found)]
        if found:
            longest = max(len(n) for n in found)
            best = sorted({n for n in found if len(n) == longest})
            if len(best) > 1:
                raise AmbiguousEntity(
                    f"the question names several entities equally well: "
                    f"{', '.join(repr(b) for b in best)}; pass --entity with the one you mean"
                )
            return best[0]
    return None


def one_ignoring_case(mention: str, matches: Sequence[str]) -> str | None:
    """The one entity equal to ``mention`` ignoring case; ``None`` when there is none;
    :class:`AmbiguousEntity` when there are several."""
    if len(matches) > 1:
        raise AmbiguousEntity(
            f"{mention!r} matches several entities when case is ignored: "
            f"{', '.join(repr(c) for c in matches)}; pass --entity with the exact name"
        )
    return matches[0] if matches else None
