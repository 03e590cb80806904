"""Which nodes of a Neo4j database are the KB's entities, and what their names are.

kgqa's own graphs (``kgqa load``) are ``(:Entity {name})`` nodes whose relationships carry the
triple ``id``. A graph that is already in Neo4j has its own labels and name properties (the
Movies example: ``(:Person {name})``, ``(:Movie {title})``) and no triple ids. Settings
``neo4j.entity_labels`` (``"Person,Movie"``, or ``"*"`` for every label) and
``neo4j.name_properties`` (``"name,title"``: the first one a node has is its name) describe it,
and :meth:`GraphSchema.adapt` rewrites each packaged query for it: node patterns take the
labels and a name predicate, name reads become ``coalesce(n.`name`, n.`title`)``, and a
relationship's triple id is computed by the store from its content
(:func:`kgqa.loaders.base.triple_id`, the same id ``kgqa load`` gives), because the user's
relationships carry none. Labels and properties are identifiers, not values: they are
backtick-quoted (a backtick doubled), never parameters, and every adapted query is checked
with ``EXPLAIN`` by the integration tests.

What kgqa writes into such a graph, and nothing else: one full-text index over the name
properties (``kgqa_entity_names``, for suggestions and entity linking; ``kgqa index`` creates
it) and, only for ``kgqa ask --save``, ``:KgqaRun`` nodes with ``KGQA_*`` links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from kgqa.errors import ConfigError

NATIVE_LABEL = "Entity"
NATIVE_NAME = "name"
NATIVE_FULLTEXT = "entity_names"
MAPPED_FULLTEXT = "kgqa_entity_names"
RUN_LABEL = "KgqaRun"

_PATTERN_WITH_NAME = re.compile(r"\((\w*):Entity \{name: ([^}]+)\}\)")
_PATTERN = re.compile(r"\((\w*):Entity\)")
_NODE_ALIAS = re.compile(r"(?:startNode|endNode)\(\w+\) AS (\w+)")
_NAME_READ = re.compile(r"((?:startNode|endNode)\(\w+\)|\b\w+)\.name\b")
_YIELD_NODE = re.compile(r"YIELD (node)\b")


def quote(identifier: str) -> str:
    """A label or property name as a Cypher identifier (backticks doubled inside)."""
    return "`" + identifier.replace("`", "``") + "`"


def _names(text: str, what: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not items:
        raise ConfigError(f"neo4j.{what} is empty; give at least one (e.g. 'Entity')")
    return items


@dataclass(frozen=True)
class GraphSchema:
    """The entity labels (``()``: any label) and name properties of the KB's nodes."""

    labels: tuple[str, ...] = (NATIVE_LABEL,)
    name_properties: tuple[str, ...] = (NATIVE_NAME,)

    @classmethod
    def from_settings(cls, labels: str, name_properties: str) -> GraphSchema:
        chosen = () if labels.strip() == "*" else _names(labels, "entity_labels")
        return cls(chosen, _names(name_properties, "name_properties"))

    @property
    def native(self) -> bool:
        """kgqa's own graph: ``(:Entity {name})`` with triple ids on the relationships."""
        return self.labels == (NATIVE_LABEL,) and self.name_properties == (NATIVE_NAME,)

    @property
    def fulltext_index(self) -> str:
        return NATIVE_FULLTEXT if self.native else MAPPED_FULLTEXT

    def label_expression(self) -> str:
        """``:`Person`|`Movie``` (empty for any label)."""
        return ":" + "|".join(quote(label) for label in self.labels) if self.labels else ""

    def name_of(self, node: str) -> str:
        """The Cypher expression of a node's name."""
        reads = [f"{node}.{quote(p)}" for p in self.name_properties]
        return reads[0] if len(reads) == 1 else f"coalesce({', '.join(reads)})"

    def adapt(self, text: str) -> str:
        """``text`` (a packaged query written for kgqa's own graph) for this schema."""
        return text if self.native else _adapt(text, self)


@lru_cache(maxsize=256)
def _adapt(text: str, schema: GraphSchema) -> str:
    labels = schema.label_expression()
    nodes: set[str] = set()
    counter = iter(range(1_000_000))

    def var(name: str) -> str:
        v = name or f"_kgqa{next(counter)}"
        nodes.add(v)
        return v

    # A saved run is never an entity, even if it has a property of the same name.
    def entity(v: str) -> str:
        return f"NOT {v}:{RUN_LABEL}"

    def with_name(m: re.Match[str]) -> str:
        v = var(m.group(1))
        return f"({v}{labels} WHERE {schema.name_of(v)} = {m.group(2)} AND {entity(v)})"

    def plain(m: re.Match[str]) -> str:
        v = var(m.group(1))
        return f"({v}{labels} WHERE {schema.name_of(v)} IS NOT NULL AND {entity(v)})"

    out = _PATTERN_WITH_NAME.sub(with_name, text)
    out = _PATTERN.sub(plain, out)
    nodes |= set(_NODE_ALIAS.findall(out)) | set(_YIELD_NODE.findall(out))

    def name_read(m: re.Match[str]) -> str:
        target = m.group(1)
        if target.startswith(("startNode(", "endNode(")) or target in nodes:
            return schema.name_of(target)
        return m.group(0)

    out = _NAME_READ.sub(name_read, out)
    # Triple ids: the user's relationships carry none; the store computes them from content.
    out = out.replace("r.id IS NOT NULL", "true")
    out = out.replace("ORDER BY r.id", "ORDER BY elementId(r)")
    out = out.replace("count(DISTINCT r.id)", "count(r)")
    out = re.sub(r"\br\.id\b", "null", out)
    return out.replace(f"'{NATIVE_FULLTEXT}'", f"'{MAPPED_FULLTEXT}'")
