import pytest

from kgqa.graph.expand import hop_distances, lucene_escape
from kgqa.types import Triple

pytestmark = pytest.mark.unit


def t(i, s, r, o):
    return Triple(i, s, r, o)


def test_hop_distances_bidirectional_and_hub_rule():
    # M1 -written_by-> W ; M2 -written_by-> W ; M2 -has_genre-> Drama ; M3 -has_genre-> Drama
    triples = [
        t(1, "M1", "written_by", "W"),
        t(2, "M2", "written_by", "W"),
        t(3, "M2", "has_genre", "Drama"),
        t(4, "M3", "has_genre", "Drama"),
    ]
    degrees = {"M1": 1, "W": 2, "M2": 2, "Drama": 1000, "M3": 1}
    hops = hop_distances(triples, degrees, ["W"], hub_cap=500)
    # incoming edges count: W is the object of triples 1 and 2
    assert hops[1] == 1 and hops[2] == 1
    assert hops[3] == 2
    # Drama is a hub: reached, not expanded through, so M3's triple is not within 3 hops
    assert hops[4] > 3
    # without the cap Drama is expanded
    assert hop_distances(triples, degrees, ["W"], hub_cap=0)[4] == 3


def test_topic_entity_is_expanded_even_when_it_is_a_hub():
    triples = [t(1, "M1", "has_genre", "Drama"), t(2, "M1", "written_by", "W")]
    hops = hop_distances(triples, {"Drama": 5000, "M1": 2, "W": 1}, ["Drama"], hub_cap=500)
    assert hops == {1: 1, 2: 2}


def test_lucene_escape():
    assert lucene_escape('a"}) DETACH (n) //') == 'a\\"\\}\\) DETACH \\(n\\) \\/\\/'


def reference_hops(triples, degrees, entities, hub_cap):
    """The definition: BFS over adjacency lists, never stepping through a hub after the
    topic entities; a triple is one further than its nearer endpoint the walk steps through."""
    adjacency = {}
    for tr in triples:
        adjacency.setdefault(tr.subject, []).append(tr.object)
        adjacency.setdefault(tr.object, []).append(tr.subject)

    def through(n):
        return n in entities or not hub_cap or degrees[n] <= hub_cap

    dist = {e: 0 for e in entities if e in adjacency}
    frontier = list(dist)
    while frontier:
        nxt = []
        for node in frontier:
            if through(node):
                for other in adjacency[node]:
                    if other not in dist:
                        dist[other] = dist[node] + 1
                        nxt.append(other)
        frontier = nxt
    far = 1 << 30
    near = {n: d for n, d in dist.items() if through(n)}
    # Unreachable: 1 << 30, as hop_distances says.
    return {
        tr.id: min(min(near.get(tr.subject, far), near.get(tr.object, far)) + 1, far)
        for tr in triples
    }


@pytest.mark.parametrize("seed", range(40))
def test_candidates_grouped_by_level_as_a_bfs_over_adjacency_lists_groups_them(seed):
    import random

    from kgqa.graph.expand import ExpandPolicy, candidates_from_rows

    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(3, 40))]
    triples = [
        t(i, rng.choice(nodes), rng.choice(["r", "s", "t"]), rng.choice(nodes))
        for i in range(rng.randint(1, 120))
    ]
    degrees = {n: 0 for n in nodes}
    for tr in triples:
        degrees[tr.subject] += 1
        degrees[tr.object] += 1
    entities = rng.sample(nodes, rng.randint(1, 2))
    hub_cap = rng.choice([0, 3, 6, 1000])
    rows = [
        [tr.id, tr.subject, tr.relation, tr.object, degrees[tr.subject], degrees[tr.object]]
        for tr in triples
    ]
    rng.shuffle(rows)
    want = reference_hops(triples, degrees, entities, hub_cap)
    assert hop_distances(triples, degrees, entities, hub_cap) == want
    for hops in (1, 2, 3):
        got = candidates_from_rows(rows, entities, ExpandPolicy(hops, hub_cap, 10_000), 0.0)
        for i, group in enumerate(got.by_hop, 1):
            assert all(min(want[tr.id], hops) == i for tr in group)
            assert list(group) == sorted(group, key=lambda tr: (tr.subject, tr.relation, tr.object))
        assert sorted(tr.id for tr in got.triples) == sorted(tr.id for tr in triples)
        inner = {n for g in got.by_hop[:-1] for tr in g for n in (tr.subject, tr.object)}
        hubs = sorted(
            (n, degrees[n]) for n in inner if hub_cap and degrees[n] > hub_cap and n not in entities
        )
        assert list(got.skipped_hubs) == hubs


def test_gc_paused_restores_the_collector_as_it_found_it():
    import gc

    from kgqa.graph.expand import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
