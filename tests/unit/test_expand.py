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
