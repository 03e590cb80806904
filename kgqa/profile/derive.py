"""Deriving a KB profile from the graph itself (``kgqa load`` / ``kgqa index``).

Everything comes from reads of the graph store (:class:`kgqa.graph.base.SchemaReader`):

1. **Relations**: counts, a few real example triples, readable words from the name in any
   convention (:mod:`kgqa.profile.words`), and what its subjects and objects are called, named
   by the LLM from the name and the examples (:mod:`kgqa.profile.namer`; rules from the name
   alone when no LLM is given or its answer does not hold up).
2. **Inverse and symmetric relations**: ``q`` is ``r``'s inverse when (o, q, s) exists for
   (nearly) every sampled (s, r, o) and the other way round; the pair is then one relation
   read both ways (the canonical one is the one whose name is not marked inverse).
3. **Transitions**: for each step (relation, direction), which steps the nodes it reaches
   have; the step grammar lets a step follow only these.
4. **Kinds**: step ends whose reached nodes overlap are one kind of node, named by the most
   used noun of its ends (of the ends that reach its nodes as subjects, where there are any).
5. **Examples**: real paths sampled from the graph (one, two and three steps, from real
   entities, each checked to reach answers), written in the step vocabulary and, for the
   paper's prompts, as sub-questions with a short reasoning: the in-context examples of every
   mode's decomposition, in this KB's own vocabulary.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from kgqa.graph.paths import PathStep
from kgqa.profile.model import KBProfile, Kind, RelationProfile, RelationWords, StepExample
from kgqa.profile.steps import back_text, question_phrase, reached_noun, step_phrasings, step_text
from kgqa.profile.words import relation_name

__all__ = ["derive_profile", "rule_words", "step_phrasings"]

EXAMPLE_TRIPLES = 4
REVERSE_SAMPLE = 60
FAR_SAMPLE = 120
# A step may follow another when at least this share of the nodes it reaches have it.
TRANSITION_SHARE = 0.03
# Two step ends are one kind of node when this share of one's nodes belong to the other.
KIND_OVERLAP = 0.5
# An inverse pair: at least this share of each relation's triples have the other one back.
INVERSE_SHARE = 0.9
# Relations named by the LLM (the most frequent first); the rest by rules.
MAX_NAMED = 60
# Example answers: a path whose answer set is empty or huge teaches little.
MAX_EXAMPLE_ANSWERS = 40
# A step reaches entity-like nodes when they are at least this share of its triples.
ENTITY_LIKE = 0.1
# An example chain's next step is one at least this share of the nodes reached have.
TYPICAL_SHARE = 0.5
# Candidate paths tried per example group before the group is left without one.
GROUP_TRIES = 8

_LEADING = frozenset(
    [
        "has",
        "have",
        "had",
        "is",
        "are",
        "was",
        "were",
        "be",
        "being",
        "the",
        "a",
        "an",
        "does",
        "do",
        "did",
    ]
)
_PREPOSITIONS = frozenset(["by", "of", "in", "for", "to", "with", "at", "on", "from", "as", "into"])


class Namer(Protocol):
    @property
    def name_(self) -> str: ...

    def name(
        self, relation: str, words: str, examples: Sequence[tuple[str, str]]
    ) -> RelationWords | None: ...


class ProfileSource(Protocol):
    """What derivation reads: the schema samples and path walks of a graph store."""

    def relation_stats(self) -> Any: ...

    def sample_triples(self, relation: str, limit: int) -> Any: ...

    def far_end_edges(self, relation: str, outgoing: bool, limit: int) -> Any: ...

    def reverse_edges(self, relation: str, limit: int) -> Any: ...

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]: ...

    def frontier_edges(self, names: Sequence[str], limit: int = ...) -> Any: ...


def _plural(noun: str) -> str:
    if not noun or noun.endswith("s"):
        return noun
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


ENTITIES = "entities"  # what the rules call the subjects of any relation


def _singulars(noun: str) -> set[str]:
    """What "movies", "countries", "clubs" may be in the singular (both readings of -ies)."""
    if noun.endswith("ies") and len(noun) > 4:
        return {noun[:-1], noun[:-3] + "y"}
    if noun.endswith("s") and not noun.endswith("ss"):
        return {noun[:-1]}
    return {noun}


def rule_words(relation: str) -> RelationWords:
    """A relation's words from its name alone: "has_genre" -> objects "genres", verb "has
    genre"; "place_of_birth" -> objects "places of birth"; subjects are "entities"."""
    name = relation_name(relation)
    words = name.words
    tokens = words.split()
    core = list(tokens)
    while core and core[0] in _LEADING | _PREPOSITIONS:
        core.pop(0)
    if core and core[-1] in _PREPOSITIONS:
        # "directed by", "capital of": the objects are what the relation leads to.
        obj = f"{words} entities"
    elif core:
        if "of" in core[1:]:
            i = core.index("of", 1)
            obj = " ".join([_plural(" ".join(core[:i]))] + core[i:])
        else:
            obj = " ".join(core[:-1] + [_plural(core[-1])])
    else:
        obj = f"{words} entities"
    verb = (
        words
        if tokens and (tokens[0] in _LEADING or tokens[-1] in _PREPOSITIONS)
        else f"with {words}"
    )
    return RelationWords(
        words=words,
        subject=ENTITIES,
        object=obj,
        verb=verb,
        ask_object=f"what is the {words} of X",
        ask_subject=f"which entities have {words} X",
        source="rules",
    )


def _role_object(named: RelationWords, rules: RelationWords) -> RelationWords:
    """The LLM's words, with the relation's own noun for its objects where the LLM called both
    sides the same ("people married to people"): "spouses of [X]" says what a step asks for,
    "people of [X]" does not. Only a name that is a noun ("spouse", not "knows" or
    "parent_of") has one."""
    noun = rules.object
    if (
        named.subject != named.object
        or noun.endswith(" entities")
        or noun == rules.words
        or noun == named.object
    ):
        return named
    return replace(named, object=noun)


def _reverse_words(w: RelationWords) -> RelationWords:
    """The words of a relation read backwards (its inverse)."""
    return RelationWords(
        words=f"{w.words} (inverse)",
        subject=w.object,
        object=w.subject,
        verb=f"of {w.subject} {w.verb}"[:40] if w.verb else "related to",
        ask_object=w.ask_subject,
        ask_subject=w.ask_object,
        source=w.source,
    )


def _find_inverses(store: ProfileSource, relations: Sequence[str]) -> dict[str, str]:
    """``{relation: its inverse}`` for mutual pairs (and symmetric relations: themselves)."""
    backs: dict[str, dict[str, float]] = {}
    for r in relations:
        sampled, counts = store.reverse_edges(r, REVERSE_SAMPLE)
        backs[r] = {q: n / sampled for q, n in counts.items()} if sampled else {}
    out: dict[str, str] = {}
    for r in relations:
        if r in out:
            continue
        if backs[r].get(r, 0.0) >= INVERSE_SHARE:
            out[r] = r
            continue
        best = max(
            (q for q in backs[r] if q != r and backs[r][q] >= INVERSE_SHARE),
            key=lambda q: (backs[r][q], q),
            default=None,
        )
        if best is not None and backs.get(best, {}).get(r, 0.0) >= INVERSE_SHARE:
            out[r], out[best] = best, r
    return out


class _Kinds:
    def __init__(self) -> None:
        self.parent: dict[PathStep, PathStep] = {}

    def find(self, x: PathStep) -> PathStep:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: PathStep, b: PathStep) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb, key=_order)] = min(ra, rb, key=_order)


def _order(s: PathStep) -> tuple[str, bool]:
    return (s.relation, not s.outgoing)


def derive_profile(
    store: ProfileSource,
    fingerprint: str,
    *,
    namer: Namer | None = None,
    progress: Callable[[str], object] | None = None,
) -> KBProfile:
    """The profile of the graph behind ``store`` (see the module doc)."""
    from kgqa import __version__

    say = progress or (lambda _msg: None)
    stats = {s.relation: s for s in store.relation_stats()}
    names = sorted(stats)
    inverses = _find_inverses(store, names)
    profile_stub = KBProfile("derived", fingerprint, {})

    def canonical_rel(r: str) -> str:
        inv = inverses.get(r)
        if inv is None or inv == r:
            return r
        pair = (
            RelationProfile(r, 0, 0, 0, rule_words(r), inverse=inv),
            RelationProfile(inv, 0, 0, 0, rule_words(inv), inverse=r),
        )
        from kgqa.profile.model import _canonical_of

        return _canonical_of(*pair)

    canonical = [r for r in names if canonical_rel(r) == r]
    by_count = sorted(canonical, key=lambda r: (-stats[r].count, r))
    relations: dict[str, RelationProfile] = {}
    examples_of: dict[str, tuple[tuple[str, str], ...]] = {}
    for r in names:
        examples_of[r] = tuple(
            (t.subject, t.object) for t in store.sample_triples(r, EXAMPLE_TRIPLES)
        )
    named = set(by_count[:MAX_NAMED])
    started = time.perf_counter()
    for r in by_count:
        parsed = relation_name(r)
        words = rule_words(r)
        if namer is not None and r in named:
            say(f"naming relation {r}")
            got = namer.name(r, parsed.words, examples_of[r])
            if got is not None:
                words = _role_object(got, words)
        s = stats[r]
        relations[r] = RelationProfile(
            r,
            s.count,
            s.subjects,
            s.objects,
            words,
            examples_of[r],
            inverses.get(r),
            parsed.cryptic,
        )
    for r in names:
        if r in relations:
            continue
        partner = relations[inverses[r]]
        s = stats[r]
        relations[r] = RelationProfile(
            r,
            s.count,
            s.subjects,
            s.objects,
            _reverse_words(partner.words),
            examples_of[r],
            inverses.get(r),
            relation_name(r).cryptic,
        )
    say(f"named {len(named)} relations in {time.perf_counter() - started:.1f} s")
    profile = profile_stub.with_(relations=relations)

    # Transitions and kinds, over canonical steps.
    transitions: dict[PathStep, list[PathStep]] = {}
    shares: dict[tuple[PathStep, PathStep], float] = {}
    kinds = _Kinds()
    for r in canonical:
        for outgoing in (True, False):
            step = PathStep(r, outgoing)
            sampled, edges = store.far_end_edges(r, outgoing, FAR_SAMPLE)
            if not sampled:
                continue
            nxt: dict[PathStep, float] = defaultdict(float)
            for (q, e), n in edges.items():
                share = n / sampled
                target = profile.canonical(PathStep(q, e))
                nxt[target] = max(nxt[target], share)
                shares[(step, target)] = nxt[target]
                if share >= KIND_OVERLAP:
                    # those nodes are also reached by following (q, e) backwards
                    kinds.union(step, profile.canonical(PathStep(q, not e)))
            kinds.find(step)
            transitions[step] = sorted(
                (t for t, share in nxt.items() if share >= TRANSITION_SHARE), key=_order
            )
    groups: dict[PathStep, list[PathStep]] = defaultdict(list)
    for step in transitions:
        groups[kinds.find(step)].append(step)
    kind_list = []
    for ends in groups.values():
        # Named by what its nodes are as subjects (what a thing is) where they are subjects of
        # something; only a kind that is never a subject takes a role's name ("directors").
        # The rules' placeholder noun ("entities") names a kind nothing else names.
        def noun(e: PathStep) -> str:
            return reached_noun(e, relations[e.relation].words)

        named_by = [e for e in ends if noun(e) != ENTITIES]
        named_by = [e for e in named_by if not e.outgoing] or named_by or ends
        weight: dict[str, int] = defaultdict(int)
        for e in named_by:
            weight[noun(e)] += relations[e.relation].count
        name = max(weight, key=lambda n: (weight[n], n))
        kind_list.append(Kind(name, tuple(sorted(ends, key=_order))))
    kind_list.sort(key=lambda k: k.name)
    # One name per kind for the subjects: each relation was named alone, so the movies of one
    # relation may be "books" or "songs" to another; the relations whose subjects are one kind
    # take its most used name. Objects keep their own ("directors", "writers"): they name the
    # role the relation gives its objects.
    kind_of = {e: k for k in kind_list for e in k.ends}
    for r in canonical:
        kind = kind_of.get(PathStep(r, False))
        if kind is not None and relations[r].words.subject != kind.name:
            relations[r] = replace(
                relations[r], words=replace(relations[r].words, subject=kind.name)
            )
    profile = profile.with_(relations=relations)

    phrases = {
        PathStep(r, o): step_phrasings(PathStep(r, o), relations[r].words)
        for r in canonical
        for o in (True, False)
    }
    # The names of the kinds of thing the KB describes (the subjects of its relations): a
    # step or a lone word that only says "the film" asks for nothing.
    stop: set[str] = set()
    for kind in kind_list:
        if any(not e.outgoing for e in kind.ends):
            for w in kind.name.split():
                stop.add(w)
                stop |= _singulars(w)
    stop -= _PREPOSITIONS
    profile = profile.with_(
        transitions={k: tuple(v) for k, v in transitions.items()},
        kinds=tuple(kind_list),
        phrases=phrases,
        stop_words=frozenset(w for w in stop if len(w) > 2),
        namer=namer.name_ if namer is not None else "rules",
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        kgqa_version=__version__,
    )
    say("sampling example paths")
    return profile.with_(examples=tuple(sample_examples(store, profile, shares)))


# -- examples -------------------------------------------------------------------------------


def render_steps(profile: KBProfile, path: Sequence[PathStep], topic: str) -> list[str]:
    """The steps of ``path`` from ``[topic]`` in the step vocabulary."""
    steps: list[str] = []
    previous: PathStep | None = None
    for step in path:
        words = profile.words(step.relation)
        if previous is None:
            steps.append(step_text(step, words, f"[{topic}]"))
        elif previous.outgoing and step == PathStep(previous.relation, False):
            steps.append(back_text(words))
        else:
            before = reached_noun(previous, profile.words(previous.relation))
            steps.append(step_text(step, words, f"those {before}"))
        previous = step
    return steps


def example_question(profile: KBProfile, path: Sequence[PathStep], topic: str) -> str:
    """A question that the path answers, composed from the steps' words."""
    if len(path) == 1:
        w = profile.words(path[0].relation)
        asked = w.ask_object if path[0].outgoing else w.ask_subject
        if asked and re.search(r"\bX\b", asked):
            return re.sub(r"\bX\b", f"[{topic}]", asked, count=1)
    phrase = f"[{topic}]"
    for step in path:
        phrase = question_phrase(step, profile.words(step.relation), phrase)
    return f"what are {phrase}"


def example_sub_questions(
    profile: KBProfile, path: Sequence[PathStep], topic: str
) -> tuple[list[str], str]:
    """The paper's form of the same chain: natural sub-questions and a one-line reasoning."""
    subs: list[str] = []
    needs: list[str] = []
    previous: PathStep | None = None
    for step in path:
        w = profile.words(step.relation)
        noun = reached_noun(step, w)
        if previous is None:
            asked = w.ask_object if step.outgoing else w.ask_subject
            text = (
                re.sub(r"\bX\b", f"[{topic}]", asked, count=1)
                if asked and re.search(r"\bX\b", asked)
                else f"What are {question_phrase(step, w, f'[{topic}]')}"
            )
            needs.append(question_phrase(step, w, f"[{topic}]"))
        else:
            before = reached_noun(previous, profile.words(previous.relation))
            text = f"What are {question_phrase(step, w, f'those {before}')}"
            needs.append(question_phrase(step, w, f"those {before}"))
        subs.append(text[0].upper() + text[1:].rstrip("?") + "?")
        previous = step
        del noun
    if len(needs) == 1:
        reasoning = f"The question asks for one fact, {needs[0]}, so it needs no splitting."
    else:
        reasoning = "I first need " + ", then ".join(needs) + "."
    return subs, reasoning


def _starts(store: ProfileSource, step: PathStep, limit: int = 6) -> list[str]:
    triples = store.sample_triples(step.relation, limit)
    return list(dict.fromkeys(t.subject if step.outgoing else t.object for t in triples))


def _entity_like(profile: KBProfile, step: PathStep) -> bool:
    """Whether the nodes a step reaches are many and distinct (people, clubs, films) rather
    than a few shared values (ages, genres, positions): a chain through values ("the players
    of the same age as X") is a real path, but a poor example of what people ask."""
    rel = profile.relations[step.relation]
    reached = rel.objects if step.outgoing else rel.subjects
    return rel.count > 0 and reached / rel.count >= ENTITY_LIKE


def _candidate_paths(
    profile: KBProfile, shares: dict[tuple[PathStep, PathStep], float]
) -> list[tuple[list[tuple[PathStep, ...]], int]]:
    """Paths worth showing, in groups of (candidates, how many to show): a 3-step chain
    through a shared neighbour and a straight one, 2-step chains, then single steps; within a
    group the next candidate stands in for one that reaches no small answer set. Every node a chain passes through is entity-like
    (:func:`_entity_like`); a chain's next step is one most of the nodes reached have (a
    typical path, "the genres of the films an actor starred in", rather than "the films
    directed by an actor"); first steps from entity-like nodes and common relations first."""
    count = {r: rel.count for r, rel in profile.relations.items()}

    def start_like(step: PathStep) -> bool:
        return _entity_like(profile, PathStep(step.relation, not step.outgoing))

    steps = sorted(
        profile.transitions,
        key=lambda s: (not start_like(s), -count[s.relation], s.relation, not s.outgoing),
    )
    two: list[tuple[float, tuple[PathStep, ...]]] = []
    three: list[tuple[float, tuple[PathStep, ...]]] = []
    for a in steps:
        if not _entity_like(profile, a):
            continue
        for b in profile.next_steps(a):
            share_ab = shares.get((a, b), 0.0)
            if share_ab < TYPICAL_SHARE or (
                b == PathStep(a.relation, not a.outgoing) and not a.outgoing
            ):
                continue
            two.append((share_ab, (a, b)))
            if not _entity_like(profile, b):
                continue
            for c in profile.next_steps(b):
                share_bc = shares.get((b, c), 0.0)
                if share_bc < TYPICAL_SHARE or c in (PathStep(b.relation, not b.outgoing), a):
                    continue
                three.append((share_ab * share_bc, (a, b, c)))

    def ranked(paths: list[tuple[float, tuple[PathStep, ...]]]) -> list[tuple[PathStep, ...]]:
        return [
            p
            for _, p in sorted(
                paths, key=lambda x: (-x[0], not start_like(x[1][0]), -count[x[1][0].relation])
            )
        ]

    shared = [p for p in ranked(three) if p[1] == PathStep(p[0].relation, not p[0].outgoing)]
    straight = [p for p in ranked(three) if p[1] != PathStep(p[0].relation, not p[0].outgoing)]
    back = [p for p in ranked(two) if p[1] == PathStep(p[0].relation, not p[0].outgoing)]
    chain = [p for p in ranked(two) if p[1] != PathStep(p[0].relation, not p[0].outgoing)]
    # Single steps both ways, alternately ("which club does [X] play for", "which players
    # play for [Chile]"): with out-steps only, a small model asked an in-question wrote a
    # second step after it.
    singles: list[tuple[PathStep, ...]] = []
    used: set[str] = set()
    for outgoing in itertools.islice(itertools.cycle((True, False)), 2 * len(steps)):
        pick = next((s for s in steps if s.outgoing == outgoing and s.relation not in used), None)
        if pick is not None:
            singles.append((pick,))
            used.add(pick.relation)
    # The other way of each, for a relation whose first pick has no small answer set
    # ("which movies have the genre Comedy"): the examples take one step per relation.
    singles += [(PathStep(p.relation, not p.outgoing),) for (p,) in list(singles)]
    return [
        (_spread(shared, GROUP_TRIES), 1),
        (_spread(straight, GROUP_TRIES), 1),
        (_spread(chain, GROUP_TRIES), 2),
        (_spread(back, GROUP_TRIES), 1),
        (singles, len(singles)),
    ]


def _spread(paths: list[tuple[PathStep, ...]], n: int) -> list[tuple[PathStep, ...]]:
    """Up to ``n`` paths, no two with the same relations where it can be helped."""
    chosen: list[tuple[PathStep, ...]] = []
    used: set[str] = set()
    for p in paths:
        if not ({s.relation for s in p[1:]} | {p[0].relation}) & used or not chosen:
            chosen.append(p)
            used |= {s.relation for s in p}
        if len(chosen) >= n:
            return chosen
    for p in paths:
        if p not in chosen:
            chosen.append(p)
        if len(chosen) >= n:
            break
    return chosen


def sample_examples(
    store: ProfileSource,
    profile: KBProfile,
    shares: dict[tuple[PathStep, PathStep], float] | None = None,
    max_longer: int = 5,
    max_single: int = 12,
) -> Iterable[StepExample]:
    """Real example paths of the KB (see the module doc), each checked to reach answers:
    up to ``max_longer`` chains and a one-step example for each relation (up to
    ``max_single``), so that the model has seen every relation's words used."""
    found: list[StepExample] = []
    singles = 0
    used_singles: set[str] = set()
    for group, quota in _candidate_paths(profile, shares or {}):
        shown = 0
        for path in group:
            if shown >= quota:
                break
            if len(path) == 1 and (singles >= max_single or path[0].relation in used_singles):
                continue
            if len(path) > 1 and len(found) - singles >= max_longer:
                break
            example = _example(store, profile, path)
            if example is None:
                continue
            found.append(example)
            shown += 1
            if len(path) == 1:
                singles += 1
                used_singles.add(path[0].relation)
    return _alternated(found)


def _example(
    store: ProfileSource, profile: KBProfile, path: tuple[PathStep, ...]
) -> StepExample | None:
    """``path`` from the first of its sampled topics that reaches a small answer set."""
    for topic in _starts(store, path[0]):
        reached = store.walk([topic], path)
        if reached and 0 < len(reached[-1]) <= MAX_EXAMPLE_ANSWERS:
            subs, reasoning = example_sub_questions(profile, path, topic)
            first = sorted(
                {
                    profile.canonical(PathStep(e.triple.relation, e.outgoing))
                    for e in store.frontier_edges([topic])
                },
                key=_order,
            )
            return StepExample(
                example_question(profile, path, topic),
                tuple(path),
                tuple(render_steps(profile, path, topic)),
                tuple(subs),
                reasoning,
                tuple(first),
            )
    return None


def _alternated(examples: list[StepExample]) -> list[StepExample]:
    """One-step and longer examples spread evenly, one-step first and a longer one last: a
    small model follows the kind of example it read last. With the one-step ones last, MetaQA
    2-hop dev questions were answered in one step (benchmarks/bench_step_paths.py, derived
    profile, seed 0, 20 questions: 0.45 right paths; alternated 0.85)."""
    single = [e for e in examples if len(e.path) == 1]
    longer = [e for e in examples if len(e.path) != 1]
    if not longer or not single:
        return single + longer
    out: list[StepExample] = []
    taken = 0
    for i, e in enumerate(longer, 1):
        upto = round(len(single) * i / len(longer))
        out += single[taken:upto] + [e]
        taken = upto
    return out
