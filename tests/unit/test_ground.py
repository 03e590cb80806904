"""Grounding free-text answers: KB names on the answer line, node ids, supporting triples."""

import pytest

from kgqa.answers import mentions, text_candidates
from kgqa.check import FaithfulnessChecker
from kgqa.eval import metrics as M
from kgqa.llm.fake import ScriptedLLM
from kgqa.pipeline.ground import AnswerGrounder, support_paths
from kgqa.pipeline.pipeline import KGRAGPipeline, PipelineParams
from kgqa.types import Answer, AnswerEntity, Triple

pytestmark = pytest.mark.unit

EVIDENCE = [
    Triple(1, "The Crow", "written_by", "John Shirley"),
    Triple(2, "The Crow", "has_genre", "Action"),
    Triple(3, "Dark City", "has_genre", "Science Fiction"),
    Triple(4, "The Crow", "directed_by", "Alex Proyas"),
    Triple(5, "Dark City", "directed_by", "Alex Proyas"),
]
KB = {
    n: f"4:x:{i}"
    for i, n in enumerate(
        [
            "The Crow",
            "John Shirley",
            "Action",
            "Dark City",
            "Science Fiction",
            "Alex Proyas",
            "Paris",
            "Paris, Texas",
            "crow",
            "Heat",
        ]
    )
}


class Lookup:
    def __init__(self):
        self.asked: list[set[str]] = []

    def __call__(self, names):
        names = set(names)
        self.asked.append(names)
        return {n: KB[n] for n in names if n in KB}


def test_mentions_take_the_longest_name_in_line_order_ignoring_case():
    line = "paris, texas and The Crow, then Paris"
    assert mentions(line, ["Paris", "Paris, Texas", "The Crow", "Crow"]) == [
        "Paris, Texas",
        "The Crow",
        "Paris",
    ]
    # word boundaries: "Action" is not inside "Actionable"
    assert mentions("Actionable", ["Action"]) == []


def test_support_is_the_shortest_retrieved_chain_from_the_topic():
    # John Shirley -> The Crow -> Alex Proyas -> Dark City -> Science Fiction
    support = support_paths({"John Shirley"}, EVIDENCE)
    assert support("Science Fiction") == (1, 4, 5, 3)
    assert support("Action") == (1, 2)
    assert support("Heat") == ()
    # not connected to the topic by the retrieved triples: the triples that contain it
    assert support_paths({"Heat"}, EVIDENCE)("Science Fiction") == (3,)


def test_ground_reads_kb_names_from_the_answer_line_only():
    lookup = Lookup()
    g = AnswerGrounder(lookup, text_candidates)
    text = "Action and Science Fiction, by John Shirley.\nExplanation: Heat is unrelated."
    got = g.ground(text, ["John Shirley"], EVIDENCE)
    assert [e.name for e in got] == ["Action", "Science Fiction"]  # topic left out
    assert got[0] == AnswerEntity("Action", KB["Action"], 2.0, (1, 2))
    assert all("Heat" not in asked for asked in lookup.asked)  # the explanation is not read


def test_a_kb_name_without_retrieved_evidence_is_grounded_without_support():
    got = AnswerGrounder(Lookup(), text_candidates).ground("Heat", ["John Shirley"], EVIDENCE)
    assert got == (AnswerEntity("Heat", KB["Heat"], 0.0, ()),)
    assert (
        AnswerGrounder(Lookup(), text_candidates).ground(
            "I do not know.", ["John Shirley"], EVIDENCE
        )
        == ()
    )
    assert AnswerGrounder(Lookup(), text_candidates).ground("", ["John Shirley"], EVIDENCE) == ()


def test_free_text_modes_carry_grounded_entities_but_metrics_still_read_the_text():
    llm = ScriptedLLM().enqueue(["Dark City, Action"])
    pipe = KGRAGPipeline(
        llm,
        None,
        PipelineParams(model="m"),
        "llm",
        grounder=AnswerGrounder(Lookup(), text_candidates),
    )
    answer = pipe.answer("what did [John Shirley] write", ["John Shirley"])
    assert answer.from_text
    assert [(e.name, e.node_id, e.support) for e in answer.answer_entities] == [
        ("Dark City", KB["Dark City"], ()),
        ("Action", KB["Action"], ()),
    ]
    assert answer.ranked_entities == ()
    # The same text without grounding scores the same.
    plain = Answer(answer.question, answer.entities_in, "llm", answer.text)
    gold = ["Action"]
    assert M.hit1_entity(answer, gold, KB) == M.hit1_entity(plain, gold, KB) is False
    assert M.predicted_answers(answer, gold, KB) == M.predicted_answers(plain, gold, KB)


class _NoGraph:
    def exact(self, names):
        return {n for n in names if n in KB}

    def case_insensitive(self, names):
        return {}

    def distances(self, topics, names, max_hops):
        return {n: None for n in names}

    def walk(self, topics, path):
        return []

    def triples(self, ids, names=None):
        return {}


def test_faithfulness_reads_a_grounded_free_text_answer_as_text():
    grounded = Answer(
        "q",
        ("John Shirley",),
        "llm",
        "Dark City",
        answer_entities=(AnswerEntity("Dark City", "n", 0.0, ()),),
        from_text=True,
    )
    plain = Answer("q", ("John Shirley",), "llm", "Dark City")
    checker = FaithfulnessChecker(graph=_NoGraph())
    a = checker.check(grounded, ["John Shirley"], 1).as_metrics()
    b = checker.check(plain, ["John Shirley"], 1).as_metrics()
    a["faith"].pop("seconds"), b["faith"].pop("seconds")
    assert a == b
    assert a["answer_claims"] == 1
