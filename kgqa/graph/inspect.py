"""Looking at an answer in Neo4j Browser, and keeping answers in the graph to browse later.

:func:`browser_cypher` / :func:`answer_cypher` / :func:`run_cypher` write a *parameter-free*
query that a person pastes into Neo4j Browser (Browser has no way to receive parameters with a
pasted query). This module is the one place in kgqa where values are rendered into Cypher
text, and only values that cannot carry syntax are: triple ids go through
:func:`operator.index` and ``int`` (a string or a float is refused), a run id through
:class:`uuid.UUID` (hex digits and dashes). A graph kgqa did not load has no triple ids on its
relationships; there the evidence is matched by content, and names travel as Cypher string
literals (:func:`cypher_string`: backslash and quote escaped, control characters refused),
labels and properties as backtick-quoted identifiers.

Saving runs (``(:KgqaRun)`` nodes linked to their topic entities with ``[:KGQA_TOPIC]`` and
answer entities with ``[:KGQA_ANSWER {rank}]``; only that label and the ``KGQA_*`` types are
written, so the KB's own nodes and triples stay as they are) is the graph store's
(:meth:`kgqa.graph.neo4j_store.Neo4jStore.save_run`, ``list_runs``, ``delete_runs``).
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kgqa.errors import KGQAError

if TYPE_CHECKING:
    from kgqa.graph.schema import GraphSchema
    from kgqa.types import Answer, Triple

# Enough for any real answer's evidence, and few enough nodes (≤ 2 per triple) that Browser
# draws them all and stays responsive (its default "initial node display" is 300 nodes).
MAX_BROWSER_TRIPLES = 200
# Triple ids are signed 64-bit integers in Neo4j (kgqa makes 63-bit ones).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
NO_EVIDENCE = "// no evidence triples: this answer used no graph triples, nothing to show"
RUN_LABEL = "KgqaRun"


def triple_id_value(value: object) -> int:
    """``value`` as a plain int, or :class:`KGQAError`; never anything that is not an integer."""
    try:
        number = int(operator.index(value))  # type: ignore[arg-type]
    except TypeError:
        raise KGQAError(f"a triple id must be an integer, not {value!r}") from None
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise KGQAError(f"triple id {number} does not fit in a 64-bit integer")
    return number


def browser_cypher(triple_ids: Sequence[int], limit: int = MAX_BROWSER_TRIPLES) -> str:
    """A parameter-free query that shows exactly the triples ``triple_ids`` in Neo4j Browser.

    Ids are de-duplicated (first occurrence kept) and capped at ``limit``; a cap is said in a
    ``// N of M triples`` comment line. An empty list gives a comment-only text
    (:data:`NO_EVIDENCE`). Raises :class:`KGQAError` for an id that is not an integer.

    Relationship property indexes are per type in Neo4j 5, so ``r.id IN [...]`` scans the
    relationships once: measured ~50–150 ms warm on the full MetaQA KB (133,582 triples).
    """
    if limit < 1:
        raise KGQAError(f"limit must be at least 1, not {limit}")
    ids = list(dict.fromkeys(triple_id_value(i) for i in triple_ids))
    if not ids:
        return NO_EVIDENCE
    shown = ids[:limit]
    if len(ids) > limit:
        count = f"// {len(shown)} of {len(ids)} triples (the first {limit} are shown)"
    else:
        count = f"// {len(shown)} triple{'s' if len(shown) != 1 else ''}"
    id_list = ", ".join(str(int(i)) for i in shown)
    return f"{count}\nMATCH p=()-[r]->()\nWHERE r.id IN [{id_list}]\nRETURN p"


def grounded_ids(answer: Answer) -> list[int]:
    """The triple ids an answer rests on: its answer entities' support triples (in rank order)
    when it has any, else its evidence ids (the top-K triples its sub-answers used)."""
    support = [tid for entity in answer.answer_entities for tid in entity.support]
    return list(dict.fromkeys(support or answer.evidence_ids))


def answer_cypher(
    answer: Answer, limit: int = MAX_BROWSER_TRIPLES, schema: GraphSchema | None = None
) -> str:
    """:func:`browser_cypher` for the answer's grounded evidence (see :func:`grounded_ids`);
    for a graph read through a mapping (``schema`` not kgqa's own), the same triples matched by
    their subject, relation and object."""
    ids = grounded_ids(answer)
    if schema is None or schema.native:
        return browser_cypher(ids, limit)
    known = {st.triple.id: st.triple for s in answer.sub_answers for st in s.evidence}
    return content_cypher([known[i] for i in ids if i in known], schema, limit)


def cypher_string(text: str) -> str:
    """``text`` as a single-quoted Cypher string literal; a control character is refused."""
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise KGQAError(f"a name with a control character is not shown in Cypher: {text!r}")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def content_cypher(
    triples: Sequence[Triple], schema: GraphSchema, limit: int = MAX_BROWSER_TRIPLES
) -> str:
    """A parameter-free query that shows ``triples`` of a graph without triple ids, each
    matched by its subject's name, its type and its object's name."""
    rows = []
    for t in dict.fromkeys(triples):
        try:
            rows.append(
                f"[{cypher_string(t.subject)}, {cypher_string(t.relation)}, {cypher_string(t.object)}]"
            )
        except KGQAError:
            continue
    if not rows:
        return NO_EVIDENCE
    shown = rows[:limit]
    count = (
        f"// {len(shown)} of {len(rows)} triples"
        if len(rows) > limit
        else f"// {len(shown)} triple{'s' if len(shown) != 1 else ''}"
    )
    a, b = schema.name_of("a"), schema.name_of("b")
    return (
        f"{count}\nMATCH p=(a)-[r]->(b)\n"
        f"WHERE [{a}, type(r), {b}] IN [{', '.join(shown)}]\nRETURN p"
    )


def run_cypher(run_id: str) -> str:
    """A parameter-free query that shows a saved run in Browser: the run node, its links to the
    topic and answer entities, and the evidence triples it recorded."""
    try:
        rendered = str(uuid.UUID(run_id))
    except (ValueError, TypeError, AttributeError):
        raise KGQAError(f"not a kgqa run id (a UUID): {run_id!r}") from None
    return (
        f"// kgqa run {rendered}: the run, its topic and answer entities, its evidence\n"
        f"MATCH (run:{RUN_LABEL} {{run_id: '{rendered}'}})\n"
        "OPTIONAL MATCH link=(run)-[:KGQA_TOPIC|KGQA_ANSWER]->(:Entity)\n"
        "WITH run, collect(link) AS links\n"
        "OPTIONAL MATCH triple=(:Entity)-[r]->(:Entity) WHERE r.id IN run.evidence_ids\n"
        "RETURN run, links, collect(triple) AS evidence"
    )


def browser_url(http_port: int = 7474, host: str = "127.0.0.1") -> str:
    """Where Neo4j Browser is served by the local server."""
    return f"http://{host}:{int(http_port)}/browser/"
