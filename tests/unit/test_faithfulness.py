"""The faithfulness check against an in-memory KB: claims, mistakes traced to their stage and
span, omissions along a relation path, graph-mode support triples, qtype paths, aggregates."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from test_eval_fakes import FakeKB

from kgqa.answers import looks_like_name
from kgqa.check import FaithfulnessChecker, ask_hops
from kgqa.errors import GraphUnavailable, KGQAError
from kgqa.eval.datasets import Question
from kgqa.eval.faithfulness import format_summary, summarize
from kgqa.eval.metaqa import METAQA_RELATIONS, metaqa_checker, metaqa_path
from kgqa.graph.paths import PathStep, parse_path
from kgqa.types import Answer, AnswerEntity, ScoredTriple, SubAnswer, Triple

pytestmark = pytest.mark.unit

METAQA = Path(__file__).resolve().parents[3] / "shared" / "metaqa"

KB = [
    Triple(1, "Blue", "written_by", "John Shirley"),
    Triple(2, "Red", "written_by", "John Shirley"),
    Triple(3, "Blue", "has_genre", "Drama"),
    Triple(4, "Red", "has_genre", "Horror"),
    Triple(5, "Red", "directed_by", "Ann Lee"),
    Triple(6, "Green", "has_genre", "Drama"),
    Triple(7, "Green", "directed_by", "Ann Lee"),
    Triple(8, "Paris, Texas", "directed_by", "Wim Wenders"),
    Triple(9, "Far Away", "has_genre", "Western"),
    Triple(10, "Far Away", "has_tags", "clint eastwood"),
    Triple(11, "Other", "starred_actors", "Clint Eastwood"),
    Triple(12, "Blue", "starred_actors", "Mia Roe"),
    Triple(13, "Green", "starred_actors", "Mia Roe"),
    Triple(14, "Blue", "directed_by", "Wim Wenders"),
    Triple(15, "Hatari!", "directed_by", "Ann Lee"),
    Triple(16, "With Friends Like These...", "directed_by", "Wim Wenders"),
]


@pytest.fixture
def kb() -> FakeKB:
    return FakeKB(KB)


def check(kb: FakeKB, answer: Answer, topics: Sequence[str], hops: int, qtype: str | None = None):
    path = metaqa_path(qtype) if qtype else None
    return FaithfulnessChecker(graph=kb).check(answer, topics, hops, path)


def answer(text: str, **kw) -> Answer:
    return Answer("q", (), "test", text, **kw)


def test_hallucinated_entity_is_a_mistake_traced_to_its_stage_and_span(kb: FakeKB) -> None:
    sub = SubAnswer(1, "Which movies did John Shirley write?", "r", "Blue, Purple Rain")
    a = answer("Drama, Zorro Returns", sub_answers=(sub,))
    report = check(kb, a, ["John Shirley"], 2, "writer_to_movie_to_genre")
    wrong = {(c.stage, c.span, c.reason) for c in report.mistakes}
    assert wrong == {
        ("answer", "Zorro Returns", "not in KB"),
        ("sub-answer 1", "Purple Rain", "not in KB"),
    }
    assert all(c.entity is None for c in report.mistakes)
    # Drama is right; Blue is a real sub-answer, reached by the path's first hop.
    ok = {(c.stage, c.entity): c.reason for c in report.claims if c.supported}
    assert ok[("answer", "Drama")] == "reached by the relation path (hop 2)"
    assert ok[("sub-answer 1", "Blue")] == "reached by the relation path (hop 1)"
    assert [c.span for c in report.answer_mistakes] == ["Zorro Returns"]
    assert report.omissions == ("Horror",)


def test_real_entity_not_connected_within_the_hop_count_is_a_mistake(kb: FakeKB) -> None:
    a = answer("Western, Horror")
    report = check(kb, a, ["John Shirley"], 2, "writer_to_movie_to_genre")
    assert [(c.entity, c.reason) for c in report.mistakes] == [
        ("Western", "not connected to the topic entities within 2 hops")
    ]
    # Wrong but real and nearby: not a mistake, but flagged as off the path.
    red = FaithfulnessChecker(graph=kb).check(answer("Ann Lee"), ["John Shirley"], 2)
    assert red.mistakes == () and red.claims[0].reason == "2 triples from the topic entities"
    off = check(kb, answer("Ann Lee"), ["John Shirley"], 2, "writer_to_movie_to_genre")
    assert off.mistakes == () and [c.entity for c in off.off_path] == ["Ann Lee"]


def test_correct_subset_has_no_mistakes_and_the_rest_are_omissions(kb: FakeKB) -> None:
    # Ann Lee directed Red, Green and Hatari!; the topic Red is removed at each hop.
    report = check(kb, answer("Green"), ["Red"], 2, "movie_to_director_to_movie")
    assert report.mistakes == ()
    assert report.path_reached == ("Green", "Hatari!")
    assert report.omissions == ("Hatari!",)
    assert [c.on_path for c in report.answer_claims] == [True]
    full = check(kb, answer("Green, Hatari!"), ["Red"], 2, "movie_to_director_to_movie")
    assert full.omissions == () and full.mistakes == ()
    assert {c.entity for c in full.answer_claims} == {"Green", "Hatari!"}


def test_lookups_are_batched(kb: FakeKB) -> None:
    sub1 = SubAnswer(1, "s1", "s1", "The movies are Blue and Red.")
    sub2 = SubAnswer(2, "s2", "s2", "Drama, Horror")
    a = answer(
        "Drama, Horror, Mars Attacks", reasoning='Think of "Wim Wenders".', sub_answers=(sub1, sub2)
    )
    check(kb, a, ["John Shirley"], 2, "writer_to_movie_to_genre")
    # One exact look-up for every candidate of every stage, one case-insensitive look-up for
    # the names not found, one distance query, one path walk.
    assert kb.calls == {"exact": 1, "case_insensitive": 1, "distances": 1, "walk": 1}


def test_free_text_reading(kb: FakeKB) -> None:
    # A title with a comma stays one name; a sentence yields the names inside it; the
    # parser's stripped "!" is put back; an abstention claims nothing.
    report = FaithfulnessChecker(graph=kb).check(
        answer("Paris, Texas"), ["Wim Wenders"], 1, (PathStep("directed_by", False),)
    )
    assert [c.entity for c in report.claims] == ["Paris, Texas"]
    assert report.omissions == ("Blue", "With Friends Like These...")
    sentence = check(kb, answer("The movie was written by John Shirley."), ["Red"], 1)
    assert [(c.span, c.entity) for c in sentence.claims] == [
        ("The movie was written by John Shirley", "John Shirley")
    ]
    hatari = check(kb, answer("Hatari!"), ["Ann Lee"], 1, "director_to_movie")
    assert [c.entity for c in hatari.claims] == ["Hatari!"] and hatari.mistakes == ()
    dots = check(kb, answer("Blue, With Friends Like These..."), ["Wim Wenders"], 1)
    assert [c.entity for c in dots.claims] == ["Blue", "With Friends Like These..."]
    assert dots.mistakes == ()
    for text in ("I could not find the answer.", "Unknown", "based on the triples given"):
        assert check(kb, answer(text), ["Red"], 1).claims == ()


def test_case_insensitive_match_and_name_collisions(kb: FakeKB) -> None:
    report = check(kb, answer("john shirley"), ["Red"], 1)
    (claim,) = report.claims
    assert claim.entity == "John Shirley" and claim.supported
    assert claim.reason.endswith("(matched ignoring case)")
    # "CLINT EASTWOOD" matches the tag and the actor; the tag is the one near Far Away.
    tag = check(kb, answer("CLINT EASTWOOD"), ["Far Away"], 1)
    assert [(c.entity, c.supported) for c in tag.claims] == [("clint eastwood", True)]


def test_reasoning_names_outside_the_graph_are_mistakes(kb: FakeKB) -> None:
    a = answer(
        "Drama",
        reasoning='John Shirley wrote Blue. I also recall "Wim Wenders" and Clint Eastwood here.',
    )
    report = check(kb, a, ["John Shirley"], 1)
    stages = {(c.stage, c.entity): c.supported for c in report.claims}
    assert stages[("reasoning", "John Shirley")] is True  # the topic entity
    assert stages[("reasoning", "Wim Wenders")] is False
    assert stages[("reasoning", "Clint Eastwood")] is False
    # Single capitalized words in prose are not read as claims ("Blue" here).
    assert ("reasoning", "Blue") not in stages


def graph_answer(entities: Sequence[AnswerEntity], evidence: Sequence[Triple]) -> Answer:
    subs = (
        SubAnswer(
            1, "s", "s", "", evidence=tuple(ScoredTriple(t, 1.0) for t in evidence), entities=()
        ),
    )
    return Answer(
        "q",
        ("John Shirley",),
        "graph",
        ", ".join(e.name for e in entities),
        sub_answers=subs,
        answer_entities=tuple(entities),
        parameters={"path": [["written_by", "in"], ["has_genre", "out"]]},
    )


def test_graph_mode_support_triples_are_verified(kb: FakeKB) -> None:
    ev = [KB[0], KB[1], KB[2], KB[3]]
    entities = [
        AnswerEntity("Drama", support=(1, 3)),  # the real path
        AnswerEntity("Horror", support=(2, 99)),  # 99 is no triple
        AnswerEntity("Western", support=(1, 3)),  # real triples, but not about Western
        AnswerEntity("Ann Lee", support=(5,)),  # touches it, but leads nowhere near the topic
    ]
    report = FaithfulnessChecker(graph=kb).check(graph_answer(entities, ev), ["John Shirley"], 2)
    reasons = {c.entity: (c.supported, c.reason) for c in report.claims if c.stage == "answer"}
    assert reasons == {
        "Drama": (True, "supported by 2 triples"),
        "Horror": (False, "support triple missing from the KB: #99"),
        "Western": (False, "no support triple touches it"),
        "Ann Lee": (False, "support triples do not connect it to the topic entities"),
    }
    # No gold path: the answer's own path gives the omissions.
    assert report.path_source == "answer" and report.omissions == ()
    assert kb.calls["triples"] == 1


def test_without_any_path_omissions_are_not_computed(kb: FakeKB) -> None:
    subs = (SubAnswer(1, "s1", "s1", "Blue"), SubAnswer(2, "s2", "s2", "Drama"))
    a = answer("Drama", sub_answers=subs)
    assert ask_hops(a) == 2
    report = FaithfulnessChecker(graph=kb).check(a, ["John Shirley"], ask_hops(a))
    assert report.omissions is None and report.path_reached is None
    text = report.format(a)
    assert "omissions: not computed (no relation path)" in text
    assert "mistakes: none" in text
    assert "omissions" not in report.as_metrics()
    wrong = FaithfulnessChecker(graph=kb).check(answer("Zorro"), ["John Shirley"], 1)
    assert "answer: 'Zorro': not in KB" in wrong.format()


def test_walk_removes_the_topic_at_each_hop(kb: FakeKB) -> None:
    # Blue -> Mia Roe -> (Blue, Green) minus the topic Blue
    report = check(kb, answer("Green"), ["Blue"], 2, "movie_to_actor_to_movie")
    assert report.path_reached == ("Green",) and report.omissions == ()


def _all_qtypes() -> dict[int, set[str]]:
    found = {
        h: set((METAQA / f"{h}-hop" / "qa_dev_qtype.txt").read_text().split())
        for h in (1, 2, 3)
        if (METAQA / f"{h}-hop" / "qa_dev_qtype.txt").is_file()
    }
    if len(found) == 3:
        return found
    # The shape of every MetaQA qtype, when the data is not beside the checkout.
    xs = ["director", "writer", "actor", "year", "genre", "language", "tags"]
    return {
        1: {f"movie_to_{x}" for x in [*xs, "imdbrating", "imdbvotes"]}
        | {"actor_to_movie", "writer_to_movie", "director_to_movie", "tag_to_movie"},
        2: {f"{a}_to_movie_to_{b}" for a in ("actor", "writer", "director") for b in xs[:6]}
        | {"movie_to_actor_to_movie", "movie_to_director_to_movie", "movie_to_writer_to_movie"},
        3: {
            f"movie_to_{a}_to_movie_to_{b}" for a in ("actor", "writer", "director") for b in xs[:6]
        },
    }


def test_every_metaqa_qtype_maps_to_a_path_of_its_hop_count() -> None:
    qtypes = _all_qtypes()
    assert sum(len(v) for v in qtypes.values()) >= 49
    relations = set(METAQA_RELATIONS.values())
    for hops, names in qtypes.items():
        for qtype in names:
            path = metaqa_path(qtype)
            assert len(path) == hops, qtype
            assert {s.relation for s in path} <= relations
            # MetaQA's subjects are movies: leaving a movie is outgoing, entering one incoming.
            nodes = qtype.split("_to_")
            assert [s.outgoing for s in path] == [a == "movie" for a in nodes[:-1]]
    assert metaqa_path("writer_to_movie_to_genre") == (
        PathStep("written_by", False),
        PathStep("has_genre", True),
    )
    assert metaqa_path("tag_to_movie") == (PathStep("has_tags", False),)
    assert metaqa_path("movie_to_imdbvotes") == (PathStep("has_imdb_votes", True),)
    with pytest.raises(KGQAError, match="unknown MetaQA qtype"):
        metaqa_path("movie_to_budget")


def test_parse_path_round_trips_and_rejects_bad_steps() -> None:
    path = parse_path([["written_by", "in"], ["has_genre", "out"]])
    assert [s.as_list() for s in path] == [["written_by", "in"], ["has_genre", "out"]]
    with pytest.raises(KGQAError):
        parse_path([["written_by", "sideways"]])


def test_looks_like_name() -> None:
    assert looks_like_name("Gone with the Wind") and looks_like_name("1999")
    assert not looks_like_name("based on the triples") and not looks_like_name("Pitt is the actor")


def _question(qtype: str | None, hops: int = 2) -> Question:
    return Question(1, "q [John Shirley]", ("John Shirley",), ("Drama", "Horror"), qtype, hops)


def test_eval_hook_and_aggregate(kb: FakeKB) -> None:
    hook = metaqa_checker(FaithfulnessChecker(graph=kb))
    good = hook(_question("writer_to_movie_to_genre"), answer("Drama, Horror"))
    bad = hook(_question("writer_to_movie_to_genre"), answer("Drama, Zorro, Western"))
    assert (good["mistakes"], good["omissions"], good["answer_claims"]) == (0, 0, 2)
    assert (bad["mistakes"], bad["omissions"], bad["answer_mistakes"]) == (2, 1, 2)
    assert bad["faith"]["omitted"] == ["Horror"]
    assert [m["span"] for m in bad["faith"]["mistakes"]] == ["Zorro", "Western"]
    broken = hook(_question("movie_to_budget"), answer("Drama"))
    assert "mistakes" not in broken and "unknown MetaQA qtype" in broken["faith_error"]
    records = [
        {"status": "ok", "metrics": good},
        {"status": "ok", "metrics": bad},
        {"status": "ok", "metrics": broken},
        {"status": "error", "metrics": {}},
    ]
    agg = summarize(records)
    assert agg["checked"] == 2
    assert agg["mistake_rate"] == pytest.approx(2 / 5)  # 2 wrong of 5 final-answer entities
    assert agg["questions_with_mistakes"] == pytest.approx(0.5)
    assert agg["mistakes"] == pytest.approx(1.0) and agg["omissions"] == pytest.approx(0.5)
    assert summarize([]) == {} and format_summary({}) == ""
    line = format_summary(agg)
    assert line.startswith("faithfulness: mistake rate 0.400 of 5 answer entities, 0.50 of 2")


def test_eval_hook_lets_a_lost_server_stop_the_run(kb: FakeKB) -> None:
    class Down(FakeKB):
        def walk(self, topics, path):
            raise GraphUnavailable("lost the connection to Neo4j")

    hook = metaqa_checker(FaithfulnessChecker(graph=Down(KB)))
    with pytest.raises(GraphUnavailable):
        hook(_question("writer_to_movie_to_genre"), answer("Drama"))


def test_checker_reads_the_graph_it_is_given_and_the_kb_stop_words(kb: FakeKB) -> None:
    # The checker takes a KBGraph only; a KB's own stop words come from the caller: a lone
    # capitalized "Blue" inside prose then names nothing (here it is a movie of the KB).
    a = answer("The director is Blue")
    plain = FaithfulnessChecker(kb).check(a, ["John Shirley"], 2)
    assert [(c.span, c.entity) for c in plain.claims] == [("The director is Blue", "Blue")]
    quiet = FaithfulnessChecker(kb, extra_stop_words=[" BLUE ", ""]).check(a, ["John Shirley"], 2)
    assert quiet.claims == ()
    assert "blue" in FaithfulnessChecker(kb, extra_stop_words=["Blue"]).stop_words
    # Generic English only: no KB's words are built in.
    assert not {"film", "films", "movie", "movies"} & FaithfulnessChecker(kb).stop_words


def test_graph_mode_answer_checks_clean_along_its_own_path(kb: FakeKB) -> None:
    from kgqa.graphmode.pipeline import GraphPipeline
    from kgqa.graphmode.walk import GraphWalker
    from kgqa.llm.fake import ScriptedLLM
    from kgqa.types import Edge

    def edges(names: Sequence[str]) -> list[Edge]:
        return [Edge(t, t.subject, True) for t in KB if t.subject in names] + [
            Edge(t, t.object, False) for t in KB if t.object in names
        ]

    def scorer(text: str, groups: dict) -> dict:
        wanted = "written_by" if "writ" in text else "has_genre"
        return {key: float(key[0] == wanted) for key in groups}

    llm = ScriptedLLM().enqueue(
        [
            "Reasoning: movies, then genres.\nSub-questions:\n"
            "1. Which movies were written by [John Shirley]?\n2. What genres are they in?\n<END>"
        ]
    )
    answer = GraphPipeline(llm, GraphWalker(edges, scorer)).answer("q", ["John Shirley"])
    assert answer.parameters["path"] == [["written_by", "in"], ["has_genre", "out"]]
    assert answer.parameters["mode"] == "graph"  # the other parameters are still there
    report = FaithfulnessChecker(graph=kb).check(answer, ["John Shirley"], ask_hops(answer))
    assert report.path_source == "answer" and report.omissions == ()
    assert report.mistakes == ()
    assert {c.reason for c in report.answer_claims} == {"supported by 2 triples"}
    assert {c.stage for c in report.claims} >= {"answer", "sub-answer 1", "sub-answer 2"}


def test_without_topic_entities_only_existence_is_checked(kb: FakeKB) -> None:
    report = FaithfulnessChecker(graph=kb).check(answer("Western, Zorro"), [], 1)
    assert [(c.entity, c.supported, c.reason) for c in report.claims] == [
        ("Western", True, "in KB (no topic entity)"),
        (None, False, "not in KB"),
    ]
    assert "distances" not in kb.calls


def test_ask_check_prints_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from click.testing import CliRunner

    from kgqa.commands.ask_cmd import ask

    sub = SubAnswer(1, "Which movies did he write?", "r", "Blue, Purple Rain")
    fixed = Answer("q", ("John Shirley",), "kgrag", "Drama, Zorro", sub_answers=(sub,))

    from ask_fakes import AskFactoryBase

    class Factory(AskFactoryBase):
        def rubric(self) -> FakeKB:
            return FakeKB(KB)

        def pipeline(self, mode: str) -> object:
            class P:
                def answer(self, question: str, entities: Sequence[str]) -> Answer:
                    return fixed

            return P()

    monkeypatch.setattr("kgqa.factory.Factory", Factory)
    runner = CliRunner()
    result = runner.invoke(ask, ["what did [John Shirley] write", "--check"], obj={})
    assert result.exit_code == 0, result.output
    assert "Faithfulness check" in result.output
    assert "answer: 'Zorro': not in KB" in result.output
    assert "sub-answer 1 (Which movies did he write?): 'Purple Rain': not in KB" in result.output
    assert "omissions: not computed (no relation path)" in result.output
    as_json = runner.invoke(ask, ["what did [John Shirley] write", "--check", "--json"], obj={})
    check = json.loads(as_json.output)["check"]
    # One sub-question: N = 1, and Drama is two triples away from John Shirley.
    assert [m["span"] for m in check["mistakes"]] == ["Drama", "Zorro", "Purple Rain"]
    assert check["omissions"] is None and check["hops"] == 1
