"""Candidate retrieval, entity look-ups, the index across a reload, and graph mode's edges,
against the real Neo4j test server."""

from __future__ import annotations

import pytest

from kgqa.embed.hashing import HashingEmbedder
from kgqa.errors import AmbiguousEntity, EntityNotFound
from kgqa.graph.expand import ExpandPolicy
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.index.faiss_index import VectorIndex
from kgqa.index.sync import sync_index
from kgqa.loaders.metaqa import parse_lines
from kgqa.pipeline.retrieve import GraphRetriever

pytestmark = pytest.mark.integration

# A small movie graph with one hub genre ("Drama", degree 6 > hub cap 4) and a tag that
# differs from a person only by case.
KB = """\
Heat|directed_by|Michael Mann
Heat|starred_actors|Al Pacino
Heat|has_genre|Drama
Heat|has_tags|al pacino
Collateral|directed_by|Michael Mann
Collateral|starred_actors|Tom Cruise
Collateral|has_genre|Drama
Top Gun|starred_actors|Tom Cruise
Top Gun|release_year|1986
Serpico|starred_actors|Al Pacino
Serpico|has_genre|Drama
Ali|directed_by|Michael Mann
Ali|has_genre|Drama
Rocky|has_genre|Drama
Rocky|release_year|1976
Amelie|has_genre|Drama
Amelie|in_language|French
"""


@pytest.fixture
def graph(clean_graph, neo4j_settings):
    store = Neo4jStore(clean_graph, neo4j_settings.neo4j.database)
    load_kb(store, parse_lines(KB.encode().splitlines(keepends=True)))
    return store


def names_in(candidates):
    return {x for t in candidates.triples for x in (t.subject, t.object)}


def test_one_hop_is_bidirectional(graph):
    c = graph.candidates(["Michael Mann"], ExpandPolicy(1, 4, 1000))
    # Michael Mann is only ever an object: every triple found is an incoming edge.
    assert {t.subject for t in c.triples} == {"Heat", "Collateral", "Ali"}
    assert [len(h) for h in c.by_hop] == [3]
    assert not c.truncated


def test_two_and_three_hops_group_by_distance_and_respect_the_hub_cap(graph):
    c2 = graph.candidates(["Top Gun"], ExpandPolicy(2, 4, 1000))
    hop1 = {(t.subject, t.relation, t.object) for t in c2.by_hop[0]}
    assert hop1 == {
        ("Top Gun", "starred_actors", "Tom Cruise"),
        ("Top Gun", "release_year", "1986"),
    }
    assert ("Collateral", "starred_actors", "Tom Cruise") in {
        (t.subject, t.relation, t.object) for t in c2.by_hop[1]
    }
    c3 = graph.candidates(["Top Gun"], ExpandPolicy(3, 4, 1000))
    # Collateral's genre and director are 3 hops away; Drama is a hub (degree 6 > 4), so the
    # other Drama movies are reached only if we expanded through it: they must not be.
    assert {"Michael Mann", "Drama"} <= names_in(c3)
    assert "Rocky" not in names_in(c3) and "Amelie" not in names_in(c3)
    heat = graph.candidates(["Heat"], ExpandPolicy(3, 4, 1000))
    assert heat.skipped_hubs == (("Drama", 6),)  # reached at hop 1, not expanded through
    uncapped = graph.candidates(["Top Gun"], ExpandPolicy(3, 0, 1000))
    assert "Rocky" not in names_in(uncapped)  # Drama is at distance 3: its edges are hop 4
    c4_from_heat = graph.candidates(["Heat"], ExpandPolicy(2, 0, 1000))
    assert "Rocky" in names_in(c4_from_heat)  # without a cap, Drama is expanded at hop 2
    assert "Rocky" not in names_in(graph.candidates(["Heat"], ExpandPolicy(2, 4, 1000)))


def test_truncation_is_reported(graph):
    c = graph.candidates(["Drama"], ExpandPolicy(2, 0, 5))
    assert c.truncated and len(c) == 5


def test_exact_case_and_unknown_entities(graph):
    # "al pacino" the tag and "Al Pacino" the person are different nodes
    tag = graph.candidates(["al pacino"], ExpandPolicy(1, 4, 100))
    assert {(t.subject, t.relation) for t in tag.triples} == {("Heat", "has_tags")}
    with pytest.raises(EntityNotFound) as e:
        graph.candidates(["Al pacino"], ExpandPolicy(1, 4, 100))
    assert "Al Pacino" in e.value.suggestions and "al pacino" in e.value.suggestions
    assert "did you mean" in str(e.value)


def test_entity_linking_exact_then_case_insensitive_and_ambiguity(graph):
    assert graph.link_entity("Tom Cruise") == "Tom Cruise"
    assert graph.link_entity("tom cruise") == "Tom Cruise"
    with pytest.raises(AmbiguousEntity, match="several entities"):
        graph.link_entity("AL PACINO")
    with pytest.raises(EntityNotFound):
        graph.link_entity("Nobody Known")


def test_frontier_edges_see_both_directions(graph):
    edges = graph.frontier_edges(["Tom Cruise", "Top Gun"])
    seen = {(e.from_name, e.triple.relation, e.outgoing, e.to_name) for e in edges}
    assert ("Tom Cruise", "starred_actors", False, "Collateral") in seen
    assert ("Top Gun", "release_year", True, "1986") in seen


def test_index_survives_reopen_reload_embeds_nothing_and_top_k_ranks_candidates(graph, tmp_path):
    embedder = HashingEmbedder(dim=64)
    triples = graph.all_triples()
    first = sync_index(tmp_path / "ix", embedder, triples, progress=False)
    assert first.embedded == len(triples) == 17
    again = sync_index(tmp_path / "ix", embedder, graph.all_triples(), progress=False)
    assert again.embedded == 0 and again.already_present == 17
    index = VectorIndex.open(tmp_path / "ix", embedder)  # a fresh process would do the same
    retriever = GraphRetriever(graph, index, embedder, ExpandPolicy(2, 4, 1000))
    candidates = retriever.candidates(["Top Gun"], 2)
    top = retriever.top_k("Top Gun release year 1986", candidates, 3)
    assert len(top) == 3
    assert {s.triple.id for s in top} <= set(candidates.ids)
    assert top[0].triple.relation == "release_year"
    assert top == sorted(top, key=lambda s: -s.score)
