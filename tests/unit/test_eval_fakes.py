"""Deterministic fakes for the ``kgqa eval`` tests (imported by the other test_eval_* modules),
and the tests that keep the fakes honest.

- :class:`FakeRetriever`: a bidirectional N-hop expansion over an in-memory triple list and a
  word-overlap "embedding" for top-K. Raises ``EntityNotFound`` like the real one.
- :class:`FakePipeline`: answers from a dict (question -> text or Answer), optionally using
  the fake retriever for evidence, and can be told to fail or be interrupted.
- :class:`FakeKB`: the faithfulness check's graph reads (``KBGraph``) over a triple list,
  counting its calls.
- :class:`FakeFactory`: stands in for ``kgqa.factory.Factory`` in CLI tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from kgqa.errors import EntityNotFound
from kgqa.graph.paths import PathStep
from kgqa.types import Answer, Candidates, ScoredTriple, StageCost, SubAnswer, Triple

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
DATA = FIXTURES / "metaqa"
# A dataset in MetaQA's layout that is not about movies, with a conj/ set (its README).
BANDS = FIXTURES / "bands"


def kb_triples(path: Path = DATA / "kb.txt") -> list[Triple]:
    triples = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        s, r, o = line.split("|")
        triples.append(Triple(i, s, r, o))
    return triples


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class FakeRetriever:
    def __init__(self, triples: Sequence[Triple] | None = None):
        self.triples = list(triples if triples is not None else kb_triples())
        self.calls: list[tuple[tuple[str, ...], int]] = []

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        self.calls.append((tuple(entities), hops))
        names = {t.subject for t in self.triples} | {t.object for t in self.triples}
        for e in entities:
            if e not in names:
                raise EntityNotFound(e)
        frontier, seen_nodes, seen_ids = set(entities), set(entities), set()
        by_hop: list[tuple[Triple, ...]] = []
        for _ in range(hops):
            layer = [
                t
                for t in self.triples
                if t.id not in seen_ids and (t.subject in frontier or t.object in frontier)
            ]
            seen_ids.update(t.id for t in layer)
            frontier = {n for t in layer for n in (t.subject, t.object)} - seen_nodes
            seen_nodes |= frontier
            by_hop.append(tuple(layer))
        return Candidates(tuple(entities), hops, tuple(by_hop))

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        query = _words(text)
        scored = [
            ScoredTriple(t, float(len(query & _words(t.verbalize())))) for t in candidates.triples
        ]
        scored.sort(key=lambda s: (-s.score, s.triple.id))
        return scored[:k]


class FakeKB:
    """The checker's read interface over a list of triples, counting its calls."""

    def __init__(self, triples: Sequence[Triple]):
        self.kb = list(triples)
        self.names = {t.subject for t in triples} | {t.object for t in triples}
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def exact(self, names: Iterable[str]) -> set[str]:
        self._count("exact")
        return set(names) & self.names

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        self._count("case_insensitive")
        wanted = {n.lower() for n in names}
        out: dict[str, list[str]] = {}
        for n in sorted(self.names):
            if n.lower() in wanted:
                out.setdefault(n.lower(), []).append(n)
        return out

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        self._count("distances")
        dist = {t: 0 for t in topics if t in self.names}
        frontier = set(dist)
        for d in range(1, max_hops + 1):
            nxt = set()
            for t in self.kb:
                for a, b in ((t.subject, t.object), (t.object, t.subject)):
                    if a in frontier and b not in dist:
                        dist[b] = d
                        nxt.add(b)
            frontier = nxt
        return {n: dist.get(n) for n in names}

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        self._count("walk")
        frontier, out = set(topics), []
        for step in path:
            reached = {
                (t.object if step.outgoing else t.subject)
                for t in self.kb
                if t.relation == step.relation
                and (t.subject if step.outgoing else t.object) in frontier
            } - set(topics)
            out.append(frozenset(reached))
            frontier = reached
        return out

    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        self._count("triples")
        by_id = {t.id: t for t in self.kb}
        return {i: by_id[i] for i in ids if i in by_id}


class FakePipeline:
    """Answers from ``answers`` (question text -> answer text or a full Answer)."""

    def __init__(
        self,
        mode: str = "kgrag",
        answers: Mapping[str, str | Answer] | None = None,
        retriever: FakeRetriever | None = None,
        interrupt_on: int | None = None,
        fail_on: Sequence[str] = (),
        n_hops: int = 3,
        top_k: int = 30,
    ):
        self.mode = mode
        self.answers = dict(answers or {})
        self.retriever = retriever
        self.interrupt_on = interrupt_on
        self.fail_on = set(fail_on)
        self.n_hops, self.top_k = n_hops, top_k
        self.calls: list[str] = []
        self.entities: list[tuple[str, ...]] = []

    def answer(self, question: str, entities: Sequence[str]) -> Answer:
        self.calls.append(question)
        self.entities.append(tuple(entities))
        if self.interrupt_on is not None and len(self.calls) == self.interrupt_on:
            raise KeyboardInterrupt
        if question in self.fail_on:
            raise RuntimeError(f"fake failure on {question!r}")
        spec = self.answers.get(question, "I do not know")
        if isinstance(spec, Answer):
            return spec
        evidence: tuple[ScoredTriple, ...] = ()
        count = 0
        if self.retriever is not None:
            cands = self.retriever.candidates(entities, self.n_hops)
            count = len(cands)
            evidence = tuple(self.retriever.top_k(question, cands, self.top_k))
        subs = (SubAnswer(1, question, question, spec, evidence),)
        return Answer(
            question=question,
            entities_in=tuple(entities),
            mode=self.mode,
            text=spec,
            reasoning="looked it up",
            sub_answers=subs if self.mode != "llm" else (),
            evidence_ids=tuple(e.triple.id for e in evidence),
            costs=(StageCost("answer", 0.25, 40, 5), StageCost("synthesis", 0.5, 80, 10)),
            candidates_count=count,
            parameters={"n_hops": self.n_hops, "top_k": self.top_k},
        )


# Correct short answers for the fixture questions, a verbose one, and a wrong one.
GOOD_ANSWERS = {
    "who directed [Dark City]": "Alex Proyas",
    "what movies did [Wim Wenders] direct": "Paris, Texas and Wings of Desire",
    "which films did [Keira Knightley] act in": "The movie is Atonement.",
    "what genre is [The Crow]": "Drama",
    "when was [Dark City] released": "1998",
    "which movies was [John Shirley] the writer of": "the crow",
    "what genres are the movies written by [John Shirley] in": "Action",
    "the films directed by [Alex Proyas] were released in which years": "1998",
    "what languages are the films directed by [Wim Wenders] in": "German",
    "which years were the movies starred by [Keira Knightley] released": "2005, 2007",
}


# Answers for the bands fixture: right, a verbose list, a wrong one (Drums), an omission
# (Dune Rock) and a hallucination (Atlantis).
BAND_ANSWERS = {
    "where was [Lumen Quartet] formed": "Aster City",
    "which genre does [Night Ferns] play": "Glass Jazz",
    "who are the members of [Copper Owls]": "Mara Quill and Ida Vale",
    "what instrument does [Tomas Hale] play": "Drums",
    "which bands were formed in [Aster City]": "Lumen Quartet, Copper Owls",
    "which country was [Lumen Quartet] formed in": "Veloria",
    "what instruments do the members of [Copper Owls] play": "Cello",
    "which genres do the bands of [Ida Vale] play": "Glass Jazz",
    "which cities were the bands playing [Glass Jazz] formed in": "Aster City, Atlantis",
    "which band formed in [Aster City] plays [Dune Rock]": "Copper Owls",
    "which band does [Ida Vale] share with [Bo Renn]": "Lumen Quartet",
    "who plays [Cello] in [Copper Owls]": "Mara Quill",
    "which band plays [Glass Jazz] and was formed in [Port Selby]": "Night Ferns",
}


class FakeFactory:
    """What ``kgqa eval`` needs of ``kgqa.factory.Factory``; records what it built. ``kb`` and
    ``answers`` say which fixture data folder it stands for (tests may set them)."""

    built: list[FakeFactory] = []
    kb: Path = DATA / "kb.txt"
    answers: Mapping[str, str | Answer] = GOOD_ANSWERS

    def __init__(self, settings: object):
        self.settings = settings
        self.pipelines: list[FakePipeline] = []
        self.closed = False
        FakeFactory.built.append(self)

    def retriever(self) -> FakeRetriever:
        return FakeRetriever(kb_triples(self.kb))

    def rubric(self) -> FakeKB:
        """The faithfulness check's graph: the data folder's KB."""
        return FakeKB(kb_triples(self.kb))

    def pipeline(self, mode: str) -> FakePipeline:
        s = self.settings
        p = FakePipeline(
            mode,
            self.answers,
            self.retriever() if mode != "llm" else None,
            n_hops=s.retrieval.hops,  # type: ignore[attr-defined]
            top_k=s.retrieval.top_k,  # type: ignore[attr-defined]
        )
        self.pipelines.append(p)
        return p

    def close(self) -> None:
        self.closed = True


def test_fake_retriever_expands_both_directions_by_hop():
    r = FakeRetriever()
    one = r.candidates(["Alex Proyas"], 1)
    assert {t.subject for t in one.triples} == {"The Crow", "Dark City"}
    two = r.candidates(["Alex Proyas"], 2)
    assert len(two.by_hop) == 2
    assert "1998" in {t.object for t in two.by_hop[1]}
    with pytest.raises(EntityNotFound):
        r.candidates(["Nowhere Film"], 1)


def test_fake_retriever_top_k_is_best_first_and_cut():
    r = FakeRetriever()
    cands = r.candidates(["Dark City"], 1)
    top = r.top_k("dark city release year", cands, 2)
    assert len(top) == 2
    assert top[0].triple.relation == "release_year"
    assert top[0].score >= top[1].score
