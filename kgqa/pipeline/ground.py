"""Grounding a free-text answer (modes ``kgrag``, ``kaping``, ``qd``, ``llm``): the KG entities
its answer line names, each with its Neo4j node id and the ids of the triples, among those the
pipeline retrieved for its sub-questions, that contain it.

Graph mode produces its answer entities by walking the graph; the other modes write text, so
their entities are *read* from it: every name-like span or list item of the answer line, and
every entity of the retrieved triples, is looked up exactly in the KB in one query, and the
known names found on the line (longest first, without overlaps, in line order; the topic
entities excluded) become the answer entities. Each one's support is the shortest chain of
retrieved triples from the topic entity to it (:func:`support_paths`). A name the KB has but
no retrieved triple contains keeps an empty support: the answer states it without evidence (``qd`` and ``llm``
retrieve nothing, so all of theirs are unsupported). The faithfulness check judges them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from kgqa.answers import complete_answer_line, mentions, norm
from kgqa.types import AnswerEntity, Triple

# names -> {name: node id} for the names that are KB entities (exact, case-sensitive).
NodeIds = Callable[[Iterable[str]], dict[str, str]]


def support_paths(topics: set[str], evidence: Sequence[Triple]) -> Callable[[str], tuple[int, ...]]:
    """``support(name)``: the retrieved triples that support ``name`` — the shortest chain of
    them from a topic entity to it (either direction, first retrieved first); when they do not
    connect the two, the retrieved triples that contain it; () when none does. One
    breadth-first search over ``evidence`` serves every name."""
    links: dict[str, list[tuple[str, int]]] = {}
    for t in evidence:
        links.setdefault(t.subject, []).append((t.object, t.id))
        links.setdefault(t.object, []).append((t.subject, t.id))
    came_by: dict[str, tuple[str, int] | None] = {n: None for n in topics if n in links}
    queue = list(came_by)
    for node in queue:
        for nxt, tid in links.get(node, ()):
            if nxt not in came_by:
                came_by[nxt] = (node, tid)
                queue.append(nxt)

    def support(name: str) -> tuple[int, ...]:
        if name not in came_by:
            return tuple(dict.fromkeys(tid for _, tid in links.get(name, ())))
        path: list[int] = []
        step = came_by[name]
        while step is not None:
            path.append(step[1])
            step = came_by[step[0]]
        return tuple(reversed(path))

    return support


class AnswerGrounder:
    """``ground(text, topics, evidence) -> answer entities`` (see the module doc).

    ``node_ids`` looks names up in the KB; ``candidates`` lists the strings of a text that
    could name an entity (the factory passes the answer parser's,
    :func:`kgqa.answers.text_candidates`, so that grounding, the faithfulness check and the
    metrics read answers the same way)."""

    def __init__(self, node_ids: NodeIds, candidates: Callable[[str], set[str]]):
        self.node_ids = node_ids
        self.candidates = candidates

    def ground(
        self,
        text: str,
        topics: Sequence[str],
        evidence: Sequence[Triple],
        *,
        cut: bool = False,
        suspect: Collection[str] = (),
    ) -> tuple[AnswerEntity, ...]:
        """``cut``: the LLM stopped writing ``text`` at its token limit; a last item of the
        answer line that may be a name cut short is not grounded. ``suspect``: names that may
        be cut short elsewhere (the last item of a sub-answer cut at the limit, which the
        synthesis may repeat); they are not grounded either."""
        line = complete_answer_line(text, cut)
        if not line:
            return ()
        low = line.lower()
        in_evidence = {n for t in evidence for n in (t.subject, t.object)}
        ids = self.node_ids(self.candidates(line) | {n for n in in_evidence if n.lower() in low})
        topic = set(topics)
        support = support_paths(topic, evidence)
        entities: list[AnswerEntity] = []
        doubtful = {norm(s) for s in suspect}
        for name in dict.fromkeys(mentions(line, ids)):
            if name in topic or norm(name) in doubtful:
                continue
            ids_of = support(name)
            entities.append(AnswerEntity(name, ids[name], float(len(ids_of)), ids_of))
        return tuple(entities)
