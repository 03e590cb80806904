"""How a step (one relation followed one way) is written, from a relation's words.

One rule for every KB: following a relation *out* of something asks for its objects,
"<objects> of <anchor>" ("directors of [Gigi]", "clubs of those players"); following it *in*
asks for its subjects, "<subjects> <verb> <anchor>" ("movies directed by [Ridley Scott]");
going straight back along the relation just followed out reads "<subjects> of those
<objects>" ("movies of those directors"). The step grammar, the examples of the
decomposition prompt and the phrasings of the relation choice all use these functions, so a
step the LLM writes maps back to exactly one (relation, direction).
"""

from __future__ import annotations

from kgqa.graph.paths import PathStep
from kgqa.profile.model import RelationWords

PLACEHOLDER = "X"


def step_text(step: PathStep, words: RelationWords, anchor: str) -> str:
    """The step ``step`` from ``anchor`` ("[Gigi]" or "those movies")."""
    if step.outgoing:
        return f"{words.object} of {anchor}"
    return f"{words.subject} {words.verb} {anchor}"


def back_text(words: RelationWords) -> str:
    """Back along a relation just followed out: "movies of those directors"."""
    return f"{words.subject} of those {words.object}"


def reached_noun(step: PathStep, words: RelationWords) -> str:
    """What the nodes reached by ``step`` are called ("directors" after directors of ...)."""
    return words.object if step.outgoing else words.subject


def question_phrase(step: PathStep, words: RelationWords, inner: str) -> str:
    """``inner`` wrapped by one more step, for composing example questions: "the directors of
    <inner>", "the movies directed by <inner>"."""
    if step.outgoing:
        return f"the {words.object} of {inner}"
    return f"the {words.subject} {words.verb} {inner}"


def step_phrasings(step: PathStep, words: RelationWords) -> tuple[str, ...]:
    """Question-like phrasings of a step from entity X (compared with a question by embedding
    similarity when choosing the relation a one-step question asks about)."""
    x = PLACEHOLDER
    if step.outgoing:
        found = [
            words.ask_object,
            f"what are the {words.object} of {x}",
            step_text(step, words, x),
            f"{x} {words.verb} what",
            f"what is the {words.words} of {x}",
        ]
    else:
        found = [
            words.ask_subject,
            f"which {words.subject} {words.verb} {x}",
            step_text(step, words, x),
            f"what {words.verb} {x}",
        ]
    return tuple(dict.fromkeys(p.strip() for p in found if p and p.strip()))
