"""kgqa.document: one answer -> one JSON document, the same for ``ask --json`` and eval records."""

from __future__ import annotations

import json

import pytest
from test_eval_fakes import DATA, FakePipeline, FakeRetriever

from kgqa.document import answer_document, stage_totals
from kgqa.eval import datasets, metrics, runner
from kgqa.types import Answer, AnswerEntity, ScoredTriple, StageCost, SubAnswer, Triple

pytestmark = pytest.mark.unit

T = Triple(7, "Dark City", "directed_by", "Alex Proyas")


def _answer() -> Answer:
    sub = SubAnswer(1, "who directed it?", "who directed Dark City?", "Alex Proyas",
                    (ScoredTriple(T, 0.91234567),), entities=("Alex Proyas",))  # fmt: skip
    return Answer(
        "who directed [Dark City]",
        ("Dark City",),
        "graph",
        "Alex Proyas\nExplanation: one triple.",
        reasoning="one step",
        sub_answers=(sub,),
        evidence_ids=(7,),
        costs=(StageCost("decompose", 1.0, 10, 2), StageCost("decompose", 0.5, 5, 1)),
        answer_entities=(AnswerEntity("Alex Proyas", "4:x:1", 1.0, (7,)),),
        parameters={"model": "m", "path": [["directed_by", "out"]]},
    )


def test_the_document_has_every_field_of_ask_and_of_eval_records():
    doc = answer_document(_answer())
    assert doc["answer"] == "Alex Proyas" and doc["answer_names"] == ["Alex Proyas"]
    assert doc["answer_text"].startswith("Alex Proyas\n")
    assert doc["entities"] == ["Dark City"] and doc["model"] == "m"
    assert doc["answer_entities"] == [
        {"name": "Alex Proyas", "node_id": "4:x:1", "score": 1.0, "support": (7,)}
    ]
    assert doc["answer_entities_from_text"] is False
    (sub,) = doc["sub_questions"]
    assert sub["triple_ids"] == [7] and sub["scores"] == [0.912346]
    assert sub["triples"] == [{"id": 7, "text": T.verbalize(), "score": 0.91234567}]
    assert sub["entities"] == ["Alex Proyas"]
    assert doc["timings"]["stages"] == stage_totals(_answer())
    assert doc["timings"]["stages"]["decompose"] == {
        "calls": 2, "seconds": 1.5, "prompt_tokens": 15, "completion_tokens": 3,
    }  # fmt: skip
    assert doc["timings"]["total_seconds"] == 1.5
    assert doc["parameters"]["path"] == [["directed_by", "out"]]
    json.dumps(doc)


def test_ask_and_the_runner_write_the_same_document(tmp_path):
    answer = _answer()
    from kgqa.service import AskResult

    asked = AskResult(answer, ("X",), None, None, None, "// cypher").to_json()
    assert {k: v for k, v in asked.items() if k != "browser_cypher"} == answer_document(answer)
    questions = datasets.load_split(DATA, 1, "dev")[:2]
    pipe = FakePipeline("kgrag", {q.text: "Alex Proyas" for q in questions}, FakeRetriever())
    config = runner.EvalConfig("1-hop/qa_dev.txt", 1, "dev", None, 0, "kgrag", 3, 30, "fake")
    result = runner.run_eval(pipe, questions, tmp_path, config, progress=False)
    record = result.records[0]
    replay = pipe.answer(questions[0].text, questions[0].entities)
    assert record["answer"] == json.loads(json.dumps(answer_document(replay)))


def test_aggregate_reads_answer_entities_of_old_and_new_records():
    old = {
        "status": "ok",
        "metrics": {"mistakes": 1},
        "answer": {"entities": [{"name": "a"}, {"name": "b"}], "entities_from_text": False},
    }
    new = {
        "status": "ok",
        "metrics": {"mistakes": 0},
        "answer": {
            "entities": ["Topic"],
            "answer_entities": [{"name": "c"}],
            "answer_entities_from_text": False,
        },
    }
    read = {
        "status": "ok",
        "metrics": {"mistakes": 0},
        "answer": {"answer_entities": [{"name": "d"}], "answer_entities_from_text": True},
    }
    agg = metrics.aggregate([old, new, read])
    # a, b (old record) and c; the topic entity is no answer entity, d was read from text.
    assert agg["answer_entities_total"] == 3
    assert agg["stage_mistakes_per_answer_entity"] == pytest.approx(1 / 3)
