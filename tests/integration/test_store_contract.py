"""The graph store contract: Neo4jStore (the real server the test setup starts) and MemoryStore
(the same reads in memory, for unit tests and benchmarks) answer every read the same way over
the same KB, down to the KB profile derived from each."""

from __future__ import annotations

import pytest

from kgqa.errors import AmbiguousEntity, EntityNotFound
from kgqa.graph.expand import ExpandPolicy
from kgqa.graph.load import load_kb
from kgqa.graph.memory_store import MemoryStore
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.graph.paths import PathStep
from kgqa.loaders.base import ParsedKB, make_triple, triple_id
from kgqa.profile.derive import derive_profile
from kgqa.types import Triple

pytestmark = pytest.mark.integration

# Invented: people, their countries and clubs, a symmetric and an inverse-marked relation, a
# hub (the country Norland) and names that differ only by case.
FACTS = [
    ("Ada", "spouse", "Ben"),
    ("Ben", "spouse", "Ada"),
    ("Ada", "has_child", "Cy"),
    ("Cy", "has_child_inverse", "Ada"),
    ("Ada", "nationality", "Norland"),
    ("Ben", "nationality", "Norland"),
    ("Cy", "nationality", "Norland"),
    ("Di", "nationality", "Norland"),
    ("Eve", "nationality", "Ostmark"),
    ("Ada", "member_of", "Rowing Club"),
    ("Eve", "member_of", "Rowing Club"),
    ("Norland", "capital", "Port Avel"),
    ("Ostmark", "capital", "Kessa"),
    ("Cy", "nickname", "ada"),
]


def triples() -> list[Triple]:
    return [Triple(triple_id(s, r, o), s, r, o) for s, r, o in FACTS]


@pytest.fixture
def stores(clean_graph, neo4j_settings) -> tuple[Neo4jStore, MemoryStore]:
    neo = Neo4jStore(clean_graph, neo4j_settings.neo4j.database)
    parsed = ParsedKB(
        "people.txt", [make_triple(s, r, o, i) for i, (s, r, o) in enumerate(FACTS, 1)]
    )
    load_kb(neo, parsed)
    return neo, MemoryStore(triples())


def both(stores, call):
    neo, mem = stores
    return call(neo), call(mem)


def test_entity_reads_agree(stores) -> None:
    neo, mem = stores
    for store in (neo, mem):
        assert store.entity_exists("Ada") and not store.entity_exists("Zed")
        assert store.exact(["Ada", "ada", "Zed"]) == {"Ada", "ada"}
        assert set(store.node_ids(["Ada", "Zed"])) == {"Ada"}
        assert store.case_insensitive(["ADA"]) == {"ada": ["Ada", "ada"]}
        with pytest.raises(EntityNotFound) as e:
            store.require_entities(["Ben", "BEN"])
        assert "Ben" in e.value.suggestions
        assert store.link_entity("eve") == "Eve"
        with pytest.raises(AmbiguousEntity):
            store.link_entity("ADA")
    assert neo.link_question("who is married to Ben?") == mem.link_question(
        "who is married to Ben?"
    )


def test_graph_reads_agree(stores) -> None:
    a, b = both(stores, lambda s: sorted(s.all_triples(), key=lambda t: t.id))
    assert a == b == sorted(triples(), key=lambda t: t.id)
    a, b = both(stores, lambda s: s.stats())
    assert a == b
    a, b = both(stores, lambda s: s.relation_types())
    assert a == b == sorted({r for _, r, _ in FACTS})
    ids = [t.id for t in triples()][:3]
    a, b = both(stores, lambda s: s.triples_by_ids(ids))
    assert a == b
    a, b = both(
        stores,
        lambda s: {
            (e.from_name, e.triple, e.outgoing) for e in s.frontier_edges(["Ada", "Norland"])
        },
    )
    assert a == b
    path = [PathStep("nationality", True), PathStep("nationality", False)]
    a, b = both(stores, lambda s: s.walk(["Ada"], path))
    assert a == b == [frozenset({"Norland"}), frozenset({"Ben", "Cy", "Di"})]
    a, b = both(stores, lambda s: s.distances(["Ada"], ["Ben", "Port Avel", "Kessa", "Eve"], 2))
    assert a == b


@pytest.mark.parametrize("hops,hub_cap", [(1, 0), (2, 0), (2, 3), (3, 3)])
def test_candidates_agree(stores, hops: int, hub_cap: int) -> None:
    policy = ExpandPolicy(hops, hub_cap, 1000)
    a, b = both(stores, lambda s: s.candidates(["Ada"], policy))
    assert a.by_hop == b.by_hop
    assert a.skipped_hubs == b.skipped_hubs


def test_schema_samples_agree(stores) -> None:
    a, b = both(stores, lambda s: s.relation_stats())
    assert a == b
    for r in sorted({r for _, r, _ in FACTS}):
        a, b = both(stores, lambda s, r=r: s.sample_triples(r, 2))
        assert a == b
        for out in (True, False):
            # 2: the stores sample the same far ends (by triple id), not just all of them.
            for limit in (50, 2):
                a, b = both(stores, lambda s, r=r, o=out, n=limit: s.far_end_edges(r, o, n))
                assert a == b, (r, out, limit)
        a, b = both(stores, lambda s, r=r: s.reverse_edges(r, 50))
        assert a == b, r


def test_the_same_profile_is_derived_from_either_store(stores) -> None:
    a, b = both(stores, lambda s: derive_profile(s, "sha256:x").to_json())
    a.pop("created")
    b.pop("created")
    assert a == b
    assert a["relations"] and a["examples"]
