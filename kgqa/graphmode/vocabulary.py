"""The steps graph mode's decomposition may write, and the GBNF grammar that holds the LLM to
them, over the real schema of the KB (its profile).

A step follows one relation one way (:class:`~kgqa.graph.paths.PathStep`), written in the
KB's own words (:mod:`kgqa.profile.steps`): "directors of [Gigi]", "movies directed by those
directors", "movies of those directors" (straight back along the relation just followed out).
Step 1 follows a relation the topic entity really has; each later step one that the nodes
reached by the previous step have (the profile's transitions), for any relation and either
direction — arbitrary chains such as person -> spouse -> person -> nationality, or the same
relation twice. Each written step maps back to exactly one step: the grammar tracks the
state, and :meth:`StepVocabulary.keys` replays it, so the walk needs no guess about what a
step meant. Two steps that would read alike at the same point get their relation's words
added ("countries (plays for country) of [X]").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from kgqa.graph.paths import PathStep
from kgqa.profile.model import KBProfile
from kgqa.profile.steps import back_text, reached_noun, step_text

END = "<END>"
# The step grammar writes END only at the start of a line, where nothing else begins with its
# first character: a call held to it can stop there, before END's other tokens ("<", "END",
# ">" for Qwen's tokenizer: two decodes saved per decomposition).
END_LINE = "\n" + END[0]
# The label of the line that declares what kind of thing the question asks for.
ANSWER_LABEL = "answer:"
_GBNF_SPECIAL = str.maketrans({"\\": "\\\\", '"': '\\"'})
_ANCHOR = "\x00"  # stands for the anchor while texts are compared


def _lit(text: str) -> str:
    return '"' + text.translate(_GBNF_SPECIAL) + '"'


# How a rule lists the steps that may come next: (options, previous step, state name of each).
Alternatives = Callable[[list[PathStep], PathStep | None, Callable[[PathStep], str]], str]


def _norm(text: str) -> str:
    return " ".join(text.strip().rstrip("?").lower().split())


class StepVocabulary:
    """Step texts, their parse, and the step grammar for one KB profile."""

    def __init__(self, profile: KBProfile):
        self.profile = profile
        # Canonical steps only: an inverse relation is its partner read the other way.
        self.relations = sorted(r for r in profile.relations if self._is_canonical(r))
        self.steps = [PathStep(r, o) for r in self.relations for o in (True, False)]
        self._index = {s: i for i, s in enumerate(self.steps)}

    def _is_canonical(self, relation: str) -> bool:
        return self.profile.canonical(PathStep(relation, True)).relation == relation

    def __contains__(self, step: object) -> bool:
        return step in self._index

    # -- texts ------------------------------------------------------------------------------
    def _texts(self, options: Sequence[PathStep], previous: PathStep | None) -> dict[PathStep, str]:
        """Each option written from the current point (``_ANCHOR`` for the anchor), with the
        relation's words added where two options would read alike."""

        def text(step: PathStep, qualify: bool) -> str:
            words = self.profile.words(step.relation)
            if qualify:
                words = replace(
                    words,
                    object=f"{words.object} ({words.words})",
                    subject=f"{words.subject} ({words.words})",
                )
            if (
                previous is not None
                and previous.outgoing
                and step == PathStep(previous.relation, False)
            ):
                return back_text(words)
            return step_text(step, words, _ANCHOR)

        plain = {s: text(s, False) for s in options}
        seen: dict[str, int] = {}
        for t in plain.values():
            seen[_norm(t)] = seen.get(_norm(t), 0) + 1
        return {s: (text(s, True) if seen[_norm(t)] > 1 else t) for s, t in plain.items()}

    def anchor_after(self, step: PathStep) -> str:
        """How a later step speaks of the nodes ``step`` reached: "those directors"."""
        return f"those {reached_noun(step, self.profile.words(step.relation))}"

    def options_after(self, step: PathStep) -> list[PathStep]:
        return [s for s in self.profile.next_steps(step) if s in self._index]

    def write(self, path: Sequence[PathStep], topic: str) -> list[str]:
        """The steps of ``path`` from ``[topic]`` as the grammar writes them."""
        out: list[str] = []
        previous: PathStep | None = None
        for step in path:
            options = [step] if previous is None else self.options_after(previous) or [step]
            texts = self._texts(options, previous)
            anchor = f"[{topic}]" if previous is None else self.anchor_after(previous)
            out.append(
                texts.get(step, step_text(step, self.profile.words(step.relation), anchor)).replace(
                    _ANCHOR, anchor
                )
            )
            previous = step
        return out

    def first_texts(self, first: Iterable[PathStep]) -> list[str]:
        """The first steps as they begin, without their anchor ("clubs of", "players of")."""
        options = sorted((s for s in set(first) if s in self._index), key=self._index.__getitem__)
        texts = self._texts(options, None)
        return [" ".join(texts[s].replace(_ANCHOR, " ").split()) for s in options]

    # -- parsing ----------------------------------------------------------------------------
    def keys(self, steps: Sequence[str], first: Iterable[PathStep]) -> list[PathStep | None]:
        """The step each written step follows, replaying the grammar from the topic's
        options ``first``; ``None`` for a step that is not in the vocabulary (then the rest
        are ``None`` too: the state is lost)."""
        options = [s for s in dict.fromkeys(first) if s in self._index]
        previous: PathStep | None = None
        found: list[PathStep | None] = []
        for written in steps:
            texts = self._texts(options, previous)
            anchor = (
                r"\[.+\]" if previous is None else re.escape(_norm(self.anchor_after(previous)))
            )
            match = None
            target = _norm(written)
            for step, text in texts.items():
                pattern = re.escape(_norm(text)).replace(re.escape(_ANCHOR.lower()), anchor)
                if re.fullmatch(pattern, target):
                    match = step
                    break
            found.append(match)
            if match is None:
                found.extend([None] * (len(steps) - len(found)))
                break
            previous = match
            options = self.options_after(match)
        return found

    # -- the grammar ------------------------------------------------------------------------
    def answer_noun(self, step: PathStep) -> str:
        """What the nodes a step reaches are called ("clubs"): an answer's declared kind."""
        return reached_noun(step, self.profile.words(step.relation))

    def answer_nouns(self) -> list[str]:
        return sorted({self.answer_noun(s) for s in self.steps})

    def noun_asks(self) -> dict[str, set[str]]:
        """Each answer noun with the first words of the questions the profile asks for it
        ("who" of "who directed X" for "directors")."""
        found: dict[str, set[str]] = {n: set() for n in self.answer_nouns()}
        for step in self.steps:
            words = self.profile.words(step.relation)
            ask = words.ask_object if step.outgoing else words.ask_subject
            if ask.split():
                found[self.answer_noun(step)].add(ask.split()[0].lower())
        return found

    def noun_examples(self, per_noun: int = 3) -> dict[str, list[str]]:
        """Each answer noun with up to ``per_noun`` real names of nodes called so (from the
        profile's example triples): "clubs" -> "Juventus FC", ..."""
        found: dict[str, list[str]] = {n: [] for n in self.answer_nouns()}
        for step in self.steps:
            rel = self.profile.relations.get(step.relation)
            names = found[self.answer_noun(step)]
            for subject, obj in rel.examples if rel is not None else ():
                name = " ".join((obj if step.outgoing else subject).replace("_", " ").split())
                if name and name not in names and len(names) < per_noun:
                    names.append(name)
        return found

    def kinds_of(self, noun: str) -> set[str]:
        """The names of the kinds of node reached by the steps reaching nodes called ``noun``."""
        return self._kind_names(noun)

    def _kind_names(self, noun: str) -> set[str]:
        """The kinds of node that the steps reaching nodes called ``noun`` reach."""
        return {
            k.name
            for s in self.steps
            if self.answer_noun(s) == noun and (k := self.profile.kind_of(s)) is not None
        }

    def _path_rules(
        self,
        prefix: str,
        start: list[PathStep],
        max_steps: int,
        end: str,
        alternatives: Alternatives,
        may_end: Callable[[PathStep], bool],
        forced: Callable[[PathStep], bool],
    ) -> tuple[str, dict[str, str]] | None:
        """The first step's rule body and the states of the paths from ``start`` of up to
        ``max_steps`` steps that end (``end``) only after a step where ``may_end``, and right
        after one where ``forced``; ``None`` when no such path exists."""

        @functools.cache
        def ok(n: int, step: PathStep) -> bool:
            return may_end(step) or (
                not forced(step)
                and n < max_steps
                and any(ok(n + 1, s) for s in self.options_after(step))
            )

        def state(n: int, step: PathStep) -> str:
            return f"{prefix}s{n}-{self._index[step]}"

        firsts = [s for s in start if ok(1, s)]
        if not firsts:
            return None
        rules: dict[str, str] = {}
        frontier = {(1, s) for s in firsts}
        done: set[tuple[int, PathStep]] = set()
        while frontier:
            n, step = frontier.pop()
            if (n, step) in done:
                continue
            done.add((n, step))
            nxt = (
                [s for s in self.options_after(step) if ok(n + 1, s)]
                if n < max_steps and not forced(step)
                else []
            )
            ways = [f'"\\n" {_lit(end)}'] if may_end(step) else []
            if nxt:
                body = alternatives(nxt, step, functools.partial(state, n + 1))
                ways.append(f'"\\n{n + 1}. " ({body})')
                frontier |= {(n + 1, s) for s in nxt}
            rules[state(n, step)] = " | ".join(ways)
        return f'"1. " ({alternatives(firsts, None, functools.partial(state, 1))})', rules

    def reachable_nouns(self, first: Iterable[PathStep], max_steps: int) -> list[str]:
        """The nouns (:meth:`answer_noun`) of the nodes that paths of up to ``max_steps`` steps
        from ``first`` reach."""
        frontier = {s for s in first if s in self._index}
        seen: set[PathStep] = set()
        for _ in range(max_steps):
            seen |= frontier
            frontier = {n for s in frontier for n in self.options_after(s)} - seen
        return sorted({self.answer_noun(s) for s in seen})

    def grammar(
        self,
        first: Iterable[PathStep],
        max_steps: int,
        end: str = END,
        answer: bool = False,
        ends: Sequence[str] = (),
        held: bool = True,
    ) -> str:
        """GBNF for up to ``max_steps`` numbered steps, then ``end``: step 1 follows one of
        ``first`` (the topic entity's own steps), each later one a step that the nodes reached
        can follow.

        ``answer``: the steps are preceded by a line "answer: <noun>" naming what the question
        asks for (one of :meth:`answer_nouns` that the topic can reach), and the path is held
        to it: it ends at the first step that reaches nodes called so ("clubs located in [X]",
        then ``end``), may end at a step that reaches the same kind of node under another name
        ("people" for "players"), and ends nowhere else.

        ``ends``: nouns the question was read to ask for, best first
        (:mod:`kgqa.graphmode.asked`); the path may end only at a step reaching nodes called
        so or of their kind, and (``held``) ends at the first step reaching the best one's
        kind (the kind, not only the noun: "screenwriters" may have been read as the
        "directors" that share their kind). Without such a path, or with ``answer``, the nouns
        are ignored."""
        start = sorted((s for s in set(first) if s in self._index), key=self._index.__getitem__)
        if not start or max_steps < 1:
            raise ValueError("a step grammar needs at least one first option and one step")
        rules: dict[str, str] = {}

        def alternatives(
            options: list[PathStep], previous: PathStep | None, name: Callable[[PathStep], str]
        ) -> str:
            texts = self._texts(options, previous)
            anchor = '"[" [^\\]\\n]+ "]"' if previous is None else _lit(self.anchor_after(previous))
            parts = []
            for step in options:
                pieces = texts[step].split(_ANCHOR)
                lits = " ".join(
                    (_lit(p) + " " + anchor) if i < len(pieces) - 1 else _lit(p)
                    for i, p in enumerate(pieces)
                    if p or i < len(pieces) - 1
                ).replace('"" ', "")
                parts.append(f"{lits} {name(step)}")
            return " | ".join(parts)

        ends = list(dict.fromkeys(ends))
        if ends and not answer:

            def reaches(step: PathStep, nouns: list[str]) -> bool:
                kind = self.profile.kind_of(step)
                kinds = set().union(*(self._kind_names(n) for n in nouns))
                return self.answer_noun(step) in nouns or (kind is not None and kind.name in kinds)

            def forced_at(step: PathStep) -> bool:
                return held and reaches(step, ends[:1])

            def may_end_at(step: PathStep) -> bool:
                return reaches(step, ends)

            got = self._path_rules("", start, max_steps, end, alternatives, may_end_at, forced_at)
            if got is not None:
                rules = {"root": got[0], **got[1]}
                return "\n".join(f"{k} ::= {v}" for k, v in rules.items()) + "\n"
        if not answer:
            plain = self._path_rules(
                "", start, max_steps, end, alternatives, lambda s: True, lambda s: False
            )
            assert plain is not None  # every path may end anywhere
            rules = {"root": plain[0], **plain[1]}
            return "\n".join(f"{k} ::= {v}" for k, v in rules.items()) + "\n"

        declared: list[str] = []
        for a, noun in enumerate(self.answer_nouns()):
            kinds = self._kind_names(noun)

            def forced(step: PathStep, noun: str = noun) -> bool:
                return self.answer_noun(step) == noun

            def may_end(step: PathStep, noun: str = noun, kinds: set[str] = kinds) -> bool:
                kind = self.profile.kind_of(step)
                return self.answer_noun(step) == noun or (kind is not None and kind.name in kinds)

            got = self._path_rules(f"a{a}-", start, max_steps, end, alternatives, may_end, forced)
            if got is not None:
                declared.append(f'{_lit(noun)} "\\n" {got[0]}')
                rules |= got[1]
        if not declared:
            return self.grammar(start, max_steps, end)
        rules = {"root": f'"{ANSWER_LABEL} " ({" | ".join(declared)})', **rules}
        return "\n".join(f"{k} ::= {v}" for k, v in rules.items()) + "\n"
