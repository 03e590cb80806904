"""The faithfulness check: the knowledge graph is the rubric (PoSh, ICLR 2026, applied to KGQA).

PoSh turns a description into a structured checklist and verifies each item against the
reference, reporting *mistakes* (claimed but not supported) and *omissions* (in the reference
but left out), each localized to the span it came from. Here the reference is the KB itself:

- the **claims** of an answer are the entities it names: the final answer's entities, each
  sub-answer's entities, and KB names written in the reasoning chain (:mod:`kgqa.check.claims`);
- a **mistake** is a claim that no triple in the KB supports for this question: a name that
  is not an entity, an entity that is not connected to the topic entities within the
  question's hop count, or (graph mode) support triples that are missing or do not reach it;
- an **omission** is an entity that the question's relation path reaches in the graph (the
  benchmark's gold path in eval, the path the answer itself followed in ``ask``) but that the
  final answer left out.

The precise rules are in ``docs/faithfulness.md``. The checker reads the graph through the
small :class:`~kgqa.check.base.KBGraph` interface (batched look-ups, one query per path hop);
callers pass the graph store (``Factory.rubric()``), tests an in-memory graph. It knows no KB:
words that a KB's prose capitalizes without naming an entity come in as ``extra_stop_words``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from kgqa.answers import STOP_WORDS, norm
from kgqa.check.base import KBGraph
from kgqa.check.claims import STAGE_ANSWER, Claim, Mention, read_mentions
from kgqa.check.report import FaithReport
from kgqa.errors import KGQAError
from kgqa.graph.paths import MAX_PATH_HOPS, PathStep, RelationPath, parse_path
from kgqa.types import Answer, Triple


class FaithfulnessChecker:
    """Checks answers against the KB: ``check(answer, topic_entities, hops, gold_path)``.

    ``graph`` is any :class:`KBGraph` (the graph store, or an in-memory one in tests);
    ``extra_stop_words`` are lone capitalized words never read as a name in this KB, beside
    the generic English ones of :data:`kgqa.answers.STOP_WORDS`."""

    def __init__(self, graph: KBGraph, *, extra_stop_words: Iterable[str] = ()):
        self.graph = graph
        self.stop_words = STOP_WORDS | {w.strip().lower() for w in extra_stop_words if w.strip()}

    def check(
        self,
        answer: Answer,
        topic_entities: Sequence[str],
        hops: int,
        gold_path: Sequence[PathStep] | None = None,
    ) -> FaithReport:
        """The claims of ``answer``, which of them are mistakes, and what the relation path
        reaches that the final answer omits.

        ``hops`` bounds the connection check (clamped to 1-3). ``gold_path`` is the question's
        relation path; without it the path the answer followed (``answer.parameters["path"]``,
        graph mode) is used, and without either, omissions are not computed."""
        started = time.perf_counter()
        topics = list(dict.fromkeys(topic_entities))
        hops = max(1, min(MAX_PATH_HOPS, int(hops)))
        path, source = self._path(answer, gold_path)
        reached: list[frozenset[str]] | None = self.graph.walk(topics, path) if path else None

        mentions, known = read_mentions(answer, self.graph.exact, self.stop_words)
        claims = self._resolve(mentions, known, topics, hops, reached, answer)
        final = reached[-1] if reached else None
        if final is not None:
            on = {norm(n) for n in final}
            claims = [
                Claim(c.stage, c.span, c.entity, c.supported, c.reason, norm(c.entity) in on)
                if c.stage == STAGE_ANSWER and c.entity is not None
                else c
                for c in claims
            ]
        omissions: tuple[str, ...] | None = None
        if final is not None:
            said = {norm(c.entity) for c in claims if c.stage == STAGE_ANSWER and c.entity}
            said |= {norm(c.span) for c in claims if c.stage == STAGE_ANSWER}
            omissions = tuple(sorted(n for n in final if norm(n) not in said))
        return FaithReport(
            mistakes=tuple(c for c in claims if not c.supported),
            omissions=omissions,
            claims=tuple(claims),
            path_reached=tuple(sorted(final)) if final is not None else None,
            path=path,
            path_source=source,
            hops=hops,
            seconds=time.perf_counter() - started,
        )

    # -- steps ----------------------------------------------------------------------------------

    @staticmethod
    def _path(
        answer: Answer, gold_path: Sequence[PathStep] | None
    ) -> tuple[RelationPath | None, str | None]:
        if gold_path:
            return tuple(gold_path), "gold"
        spec = answer.parameters.get("path")
        if isinstance(spec, list | tuple) and spec:
            try:
                return parse_path(spec), "answer"
            except KGQAError:
                return None, None  # a malformed path is no path: omissions are not computed
        return None, None

    def _resolve(
        self,
        mentions: Sequence[Mention],
        exact: set[str],
        topics: Sequence[str],
        hops: int,
        reached: Sequence[frozenset[str]] | None,
        answer: Answer,
    ) -> list[Claim]:
        topic_set = set(topics)
        missing = {m.name for m in mentions if m.name not in exact}
        ci = self.graph.case_insensitive(missing) if missing else {}

        # Unique mentions per stage (the first span wins), each with its KB name(s).
        seen: set[tuple[str, str]] = set()
        rows: list[tuple[Mention, list[str]]] = []
        for m in mentions:
            names = [m.name] if m.name in exact else ci.get(m.name.lower(), [])
            key = (m.stage, names[0] if names else norm(m.name))
            if key in seen:
                continue
            seen.add(key)
            rows.append((m, names))

        hop_of: dict[str, int] = {}
        for i, level in enumerate(reached or (), 1):
            for n in level:
                hop_of.setdefault(n, i)
        support_check = self._support(rows, topic_set, answer)
        need_distance = {
            n
            for m, names in rows
            if names and not (m.support and m.stage == STAGE_ANSWER)
            for n in names
            if n not in topic_set and n not in hop_of
        }
        dist = self.graph.distances(topics, need_distance, hops) if need_distance and topics else {}

        claims: list[Claim] = []
        for m, names in rows:
            if not names and m.tentative:
                continue
            if not names:
                claims.append(Claim(m.stage, m.span, None, False, "not in KB"))
                continue
            how = "" if m.name in exact else " (matched ignoring case)"
            if topic_set & set(names):
                entity = next(n for n in names if n in topic_set)
                claims.append(Claim(m.stage, m.span, entity, True, "topic entity" + how))
                continue
            if m.support and m.stage == STAGE_ANSWER:
                ok, reason = support_check[m.name]
                claims.append(Claim(m.stage, m.span, names[0], ok, reason))
                continue
            on = [n for n in names if n in hop_of]
            if on:
                reason = f"reached by the relation path (hop {hop_of[on[0]]})" + how
                claims.append(Claim(m.stage, m.span, on[0], True, reason))
                continue
            near = sorted((d, n) for n in names if (d := dist.get(n)) is not None)
            if not topics:
                # No topic entity (an LLM-only answer to a question that names none): only
                # existence can be checked.
                claims.append(Claim(m.stage, m.span, names[0], True, "in KB (no topic entity)"))
            elif near:
                d, entity = near[0]
                reason = f"{d} triple{'s' if d != 1 else ''} from the topic entities" + how
                claims.append(Claim(m.stage, m.span, entity, True, reason))
            else:
                within = f"{hops} hop{'s' if hops != 1 else ''}"
                reason = f"not connected to the topic entities within {within}" + how
                claims.append(Claim(m.stage, m.span, names[0], False, reason))
        return claims

    def _support(
        self,
        rows: Sequence[tuple[Mention, list[str]]],
        topics: set[str],
        answer: Answer,
    ) -> dict[str, tuple[bool, str]]:
        """Graph mode: every support triple exists, one touches the entity, and together
        they connect it to a topic entity."""
        wanted = [(m, names) for m, names in rows if m.support and m.stage == STAGE_ANSWER]
        if not wanted:
            return {}
        recorded = {
            st.triple.id: (st.triple.subject, st.triple.object)
            for s in answer.sub_answers
            for st in s.evidence
        }
        ids = {i for m, _ in wanted for i in m.support or ()}
        found = self.graph.triples(ids, recorded)
        out: dict[str, tuple[bool, str]] = {}
        for m, _ in wanted:
            support = m.support or ()
            gone = [i for i in support if i not in found]
            triples = [found[i] for i in support if i in found]
            if gone:
                listed = ", ".join(f"#{i}" for i in gone[:5])
                out[m.name] = (False, f"support triple missing from the KB: {listed}")
            elif not any(m.name in (t.subject, t.object) for t in triples):
                out[m.name] = (False, "no support triple touches it")
            elif not _connected(m.name, topics, triples):
                out[m.name] = (False, "support triples do not connect it to the topic entities")
            else:
                n = len(triples)
                out[m.name] = (True, f"supported by {n} triple{'s' if n != 1 else ''}")
        return out


def _connected(entity: str, topics: set[str], triples: Sequence[Triple]) -> bool:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for t in triples:
        parent[find(t.subject)] = find(t.object)
    root = find(entity)
    return any(find(t) == root for t in topics)


def ask_hops(answer: Answer) -> int:
    """N for ``ask --check``: the number of sub-questions, capped at 3 (at least 1)."""
    return max(1, min(MAX_PATH_HOPS, len(answer.sub_answers)))
