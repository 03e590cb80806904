"""The faithfulness check: the knowledge graph is the rubric (PoSh, ICLR 2026, applied to KGQA).

PoSh turns a description into a structured checklist and verifies each item against the
reference, reporting *mistakes* (claimed but not supported) and *omissions* (in the reference
but left out), each localized to the span it came from. Here the reference is the KB itself:

- the **claims** of an answer are the entities it names: the final answer's entities, each
  sub-answer's entities, and KB names written in the reasoning chain;
- a **mistake** is a claim that no triple in the KB supports for this question: a name that
  is not an entity, an entity that is not connected to the topic entities within the
  question's hop count, or (graph mode) support triples that are missing or do not reach it;
- an **omission** is an entity that the question's relation path reaches in the graph (the
  gold qtype path in eval, the path the answer itself followed in ``ask``) but that the final
  answer left out.

The precise rules are in ``docs/faithfulness.md``. The checker reads the graph through the
small :class:`KBGraph` interface (batched look-ups, one query per path hop);
:class:`kgqa.graph.paths.Neo4jRubric` implements it over Neo4j, tests use an in-memory graph.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kgqa.errors import GraphUnavailable, KGQAError, Neo4jServerError
from kgqa.eval.metrics import EntityNames, Item, answer_items, norm
from kgqa.graph.paths import (
    MAX_PATH_HOPS,
    PathStep,
    RelationPath,
    describe_path,
    parse_path,
)
from kgqa.types import Answer, Triple

if TYPE_CHECKING:
    import neo4j

    from kgqa.eval.metaqa import Question

STAGE_ANSWER = "answer"
STAGE_REASONING = "reasoning"
# How many omitted names a report lists (all of them are counted).
LISTED_OMISSIONS = 20


def sub_answer_stage(index: int) -> str:
    """The stage label of sub-answer ``index`` (1-based, as in ``SubAnswer.index``)."""
    return f"sub-answer {index}"


# -- MetaQA relation paths ----------------------------------------------------------------------

# qtype token -> relation. ``movie_to_X`` follows X's relation out of the movie, ``X_to_movie``
# follows it backwards into the movie (MetaQA's subjects are always movies).
METAQA_RELATIONS: Mapping[str, str] = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "genre": "has_genre",
    "language": "in_language",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}


def metaqa_path(qtype: str) -> RelationPath:
    """The relation path of a MetaQA qtype: ``writer_to_movie_to_genre`` ->
    ``(written_by, in), (has_genre, out)``."""
    nodes = qtype.strip().split("_to_")
    steps: list[PathStep] = []
    for a, b in zip(nodes, nodes[1:], strict=False):
        if a == "movie" and b in METAQA_RELATIONS:
            steps.append(PathStep(METAQA_RELATIONS[b], True))
        elif b == "movie" and a in METAQA_RELATIONS:
            steps.append(PathStep(METAQA_RELATIONS[a], False))
        else:
            raise KGQAError(
                f"unknown MetaQA qtype {qtype!r}: each step is movie_to_X or X_to_movie with X "
                f"in {', '.join(sorted(METAQA_RELATIONS))}"
            )
    if not steps:
        raise KGQAError(f"unknown MetaQA qtype {qtype!r}: no step")
    return tuple(steps)


# -- the graph interface ------------------------------------------------------------------------


class KBGraph(Protocol):
    """What the checker reads from the KB (see :class:`kgqa.graph.paths.Neo4jRubric`)."""

    def exact(self, names: Iterable[str]) -> set[str]:
        """The names that are entities, exactly."""
        ...

    def case_insensitive(self, names: Iterable[str]) -> dict[str, list[str]]:
        """``{lower-cased name: entity names equal to it ignoring case}``."""
        ...

    def distances(
        self, topics: Sequence[str], names: Iterable[str], max_hops: int
    ) -> dict[str, int | None]:
        """Shortest-path length (<= max_hops, any relation and direction) from the topics."""
        ...

    def walk(self, topics: Sequence[str], path: Sequence[PathStep]) -> list[frozenset[str]]:
        """The entities each hop of ``path`` reaches (topic entities removed at each hop)."""
        ...

    def triples(
        self, ids: Iterable[int], names: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, Triple]:
        """The triples among ``ids`` that exist."""
        ...


# -- reports ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One checklist item: an entity the answer names, where, and whether the KB supports it.

    ``stage`` is ``answer``, ``sub-answer i`` or ``reasoning``; ``span`` the text item it was
    read from; ``entity`` the KB name it resolved to (``None``: no entity has that name);
    ``on_path`` (final-answer claims, when a relation path is known) whether the path reaches
    it: a supported claim off the path is a wrong but real answer, not a hallucination."""

    stage: str
    span: str
    entity: str | None
    supported: bool
    reason: str
    on_path: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "span": self.span,
            "entity": self.entity,
            "supported": self.supported,
            "reason": self.reason,
            "on_path": self.on_path,
        }


@dataclass(frozen=True)
class FaithReport:
    """The check of one answer. ``omissions`` and ``path_reached`` are ``None`` when no
    relation path was known (nothing to compare against)."""

    mistakes: tuple[Claim, ...]
    omissions: tuple[str, ...] | None
    claims: tuple[Claim, ...]
    path_reached: tuple[str, ...] | None
    path: RelationPath | None = None
    # "gold" (the question's qtype), "answer" (the path the answer followed) or None.
    path_source: str | None = None
    hops: int = 0
    seconds: float = 0.0

    @property
    def answer_claims(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.stage == STAGE_ANSWER)

    @property
    def answer_mistakes(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.mistakes if c.stage == STAGE_ANSWER)

    @property
    def off_path(self) -> tuple[Claim, ...]:
        """Final-answer claims the KB supports but the relation path does not reach."""
        return tuple(c for c in self.answer_claims if c.supported and c.on_path is False)

    def as_metrics(self, listed: int = LISTED_OMISSIONS) -> dict[str, Any]:
        """The fields an eval record's ``metrics`` gets: counts at the top (aggregated by
        :func:`kgqa.eval.metrics.aggregate` and :func:`summarize`), details under ``faith``."""
        out: dict[str, Any] = {
            "mistakes": len(self.mistakes),
            "answer_claims": len(self.answer_claims),
            "answer_mistakes": len(self.answer_mistakes),
        }
        if self.omissions is not None:
            out["omissions"] = len(self.omissions)
            out["off_path"] = len(self.off_path)
        out["faith"] = {
            "hops": self.hops,
            "path": [s.as_list() for s in self.path] if self.path is not None else None,
            "path_source": self.path_source,
            "path_reached": len(self.path_reached) if self.path_reached is not None else None,
            "claims": len(self.claims),
            "mistakes": [c.as_dict() for c in self.mistakes],
            "omitted": list(self.omissions[:listed]) if self.omissions is not None else None,
            "seconds": round(self.seconds, 4),
        }
        return out

    def to_json(self) -> dict[str, Any]:
        """Everything, for ``ask --check --json``."""
        return {
            "hops": self.hops,
            "path": [s.as_list() for s in self.path] if self.path is not None else None,
            "path_source": self.path_source,
            "claims": [c.as_dict() for c in self.claims],
            "mistakes": [c.as_dict() for c in self.mistakes],
            "omissions": list(self.omissions) if self.omissions is not None else None,
            "path_reached": list(self.path_reached) if self.path_reached is not None else None,
            "seconds": round(self.seconds, 4),
        }

    def format(self, answer: Answer | None = None, listed: int = LISTED_OMISSIONS) -> str:
        """The text ``ask --check`` prints: each mistake with its stage and span (and the
        sub-question it arose in), then the omissions count and the first names."""
        questions = (
            {sub_answer_stage(s.index): s.original for s in answer.sub_answers} if answer else {}
        )
        n_ans = len(self.answer_claims)
        lines = [
            f"{len(self.claims)} claim{'s' if len(self.claims) != 1 else ''} checked against "
            f"the KB ({n_ans} in the final answer), "
            f"within {self.hops} hop{'s' if self.hops != 1 else ''} of the topic entities"
        ]
        if self.mistakes:
            lines.append(f"mistakes: {len(self.mistakes)}")
            for c in self.mistakes:
                where = c.stage
                if c.stage in questions:
                    where += f" ({questions[c.stage]})"
                lines.append(f"  - {where}: {c.span!r}: {c.reason}")
        else:
            lines.append("mistakes: none")
        if self.omissions is None:
            lines.append("omissions: not computed (no relation path)")
        else:
            via = f"{describe_path(self.path or ())} ({self.path_source} path)"
            reached = len(self.path_reached or ())
            if self.omissions:
                shown = ", ".join(self.omissions[:listed])
                more = len(self.omissions) - min(listed, len(self.omissions))
                lines.append(
                    f"omissions: {len(self.omissions)} of {reached} entities reached by {via}: "
                    f"{shown}" + (f" (and {more} more)" if more else "")
                )
            else:
                lines.append(f"omissions: none ({reached} entities reached by {via})")
            if self.off_path:
                names = ", ".join(c.entity or c.span for c in self.off_path[:listed])
                lines.append(f"answers in the KB but off the path: {names}")
        return "\n".join(lines)


# -- reading claims out of text -----------------------------------------------------------------

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d\n]+)[\"\u201d]|\[([^\[\]\n]+)\]")
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'`*()[]{}<>\u201c\u201d\u2018\u2019.,;:!?"
_MAX_NAME_TOKENS = 10
_TITLE_ENDINGS = "!.?"
# Longer answer items are prose, not names.
_MAX_ITEM_WORDS = 8
# Lower-case words that names contain ("Gone with the Wind", "Ludwig van Beethoven").
_CONNECTIVES = frozenset(
    "a an and at by de del der di du e et for from in la le of on the to van von with y".split()  # noqa: SIM905
)
# Capitalized words that start sentences far more often than they name an entity (MetaQA has
# movies called "It", "Her", "Up"...): a lone one is never read as a claim.
_STOP_WORDS = frozenset(
    """a an and answer answers are as at be but by final film films for from he her here his i
    in is it its movie movies no none not of on or she so that the their them then there
    these they this those to was we were what which who with yes you""".split()  # noqa: SIM905
)
# An answer that declines to answer names nothing: it can omit, it cannot hallucinate.
_ABSTAIN = re.compile(
    r"\b(no answer|not (?:be )?found|unknown|cannot|can't|could not|couldn't|do not know|"
    r"don't know|not enough|no information|not sure|none|n/a)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Span:
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


def name_spans(text: str, min_tokens: int = 1) -> list[_Span]:
    """Every span that could be an entity name: runs of 1-10 words that start and end with a
    capitalized word (or a number), with edge punctuation stripped (and kept once more with
    its trailing "!", "." or "?" for titles like "Them!"), plus quoted and [bracketed] spans.
    Lone words need ``min_tokens=1`` and are never stop words."""
    tokens = [_core(text, m.start(), m.end()) for m in _TOKEN.finditer(text)]
    tokens = [(a, b) for a, b in tokens if b > a]
    spans: list[_Span] = []
    for i, (a, b) in enumerate(tokens):
        if not _capitalized(text[a:b]):
            continue
        for j in range(i + max(min_tokens, 1) - 1, min(len(tokens), i + _MAX_NAME_TOKENS)):
            c, d = tokens[j]
            if not _capitalized(text[c:d]):
                continue
            if i == j and text[a:b].lower() in _STOP_WORDS:
                continue
            spans.append(_Span(a, d, text[a:d]))
            e = d
            while e < len(text) and text[e] in _TITLE_ENDINGS:
                e += 1
            if e > d:
                spans.append(_Span(a, e, text[a:e]))
    for m in _QUOTED.finditer(text):
        group = 1 if m.group(1) is not None else 2
        a, b = _core(text, m.start(group), m.end(group))
        if b > a:
            spans.append(_Span(a, b, text[a:b]))
    return spans


def pick_names(spans: Iterable[_Span], known: Callable[[str], bool]) -> list[_Span]:
    """The known spans, longest first, without overlaps, in text order."""
    chosen: list[_Span] = []
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
    if not words or len(words) > _MAX_ITEM_WORDS or not _capitalized(words[0]):
        return False
    return all(_capitalized(w) or w in _CONNECTIVES for w in words)


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


@dataclass(frozen=True)
class _Mention:
    stage: str
    span: str
    name: str
    # Graph mode: the triple ids the answer says support this entity.
    support: tuple[int, ...] | None = None
    # Counts as a claim only if some entity has this name (ignoring case).
    tentative: bool = False


def text_candidates(text: str) -> set[str]:
    """Every string of ``text`` that could name an entity: the items the answer parser would
    look up and the name-like spans (for one batched KB look-up)."""
    rec = _recorder()
    answer_items(text, (), rec)
    found = {_original_case(text, c) for c in rec.asked}
    found.update(s.text for s in name_spans(text, 1))
    return found


# -- the checker --------------------------------------------------------------------------------


class FaithfulnessChecker:
    """Checks answers against the KB: ``check(answer, topic_entities, hops, gold_path)``.

    Built over Neo4j (``FaithfulnessChecker(driver, database)``) or over any
    :class:`KBGraph` (``FaithfulnessChecker(graph=...)``, e.g. an in-memory one in tests)."""

    def __init__(
        self,
        driver: neo4j.Driver | None = None,
        database: str = "neo4j",
        *,
        graph: KBGraph | None = None,
    ):
        if (driver is None) == (graph is None):
            raise KGQAError("FaithfulnessChecker needs a Neo4j driver or a graph, not both")
        if graph is None:
            from kgqa.graph.paths import Neo4jRubric

            graph = Neo4jRubric(driver, database)  # type: ignore[arg-type]
        self.graph: KBGraph = graph

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

        mentions, known = self._mentions(answer)
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

    def _mentions(self, answer: Answer) -> tuple[list[_Mention], set[str]]:
        """Every candidate claim with its stage and span, and the exact KB names among all
        candidates: one batched look-up of every listed name and every name-like span of the
        free text, which is then parsed with the names known."""
        lists: list[tuple[str, Sequence[tuple[str, tuple[int, ...] | None]]]] = []
        texts: list[tuple[str, str]] = []
        if answer.ranked_entities:
            lists.append(
                (STAGE_ANSWER, [(e.name, tuple(e.support) or None) for e in answer.ranked_entities])
            )
        elif answer.text.strip():
            texts.append((STAGE_ANSWER, answer.text))
        for s in answer.sub_answers:
            stage = sub_answer_stage(s.index)
            if s.entities:
                lists.append((stage, [(n, None) for n in s.entities]))
            elif s.answer.strip():
                texts.append((stage, s.answer))
        reasoning_spans = name_spans(answer.reasoning, 2) if answer.reasoning else []

        candidates: set[str] = {s.text for s in reasoning_spans}
        candidates |= {n for _, items in lists for n, _ in items}
        for _, text in texts:
            candidates |= text_candidates(text)
        known = self.graph.exact(candidates) if candidates else set()
        by_norm: dict[str, list[str]] = {}
        for name in sorted(known):
            by_norm.setdefault(norm(name), []).append(name)

        mentions: list[_Mention] = []
        for stage, items in lists:
            mentions += [_Mention(stage, n, n, support) for n, support in items if n.strip()]
        vocab = EntityNames(by_norm) if by_norm else None
        for stage, text in texts:
            for item in answer_items(text, (), vocab):
                mentions += self._item_mentions(stage, item, known, by_norm)
        for span in pick_names(reasoning_spans, known.__contains__):
            mentions.append(_Mention(STAGE_REASONING, span.text, span.text))
        return mentions, known

    @staticmethod
    def _item_mentions(
        stage: str, item: Item, known: set[str], by_norm: Mapping[str, list[str]]
    ) -> list[_Mention]:
        if item.known:
            exact = item.text if item.text in known else by_norm[norm(item.text)][0]
            return [_Mention(stage, item.text, exact)]
        # The shared parser strips final "!", "." and "?", which some titles end with
        # ("Hatari!", "With Friends Like These..."): the text had them, so that is the name.
        for name in sorted(known):
            if name.startswith(item.text) and not name[len(item.text) :].strip(_TITLE_ENDINGS):
                return [_Mention(stage, name, name)]
        inner = pick_names(name_spans(item.text, 1), known.__contains__)
        if inner:
            return [_Mention(stage, item.text, s.text) for s in inner]
        if _ABSTAIN.search(item.text) or len(item.text.split()) > _MAX_ITEM_WORDS:
            return []
        # No exact KB name: a case-insensitive look-up decides; failing it, a name-like item
        # ("John Smith") is a mistake and a phrase ("based on the triples") no claim at all.
        return [_Mention(stage, item.text, item.text, tentative=not looks_like_name(item.text))]

    def _resolve(
        self,
        mentions: Sequence[_Mention],
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
        rows: list[tuple[_Mention, list[str]]] = []
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
        rows: Sequence[tuple[_Mention, list[str]]],
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


# -- eval ---------------------------------------------------------------------------------------


def metaqa_checker(checker: FaithfulnessChecker) -> Callable[[Question, Answer], dict[str, Any]]:
    """The ``checker(question, answer)`` hook of :func:`kgqa.eval.runner.run_eval`: the check
    against the question's gold qtype path (N = its length; else the question's hop count).

    A question the check cannot run on (an unknown qtype, a Cypher error) gets
    ``faith_error`` instead of counts; a lost server stops the run like any fatal error."""

    def check(q: Question, answer: Answer) -> dict[str, Any]:
        try:
            path = metaqa_path(q.qtype) if q.qtype else None
            hops = len(path) if path else (q.hops or max(1, len(answer.sub_answers)))
            return checker.check(answer, q.entities, hops, path).as_metrics()
        except (GraphUnavailable, Neo4jServerError):
            raise
        except KGQAError as e:
            return {"faith_error": str(e)}

    return check


def ask_hops(answer: Answer) -> int:
    """N for ``ask --check``: the number of sub-questions, capped at 3 (at least 1)."""
    return max(1, min(MAX_PATH_HOPS, len(answer.sub_answers)))


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The run-level faithfulness figures from eval records (those the check ran on):
    ``mistake_rate`` (mistaken final-answer entities / final-answer entities),
    ``questions_with_mistakes`` (fraction with at least one mistake at any stage),
    ``mistakes``/``omissions`` (means per question), totals, and the check's median time."""
    rows = [
        r.get("metrics") or {}
        for r in records
        if r.get("status") == "ok" and "mistakes" in (r.get("metrics") or {})
    ]
    if not rows:
        return {}
    claims = sum(int(m.get("answer_claims", 0)) for m in rows)
    wrong = sum(int(m.get("answer_mistakes", 0)) for m in rows)
    out: dict[str, Any] = {
        "checked": len(rows),
        "mistakes": statistics.fmean(int(m["mistakes"]) for m in rows),
        "mistakes_total": sum(int(m["mistakes"]) for m in rows),
        "questions_with_mistakes": sum(1 for m in rows if int(m["mistakes"]) > 0) / len(rows),
        "answer_claims_total": claims,
        "answer_mistakes_total": wrong,
        "mistake_rate": wrong / claims if claims else None,
    }
    omitted = [int(m["omissions"]) for m in rows if "omissions" in m]
    if omitted:
        out["omissions"] = statistics.fmean(omitted)
        out["omissions_total"] = sum(omitted)
        out["off_path_total"] = sum(int(m.get("off_path", 0)) for m in rows)
    seconds = [float((m.get("faith") or {}).get("seconds", 0.0)) for m in rows]
    out["check_seconds_median"] = statistics.median(seconds)
    return out


def format_summary(summary: Mapping[str, Any]) -> str:
    """One line for the terminal after the aggregate table (empty when nothing was checked)."""
    if not summary.get("checked"):
        return ""
    rate = summary.get("mistake_rate")
    rate_text = f"{rate:.3f}" if rate is not None else "—"
    return (
        f"faithfulness: mistake rate {rate_text} of {summary['answer_claims_total']} answer "
        f"entities, {summary['questions_with_mistakes']:.2f} of {summary['checked']} questions "
        f"with a mistake, {summary.get('omissions', 0.0):.2f} omissions per question "
        f"(check {1000 * summary['check_seconds_median']:.0f} ms median)"
    )
