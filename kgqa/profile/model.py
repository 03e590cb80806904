"""The KB profile: everything that is specific to one knowledge graph, in one object.

Graph mode's step vocabulary and grammar, the phrasings its relation choice compares a
question with, the in-context examples of every mode's decomposition prompt, the node kinds
and the stop words all come from a :class:`KBProfile` that the factory builds and passes in.
``kgqa load`` / ``kgqa index`` derive it from the graph itself (:mod:`kgqa.profile.derive`)
and store it beside the vector index (``profile.json``), fingerprinted by the KB's triple
ids like the index; a user may override any part with a TOML file (:mod:`kgqa.profile.files`),
of which the MetaQA one shipped in ``kgqa/data/profiles/`` is an example. Nothing in the
generic code knows which KB it runs on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kgqa.errors import IndexMismatch
from kgqa.graph.paths import PathStep

PROFILE_FILE = "profile.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class RelationWords:
    """How a relation is spoken of: ``subject`` and ``object`` (plural nouns for what it links:
    "movies", "directors"), ``verb`` (reads "<subject> <verb> <object>": "directed by"), and
    questions asking for the object of X (``ask_object``: "who directed X") and for the
    subjects of X (``ask_subject``: "which movies did X direct"). ``source`` says who wrote
    them: ``llm`` (named at derivation from the relation's name and example triples),
    ``rules`` (from the name alone) or ``file`` (a user's profile file)."""

    words: str
    subject: str
    object: str
    verb: str
    ask_object: str = ""
    ask_subject: str = ""
    source: str = "rules"


@dataclass(frozen=True)
class RelationProfile:
    """One relation type: counts, words, real example triples (subject, object), and the
    relation that states the same facts backwards (``inverse``; itself when symmetric)."""

    relation: str
    count: int
    subjects: int
    objects: int
    words: RelationWords
    examples: tuple[tuple[str, str], ...] = ()
    inverse: str | None = None
    cryptic: bool = False

    @property
    def symmetric(self) -> bool:
        return self.inverse == self.relation

    def describe(self) -> str:
        """One line: the relation, its words, and an example when the name is cryptic."""
        w = self.words
        text = f"{self.relation}: {w.subject} {w.verb} {w.object}"
        if self.cryptic and self.examples:
            s, o = self.examples[0]
            text += f" (e.g. {s} -> {o})"
        return text


@dataclass(frozen=True)
class Kind:
    """A kind of node: a name and the step ends whose far nodes are of it."""

    name: str
    ends: tuple[PathStep, ...]
    label: str | None = None


@dataclass(frozen=True)
class StepExample:
    """A decomposition example: a question, its steps in the step vocabulary, and the same
    chain as the paper's natural-language sub-questions with a short reasoning."""

    question: str
    path: tuple[PathStep, ...]
    steps: tuple[str, ...]
    sub_questions: tuple[str, ...]
    reasoning: str
    # The steps the example's topic entity has (what its first step could have been).
    first: tuple[PathStep, ...] = ()


@dataclass(frozen=True)
class KBProfile:
    """See the module doc. ``source``: ``derived``, or the file(s) it was read from;
    ``fingerprint``: the KB's triple-id fingerprint (the vector index's), so that a profile
    built for another KB is refused, never mixed in."""

    source: str
    fingerprint: str
    relations: Mapping[str, RelationProfile]
    transitions: Mapping[PathStep, tuple[PathStep, ...]] = field(default_factory=dict)
    kinds: tuple[Kind, ...] = ()
    phrases: Mapping[PathStep, tuple[str, ...]] = field(default_factory=dict)
    examples: tuple[StepExample, ...] = ()
    stop_words: frozenset[str] = frozenset()
    # Grammar option: "any" (a step may follow whatever the nodes reached can have) or "back"
    # (after an out-step, only back along the same relation: a rule a profile file may set
    # for a KB whose questions never need more).
    after_out_step: str = "any"
    namer: str = "rules"
    # Who wrote the phrasings: "derived" (from the relations' words) or "file" (by hand).
    phrases_from: str = "derived"
    created: str = ""
    kgqa_version: str = ""

    # -- reading ----------------------------------------------------------------------------
    def words(self, relation: str) -> RelationWords:
        profile = self.relations.get(relation)
        if profile is not None:
            return profile.words
        from kgqa.profile.derive import rule_words

        return rule_words(relation)

    def step_phrases(self, step: PathStep) -> tuple[str, ...]:
        """Question-like phrasings of a step ("X" = the entity it starts from)."""
        found = self.phrases.get(step)
        if found:
            return found
        from kgqa.profile.derive import step_phrasings

        return step_phrasings(step, self.words(step.relation))

    def next_steps(self, step: PathStep) -> tuple[PathStep, ...]:
        """The steps the nodes reached by ``step`` can follow."""
        nxt = self.transitions.get(step, ())
        if self.after_out_step == "back" and step.outgoing:
            back = PathStep(step.relation, False)
            return (back,) if back in nxt or not nxt else ()
        return nxt

    def canonical(self, step: PathStep) -> PathStep:
        """The step as its relation's canonical twin: an inverse relation followed one way is
        its partner followed the other way (``plays_in_club_inverse`` out = ``plays_in_club``
        in); the canonical one of a pair is the one whose name is not marked inverse (else the
        first by name)."""
        rel = self.relations.get(step.relation)
        if rel is None or rel.inverse is None or rel.symmetric:
            return step
        partner = self.relations.get(rel.inverse)
        if partner is None:
            return step
        if _canonical_of(rel, partner) == rel.relation:
            return step
        return PathStep(partner.relation, not step.outgoing)

    def kind_of(self, step: PathStep) -> Kind | None:
        """The kind of node that ``step`` reaches."""
        return next((k for k in self.kinds if step in k.ends), None)

    def check(self, fingerprint: str) -> None:
        """Raise :class:`IndexMismatch` when this profile was built for another KB."""
        if self.fingerprint and fingerprint and self.fingerprint != fingerprint:
            raise IndexMismatch(
                f"the KB profile was derived for another KB ({self.fingerprint}, the index "
                f"holds {fingerprint}); run `kgqa index` to derive it for this one"
            )

    # -- storing ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        def step(s: PathStep) -> list[Any]:
            return [s.relation, "out" if s.outgoing else "in"]

        return {
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "namer": self.namer,
            "phrases_from": self.phrases_from,
            "created": self.created,
            "kgqa_version": self.kgqa_version,
            "after_out_step": self.after_out_step,
            "stop_words": sorted(self.stop_words),
            "relations": [
                {
                    **{k: v for k, v in asdict(r).items() if k not in ("words", "examples")},
                    "words": asdict(r.words),
                    "examples": [list(e) for e in r.examples],
                }
                for r in self.relations.values()
            ],
            "transitions": [
                {"after": step(a), "next": [step(b) for b in bs]}
                for a, bs in self.transitions.items()
            ],
            "kinds": [
                {"name": k.name, "label": k.label, "ends": [step(e) for e in k.ends]}
                for k in self.kinds
            ],
            "phrases": [{"step": step(s), "phrases": list(p)} for s, p in self.phrases.items()],
            "examples": [
                {
                    "question": e.question,
                    "path": [step(s) for s in e.path],
                    "steps": list(e.steps),
                    "sub_questions": list(e.sub_questions),
                    "reasoning": e.reasoning,
                    "first": [step(s) for s in e.first],
                }
                for e in self.examples
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KBProfile:
        def step(x: Iterable[Any]) -> PathStep:
            rel, direction = list(x)
            return PathStep(str(rel), direction == "out")

        relations = {}
        for r in data.get("relations", ()):
            words = RelationWords(**r["words"])
            relations[r["relation"]] = RelationProfile(
                relation=r["relation"],
                count=int(r["count"]),
                subjects=int(r["subjects"]),
                objects=int(r["objects"]),
                words=words,
                examples=tuple((str(e[0]), str(e[1])) for e in r.get("examples", ())),
                inverse=r.get("inverse"),
                cryptic=bool(r.get("cryptic")),
            )
        return cls(
            source=str(data.get("source", "derived")),
            fingerprint=str(data.get("fingerprint", "")),
            relations=relations,
            transitions={
                step(t["after"]): tuple(step(n) for n in t["next"])
                for t in data.get("transitions", ())
            },
            kinds=tuple(
                Kind(k["name"], tuple(step(e) for e in k["ends"]), k.get("label"))
                for k in data.get("kinds", ())
            ),
            phrases={step(p["step"]): tuple(p["phrases"]) for p in data.get("phrases", ())},
            examples=tuple(
                StepExample(
                    e["question"],
                    tuple(step(s) for s in e["path"]),
                    tuple(e["steps"]),
                    tuple(e["sub_questions"]),
                    e["reasoning"],
                    tuple(step(s) for s in e.get("first", ())),
                )
                for e in data.get("examples", ())
            ),
            stop_words=frozenset(data.get("stop_words", ())),
            after_out_step=str(data.get("after_out_step", "any")),
            namer=str(data.get("namer", "rules")),
            phrases_from=str(data.get("phrases_from", "derived")),
            created=str(data.get("created", "")),
            kgqa_version=str(data.get("kgqa_version", "")),
        )

    def save(self, folder: Path) -> Path:
        """Write ``folder/profile.json`` atomically."""
        import os

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / PROFILE_FILE
        tmp = folder / f".{PROFILE_FILE}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", "utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def read(cls, folder: Path) -> KBProfile:
        path = folder / PROFILE_FILE
        if not path.is_file():
            raise IndexMismatch(
                f"no KB profile in {folder}; run `kgqa index` to derive it from the graph"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if int(data.get("format_version", 0)) != FORMAT_VERSION:
                raise ValueError(f"format {data.get('format_version')}, expected {FORMAT_VERSION}")
            return cls.from_json(data)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IndexMismatch(
                f"the KB profile {path} is unreadable ({e}); run `kgqa index` to derive it again"
            ) from e

    def with_(self, **changes: Any) -> KBProfile:
        return replace(self, **changes)


def _canonical_of(a: RelationProfile, b: RelationProfile) -> str:
    """Of an inverse pair, the relation that is read forwards."""
    from kgqa.profile.words import relation_name

    marked = {r.relation for r in (a, b) if relation_name(r.relation).inverse}
    unmarked = sorted({a.relation, b.relation} - marked)
    return unmarked[0] if len(unmarked) == 1 else min(a.relation, b.relation)
