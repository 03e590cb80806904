import numpy as np
import pytest

from kgqa.graph.paths import PathStep
from kgqa.graphmode.walk import GraphWalker, embedding_scorer, steps_of
from kgqa.types import Edge, Triple

pytestmark = pytest.mark.unit

KB = [
    Triple(1, "Blue", "written_by", "John Shirley"),
    Triple(2, "Red", "written_by", "John Shirley"),
    Triple(3, "Blue", "has_genre", "Drama"),
    Triple(4, "Red", "has_genre", "Horror"),
    Triple(5, "Red", "directed_by", "Ann"),
    Triple(6, "Green", "has_genre", "Drama"),
]


def edges_of(kb):
    """An edge source over an in-memory list of triples (both directions)."""

    def edges(names):
        out = []
        for t in kb:
            if t.subject in names:
                out.append(Edge(t, t.subject, True))
            if t.object in names:
                out.append(Edge(t, t.object, False))
        return out

    return edges


edges = edges_of(KB)


KEYWORDS = {"written_by": ("writ", "wrote"), "has_genre": ("genre",), "directed_by": ("direct",)}


def keyword_scorer(text, groups):
    # The option whose relation keyword appears in the sub-question wins.
    text = text.lower()
    return {(rel, out): float(any(k in text for k in KEYWORDS[rel])) for rel, out in groups}


def test_two_hops_follow_real_edges_and_carry_support():
    walker = GraphWalker(edges, keyword_scorer)
    hops, answers = walker.walk(
        ["John Shirley"], ["Which movies were written by him?", "What genre are they?"]
    )
    assert [(h.chosen.relation, h.chosen.outgoing) for h in hops] == [
        ("written_by", False),
        ("has_genre", True),
    ]
    assert hops[0].entities == ("Blue", "Red")
    assert {a.name for a in answers} == {"Drama", "Horror"}
    drama = next(a for a in answers if a.name == "Drama")
    assert drama.support == (1, 3)  # the whole path, in path order (hop 1, then hop 2)
    # Green is a Drama too, but not reachable from John Shirley's movies
    assert all(6 not in a.support for a in answers)


def test_topic_entity_is_never_its_own_answer():
    walker = GraphWalker(edges, keyword_scorer)
    # Blue -> John Shirley -> (Blue, Red) minus Blue
    hops, answers = walker.walk(["Blue"], ["Who wrote it?", "Which movies were written by them?"])
    assert [a.name for a in answers] == ["Red"]


def test_empty_frontier_stops():
    walker = GraphWalker(lambda names: [], keyword_scorer)
    hops, answers = walker.walk(["Nobody"], ["q1", "q2"])
    assert answers == [] and hops[0].chosen is None


def test_embedding_scorer_uses_max_dot_per_option():
    vecs = {1: [1.0, 0.0], 2: [0.0, 1.0], 3: [0.6, 0.6]}
    scorer = embedding_scorer(
        lambda texts: np.array([[1.0, 0.0]], dtype=np.float32),
        lambda ids: np.array([vecs[i] for i in ids], dtype=np.float32),
    )
    groups = {
        ("a", True): [Edge(KB[0], "x", True), Edge(KB[1], "x", True)],
        ("b", False): [Edge(KB[2], "x", False)],
    }
    scores = scorer("q", groups)
    assert scores[("a", True)] == pytest.approx(1.0)
    assert scores[("b", False)] == pytest.approx(0.6)


def test_graph_pipeline_decomposes_walks_and_grounds_every_answer():
    from kgqa.graphmode.pipeline import GraphPipeline
    from kgqa.llm.fake import ScriptedLLM

    llm = ScriptedLLM().enqueue(
        [
            "Reasoning: movies first, then genres.\nSub-questions:\n"
            "1. Which movies were written by [John Shirley]?\n2. What genres are those movies in?\n<END>"
        ]
    )
    pipeline = GraphPipeline(llm, GraphWalker(edges, keyword_scorer))
    answer = pipeline.answer(
        "what genres are the movies written by [John Shirley] in", ["John Shirley"]
    )
    assert len(llm.calls) == 1  # decomposition only: no synthesis call by default
    # greedy and short: the steps follow the examples, a runaway is cut early
    assert llm.calls[0].params.temperature == 0.0
    assert llm.calls[0].params.max_tokens == 96
    assert answer.parameters["decompose_temperature"] == 0.0
    assert answer.mode == "graph"
    assert {a.name for a in answer.answer_entities} == {"Drama", "Horror"}
    assert set(answer.evidence_ids) == {1, 2, 3, 4}
    assert all(a.support for a in answer.answer_entities)
    assert "written by" in answer.reasoning and "has genre" in answer.reasoning
    assert [s.entities for s in answer.sub_answers] == [("Blue", "Red"), ("Drama", "Horror")]
    assert [c.stage for c in answer.costs] == ["decompose", "graph_walk"]


def test_graph_pipeline_without_entities_is_a_clear_error():
    from kgqa.errors import KGQAError
    from kgqa.graphmode.pipeline import GraphPipeline
    from kgqa.llm.fake import ScriptedLLM

    with pytest.raises(KGQAError, match="no topic entity"):
        GraphPipeline(ScriptedLLM(), GraphWalker(edges, keyword_scorer)).answer("who?", [])


def test_a_step_that_only_leads_back_to_the_topic_is_skipped_as_a_restatement():
    walker = GraphWalker(edges, keyword_scorer)
    hops, answers = walker.walk(
        ["John Shirley"],
        [
            "Which movies were written by him?",
            "Which movies did those writers write?",
            "What genre?",
        ],
    )
    assert hops[1].restated and hops[1].entities == ("Blue", "Red")
    assert {a.name for a in answers} == {"Drama", "Horror"}


def test_a_dropped_middle_step_is_bridged_and_said_so():
    kb = [
        Triple(11, "M1", "starred_actors", "A1"),
        Triple(12, "M2", "starred_actors", "A1"),
        Triple(13, "M2", "written_by", "W2"),
        Triple(14, "M1", "written_by", "W1"),
    ]

    kb_edges = edges_of(kb)

    def scorer(text, groups):
        words = {"starred_actors": ("actor",), "written_by": ("writ",)}
        return {(r, o): float(any(w in text.lower() for w in words[r])) for r, o in groups}

    walker = GraphWalker(kb_edges, scorer)
    hops, answers = walker.walk(["M1"], ["actors of M1", "writers of those movies"])
    assert [h.bridged for h in hops] == [False, True, False]
    assert hops[1].entities == ("M2",)  # M1 is the topic: not its own answer
    assert [a.name for a in answers] == ["W2"]
    assert set(answers[0].support) == {11, 12, 13}
    # without bridging, the step has nowhere sensible to go from the actors
    _, plain = GraphWalker(kb_edges, scorer, bridge_margin=None).walk(
        ["M1"], ["actors of M1", "writers of those movies"]
    )
    assert [a.name for a in plain] != ["W2"]


def test_a_step_that_asks_for_the_previous_relation_again_is_a_restatement():
    # After "movies written by John Shirley" the frontier is movies; "movies those writers
    # wrote" matches the relation just followed (written_by, incoming) best, which is not
    # available at movies: the step is skipped, not walked back along written_by.
    kb = KB + [Triple(7, "Red", "written_by", "Ann")]

    kb_edges = edges_of(kb)

    def scorer(text, groups):
        text = text.lower()
        table = {("written_by", False): float("movies" in text and "writ" in text)}
        return {
            k: table.get(k, 0.5 if "writ" in text and k[0] == "written_by" else 0.0) for k in groups
        }

    hops, answers = GraphWalker(kb_edges, scorer).walk(
        ["John Shirley"], ["movies written by John Shirley", "movies those writers wrote"]
    )
    assert hops[1].restated
    assert {a.name for a in answers} == {"Blue", "Red"}


def test_steps_that_only_name_the_entity_are_dropped():
    from kgqa.graphmode.pipeline import asks_something

    # the words for a movie graph's movies come from its profile, not from generic code
    stop = metaqa_profile().stop_words
    assert not asks_something("film [Saw V]?", stop)
    assert not asks_something("the movie [The Bat]?", stop)
    assert asks_something("writer of that film?", stop)
    assert asks_something("genres of those movies?", stop)
    assert asks_something("film [Saw V]?")  # no KB words: "film" may ask for something
    assert not asks_something("the [Saw V]?")


def test_answer_entities_carry_the_node_ids_of_the_edges_that_reached_them():
    def edges_with_ids(names):
        return [Edge(e.triple, e.from_name, e.outgoing, f"node:{e.to_name}") for e in edges(names)]

    walker = GraphWalker(edges_with_ids, keyword_scorer)
    _, answers = walker.walk(
        ["John Shirley"], ["Which movies were written by him?", "What genre are they?"]
    )
    assert {(a.name, a.node_id) for a in answers} == {
        ("Drama", "node:Drama"),
        ("Horror", "node:Horror"),
    }


def test_a_step_that_names_its_relation_is_followed_even_against_the_scorer():
    walker = GraphWalker(edges, keyword_scorer)
    # the text says "genre", the step vocabulary named written_by out: the key wins
    hops, answers = walker.walk(
        ["Blue"], ["genre?", "movies written by those writers"], [("written_by", True), None]
    )
    assert (hops[0].chosen.relation, hops[0].chosen.outgoing) == ("written_by", True)
    assert [a.name for a in answers] == ["Red"]


def test_a_named_relation_the_frontier_lacks_is_skipped_and_said_so():
    from kgqa.graphmode.pipeline import describe_hops

    walker = GraphWalker(edges, keyword_scorer)
    hops, answers = walker.walk(
        ["John Shirley"],
        ["movies written by him", "movies starring those movies", "genres of those movies"],
        [("written_by", False), ("starred_actors", False), ("has_genre", True)],
    )
    assert hops[1].chosen is None and hops[1].missing == ("starred_actors", False)
    assert hops[1].entities == ("Blue", "Red")  # the frontier stayed
    assert {a.name for a in answers} == {"Drama", "Horror"}
    assert "<-[starred actors]- is not at the frontier: skipped" in describe_hops(hops)


def test_first_hop_direction_comes_from_the_entity_not_the_wording():
    # A scorer that reads "genre" as the in-direction (movies of genre X), as MiniLM reads
    # "what language is the movie [M] in" as "movies in the language X".
    def scorer(text, groups):
        return {
            k: {("has_genre", False): 0.9, ("written_by", True): 0.8}.get(k, 0.0) for k in groups
        }

    known = [("has_genre", False), ("written_by", True)]
    walker = GraphWalker(edges, scorer, known=known, either_direction=True)
    hops, answers = walker.walk(["Red"], ["what genre is [Red]"])
    assert (hops[0].chosen.relation, hops[0].chosen.outgoing) == ("has_genre", True)
    assert [a.name for a in answers] == ["Horror"]
    # off by default (it measured worse with derived phrasings): the scores decide as they are
    hops, answers = GraphWalker(edges, scorer, known=known).walk(["Red"], ["what genre is [Red]"])
    assert (hops[0].chosen.relation, hops[0].chosen.outgoing) == ("written_by", True)


def metaqa_profile():
    """The packaged MetaQA profile over the small KB of these tests."""
    from kgqa.graph.memory_store import MemoryStore
    from kgqa.profile.derive import derive_profile
    from kgqa.profile.files import apply_profile_file

    return apply_profile_file(derive_profile(MemoryStore(KB), "sha256:kb"), "metaqa")


def test_graph_pipeline_holds_the_steps_to_the_vocabulary_grammar():
    from kgqa.graphmode.pipeline import GraphPipeline
    from kgqa.llm.fake import ScriptedLLM

    llm = ScriptedLLM().enqueue(
        ["1. movies written by [John Shirley]\n2. genres of those movies\n<END>"]
    )
    walker = GraphWalker(edges, lambda text, groups: dict.fromkeys(groups, 0.0))
    pipeline = GraphPipeline(llm, walker, profile=metaqa_profile())
    answer = pipeline.answer("what genres are John Shirley's movies in", ["John Shirley"])
    grammar = llm.calls[0].params.grammar
    # the first step can only follow what John Shirley has: written_by, inwards
    root = grammar.splitlines()[0]
    assert '"movies written by "' in root and "genres of" not in root and "directed by" not in root
    # the walk followed the named relations: with no preference from the scorer it would have
    # taken directed_by (first by name) at the second hop
    assert "-[has genre]->" in answer.reasoning
    assert {a.name for a in answer.answer_entities} == {"Drama", "Horror"}
    assert answer.parameters["step_grammar"] is True


def test_the_topics_edges_are_read_once_for_the_grammar_and_the_first_hop():
    calls = []

    def counting(names):
        calls.append(tuple(names))
        return edges(names)

    walker = GraphWalker(counting, keyword_scorer)
    assert walker.options_at(["John Shirley"]) == {("written_by", False)}
    walker.walk(["John Shirley"], ["movies written by him", "genres of those movies"])
    assert calls == [("John Shirley",), ("Blue", "Red")]
    # the next question reads the graph afresh
    walker.walk(["John Shirley"], ["movies written by him"])
    assert calls[-1] == ("John Shirley",) and len(calls) == 3
    # ... and frontiers read by options_along (the last-step check) are not read again
    calls.clear()
    walker.options_at(["John Shirley"])
    path = [PathStep("written_by", False), PathStep("has_genre", True)]
    walker.options_along(["John Shirley"], path[:1])
    walker.walk(["John Shirley"], ["movies written by him", "genres of those movies"], path)
    assert calls == [("John Shirley",), ("Blue", "Red")]


def test_a_step_the_frontier_lacks_but_its_start_has_undoes_the_hop_before_it():
    from kgqa.graphmode.pipeline import describe_hops

    # "describe [Red] in a few words" written as "genres of [Red]", "directors of those
    # genres": the genres have no director, Red has; the genre hop was a detour.
    walker = GraphWalker(edges, keyword_scorer)
    named = [("has_genre", True), ("directed_by", True)]
    hops, answers = walker.walk(["Red"], ["genres of [Red]", "directors of those genres"], named)
    assert hops[0].detour and not hops[1].detour
    assert (hops[1].chosen.relation, hops[1].missing) == ("directed_by", None)
    assert [a.name for a in answers] == ["Ann"]
    assert answers[0].support == (5,)  # the detour's triple supports nothing
    assert steps_of(hops) == [("directed_by", True)]
    assert "a detour" in describe_hops(hops).splitlines()[0]
    # What the frontier has after the path is read the same way: Ann's one edge.
    path = [PathStep(*s) for s in named]
    assert walker.options_along(["Red"], path) == {PathStep("directed_by", False)}


def test_a_step_neither_frontier_has_is_still_skipped():
    walker = GraphWalker(edges, keyword_scorer)
    named = [("has_genre", True), ("starred_actors", True)]
    hops, answers = walker.walk(["Red"], ["genres of [Red]", "actors of those genres"], named)
    assert not hops[0].detour and hops[1].missing == ("starred_actors", True)
    assert [a.name for a in answers] == ["Horror"]
