"""The faithfulness check against the real Neo4j: the sample KB's 75 MetaQA questions are
reproduced by the gold-path walk (topic removed at each hop), a hand-made answer gets its
mistakes and omissions, graph-mode support triples are verified, and the path queries anchor
on the name index."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kgqa.check import FaithfulnessChecker
from kgqa.eval.metaqa import metaqa_path
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import Neo4jStore
from kgqa.graph.paths import PathStep, walk_path
from kgqa.graph.queries import query
from kgqa.loaders.base import triple_id
from kgqa.loaders.metaqa import parse_lines, read
from kgqa.settings import Settings
from kgqa.types import Answer, AnswerEntity, ScoredTriple, SubAnswer, Triple

if TYPE_CHECKING:
    import neo4j

pytestmark = pytest.mark.integration

DATA = Path(str(resources.files("kgqa") / "data"))
# Beside the sample: a relation name that would break a query spliced together as text.
EXTRA = [
    "Odd Movie|rel with `ticks` and spaces|Odd Person",
    "Lonely Island|has_genre|Nowhere Genre",
]


@pytest.fixture(scope="module")
def graph(neo4j_driver: neo4j.Driver, neo4j_settings: Settings) -> Iterator[neo4j.Driver]:
    """The sample KB (and EXTRA), loaded once for this module into a cleared database."""
    store = Neo4jStore(neo4j_driver, neo4j_settings.neo4j.database)
    store.clear()
    load_kb(store, read(DATA / "sample_kb.txt"))
    load_kb(store, parse_lines("\n".join(EXTRA).encode().splitlines(), "extra"))
    yield neo4j_driver


@pytest.fixture
def checker(graph: neo4j.Driver, neo4j_settings: Settings) -> FaithfulnessChecker:
    return FaithfulnessChecker(Neo4jStore(graph, neo4j_settings.neo4j.database))


def sample_questions() -> list[tuple[int, str, list[str], list[str]]]:
    import re

    rows = []
    lines = (DATA / "sample_qa.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        hops, qtype, question, answers = line.split("\t")
        topics = re.findall(r"\[([^\]]+)\]", question)
        rows.append((int(hops), qtype, topics, answers.split("|")))
    return rows


def test_gold_path_walk_reproduces_every_sample_question(
    checker: FaithfulnessChecker, graph: neo4j.Driver, neo4j_settings: Settings
) -> None:
    questions = sample_questions()
    assert len(questions) == 75
    for hops, qtype, topics, gold in questions:
        reached = walk_path(graph, neo4j_settings.neo4j.database, topics, metaqa_path(qtype))
        assert len(reached) == hops
        assert set(reached[-1]) == set(gold), (qtype, topics)
        # The gold answers as a free-text answer: nothing is a mistake, nothing is left out.
        answer = Answer("q", tuple(topics), "gold", ", ".join(gold))
        report = checker.check(answer, topics, hops, metaqa_path(qtype))
        assert report.mistakes == () and report.omissions == (), (qtype, topics)
        assert len(report.answer_claims) == len(gold)


def test_topic_is_removed_at_each_hop(graph: neo4j.Driver, neo4j_settings: Settings) -> None:
    # Every co-actor path from a movie comes back to the movie itself; MetaQA drops it.
    db = neo4j_settings.neo4j.database
    movie = next(t[0] for h, q, t, _ in sample_questions() if q == "movie_to_actor_to_movie")
    back = walk_path(graph, db, [movie], [PathStep("starred_actors", True)])
    assert back[0] and movie not in back[0]
    two = walk_path(graph, db, [movie], metaqa_path("movie_to_actor_to_movie"))
    assert movie not in two[1]
    # Without the removal the movie would be there: some actor of it starred in it.
    records, _, _ = graph.execute_query(
        # Two MATCH clauses: within one pattern Cypher never reuses a relationship.
        "MATCH (m:Entity {name: $m})-[:starred_actors]->(a) "
        "MATCH (a)<-[:starred_actors]-(x) RETURN collect(DISTINCT x.name) AS names",
        {"m": movie},
        database_=db,
    )
    assert set(records[0]["names"]) - {movie} == set(two[1])
    assert movie in records[0]["names"]


def test_hand_made_answer_gets_mistakes_and_omissions(checker: FaithfulnessChecker) -> None:
    hops, qtype, topics, gold = sample_questions()[0]
    assert (hops, qtype, topics) == (1, "actor_to_movie", ["Temuera Morrison"])
    sub = SubAnswer(1, "Which movies did he act in?", "r", "He acted in Once Were Warriors.")
    answer = Answer(
        "what movies did [Temuera Morrison] act in",
        tuple(topics),
        "kgrag",
        "Once Were Warriors, Zorro the Gay Blade Returns, Drama",
        reasoning='Temuera Morrison is a New Zealand actor; "Lonely Island" is not his.',
        sub_answers=(sub,),
    )
    report = checker.check(answer, topics, 1, metaqa_path(qtype))
    assert {(c.stage, c.span, c.reason) for c in report.mistakes} == {
        ("answer", "Zorro the Gay Blade Returns", "not in KB"),
        ("answer", "Drama", "not connected to the topic entities within 1 hop"),
        ("reasoning", "Lonely Island", "not connected to the topic entities within 1 hop"),
    }
    assert set(report.omissions or ()) == set(gold) - {"Once Were Warriors"}
    supported = {(c.stage, c.entity) for c in report.claims if c.supported}
    assert ("sub-answer 1", "Once Were Warriors") in supported
    assert ("reasoning", "Temuera Morrison") in supported
    text = report.format(answer)
    assert "answer: 'Zorro the Gay Blade Returns': not in KB" in text
    assert "omissions: 2 of 3 entities reached by <-[starred actors]- (gold path)" in text


def test_graph_mode_support_triples(checker: FaithfulnessChecker) -> None:
    river = Triple(
        triple_id("River Queen", "starred_actors", "Temuera Morrison"),
        "River Queen",
        "starred_actors",
        "Temuera Morrison",
    )
    tracker_id = triple_id("Tracker", "starred_actors", "Temuera Morrison")
    entities = (
        AnswerEntity("River Queen", support=(river.id,)),  # recorded in the evidence
        AnswerEntity("Tracker", support=(tracker_id,)),  # not recorded: found by id alone
        AnswerEntity("Once Were Warriors", support=(12345,)),  # no such triple
    )
    answer = Answer(
        "q",
        ("Temuera Morrison",),
        "graph",
        "River Queen, Tracker, Once Were Warriors",
        sub_answers=(SubAnswer(1, "s", "s", "", evidence=(ScoredTriple(river, 1.0),)),),
        answer_entities=entities,
        parameters={"path": [["starred_actors", "in"]]},
    )
    report = checker.check(answer, ["Temuera Morrison"], 1)
    got = {c.entity: (c.supported, c.reason) for c in report.answer_claims}
    assert got == {
        "River Queen": (True, "supported by 1 triple"),
        "Tracker": (True, "supported by 1 triple"),
        "Once Were Warriors": (False, "support triple missing from the KB: #12345"),
    }
    assert report.path_source == "answer" and report.omissions == ()


def test_rubric_reads(graph: neo4j.Driver, neo4j_settings: Settings) -> None:
    rubric = Neo4jStore(graph, neo4j_settings.neo4j.database)
    assert rubric.exact(["Odd Movie", "odd movie", "Nobody"]) == {"Odd Movie"}
    assert rubric.case_insensitive(["ODD MOVIE"]) == {"odd movie": ["Odd Movie"]}
    # The relation travels as a parameter: an odd name is matched, not spliced.
    step = PathStep("rel with `ticks` and spaces", True)
    assert rubric.walk(["Odd Movie"], [step]) == [frozenset({"Odd Person"})]
    assert rubric.walk(["Odd Person"], [PathStep(step.relation, False)]) == [
        frozenset({"Odd Movie"})
    ]
    d = rubric.distances(["Odd Movie"], ["Odd Person", "Lonely Island", "Odd Movie"], 3)
    assert d == {"Odd Person": 1, "Lonely Island": None, "Odd Movie": 0}


@pytest.mark.parametrize(
    "name", ["path_step_out", "path_step_in", "faith_distance_hops3", "faith_triples_check"]
)
def test_path_queries_anchor_on_the_name_index(
    name: str, graph: neo4j.Driver, neo4j_settings: Settings
) -> None:
    params = {"names": ["x"], "rel": "has_genre", "topics": ["y"], "rows": []}
    with graph.session(database=neo4j_settings.neo4j.database) as session:
        plan = session.run("EXPLAIN " + query(name), params).consume().plan
    operators: list[str] = []

    def visit(p: dict) -> None:
        operators.append(p["operatorType"].split("@")[0])
        for child in p.get("children", []):
            visit(child)

    visit(plan)
    assert "NodeUniqueIndexSeek" in operators
    assert not {"AllNodesScan", "NodeByLabelScan", "DirectedAllRelationshipsScan"} & set(operators)


def test_free_text_answers_are_grounded_in_real_nodes(
    graph: neo4j.Driver, neo4j_settings: Settings
) -> None:
    from kgqa.answers import text_candidates
    from kgqa.pipeline.ground import AnswerGrounder

    rubric = Neo4jStore(graph, neo4j_settings.neo4j.database)
    ids = rubric.node_ids(["Joel Zwick", "Greek", "No Such Entity", "joel zwick"])
    assert set(ids) == {"Joel Zwick", "Greek"}  # exact names only
    movie = "My Big Fat Greek Wedding"
    evidence = [
        Triple(triple_id(movie, "directed_by", "Joel Zwick"), movie, "directed_by", "Joel Zwick"),
        Triple(triple_id(movie, "in_language", "Greek"), movie, "in_language", "Greek"),
    ]
    got = AnswerGrounder(rubric.node_ids, text_candidates).ground(
        "Greek, and Klingon\nExplanation: Joel Zwick directed it.", ["Joel Zwick"], evidence
    )
    assert [(e.name, e.support) for e in got] == [("Greek", (evidence[0].id, evidence[1].id))]
    # the node id is the real node's
    records, _, _ = graph.execute_query(
        "MATCH (n:Entity {name: $name}) RETURN elementId(n) AS id",
        name="Greek",
        database_=neo4j_settings.neo4j.database,
    )
    assert got[0].node_id == records[0]["id"]
