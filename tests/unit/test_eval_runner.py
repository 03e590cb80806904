"""Resumable runs: records, resume after an interruption, config mismatch, error records,
and the retrieval-ceiling run over N x K, all with fakes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_eval_fakes import DATA, GOOD_ANSWERS, FakePipeline, FakeRetriever

from kgqa.errors import ConfigError, GraphUnavailable
from kgqa.eval import datasets, runner

pytestmark = pytest.mark.unit


def _config(**kw):
    base = runner.EvalConfig(
        data_file="1-hop/qa_dev.txt", hops=1, split="dev", limit=None, seed=0, mode="kgrag",
        n_hops=2, top_k=5, model="fake", data_fingerprint="f",
    )  # fmt: skip
    return replace(base, **kw)


def _lines(out):
    return (out / runner.RECORDS_FILE).read_text(encoding="utf-8").splitlines()


@pytest.fixture
def questions():
    return datasets.load_split(DATA, 1, "dev")


def test_every_question_gets_an_auditable_record(tmp_path, questions):
    pipe = FakePipeline("kgrag", GOOD_ANSWERS, FakeRetriever(), n_hops=2, top_k=5)
    res = runner.run_eval(pipe, questions, tmp_path, _config(), progress=False)
    assert res.answered == 7 and res.resumed == 0
    records = [json.loads(line) for line in _lines(tmp_path)]
    assert [r["id"] for r in records] == list(range(1, 8))
    first = records[0]
    assert first["question"] == "who directed [Dark City]"
    assert first["entities"] == ["Dark City"] and first["gold"] == ["Alex Proyas"]
    assert first["qtype"] == "movie_to_director"
    assert first["answer"]["answer_text"] == first["answer"]["answer"] == "Alex Proyas"
    assert first["answer"]["reasoning"] == "looked it up"
    sub = first["answer"]["sub_questions"][0]
    assert sub["original"] == sub["reformulated"] == first["question"]
    assert sub["triple_ids"] and len(sub["triple_ids"]) == len(sub["scores"])
    assert first["metrics"]["hit1_paper"] is True and first["metrics"]["f1"] == 1.0
    assert first["metrics"]["in_top_k"] is True
    assert [c["stage"] for c in first["costs"]] == ["answer", "synthesis"]
    assert (first["mode"], first["model"], first["seed"]) == ("kgrag", "fake", 0)
    assert first["parameters"] == {"n_hops": 2, "top_k": 5}
    assert first["kgqa_version"]
    manifest = json.loads((tmp_path / runner.RUN_FILE).read_text())
    assert manifest["config"]["n_hops"] == 2 and manifest["kgqa"]["version"]
    assert json.loads((tmp_path / runner.AGGREGATE_FILE).read_text()) == res.aggregate


def test_error_records_are_counted_not_fatal(tmp_path, questions):
    pipe = FakePipeline("kgrag", GOOD_ANSWERS, FakeRetriever(), fail_on=[questions[0].text])
    res = runner.run_eval(pipe, questions, tmp_path, _config(), progress=False)
    errors = {r["id"]: r for r in res.records if r["status"] == "error"}
    # Line 7 names an entity missing from the graph; line 1 fails inside the pipeline.
    assert set(errors) == {1, 7}
    assert errors[7]["error"]["type"] == "EntityNotFound"
    assert "Nowhere Film" in errors[7]["error"]["message"]
    assert errors[1]["metrics"]["hit1_paper"] is False
    assert res.aggregate["n"] == 7 and res.aggregate["errors"] == 2


def test_fatal_errors_stop_the_run(tmp_path, questions):
    class Down(FakePipeline):
        def answer(self, question, entities):
            raise GraphUnavailable("Neo4j is not reachable")

    with pytest.raises(GraphUnavailable):
        runner.run_eval(Down(), questions, tmp_path, _config(), progress=False)
    assert _lines(tmp_path) == []


def test_resume_after_interruption_skips_finished_questions(tmp_path, questions):
    interrupted = FakePipeline("kgrag", GOOD_ANSWERS, interrupt_on=3)
    with pytest.raises(KeyboardInterrupt):
        runner.run_eval(interrupted, questions, tmp_path, _config(), progress=False)
    assert [json.loads(line)["id"] for line in _lines(tmp_path)] == [1, 2]
    rerun = FakePipeline("kgrag", GOOD_ANSWERS)
    res = runner.run_eval(rerun, questions, tmp_path, _config(), progress=False)
    assert rerun.calls == [q.text for q in questions[2:]]  # nothing answered twice
    assert (res.answered, res.resumed) == (5, 2)
    assert sorted(json.loads(line)["id"] for line in _lines(tmp_path)) == list(range(1, 8))
    # A third run has nothing to do.
    again = FakePipeline("kgrag", GOOD_ANSWERS)
    assert runner.run_eval(again, questions, tmp_path, _config(), progress=False).answered == 0
    assert again.calls == []


def test_torn_last_line_is_dropped_and_redone(tmp_path, questions):
    runner.run_eval(FakePipeline("kgrag", GOOD_ANSWERS), questions[:2], tmp_path, _config(), progress=False)  # fmt: skip
    path = tmp_path / runner.RECORDS_FILE
    with path.open("a") as f:
        f.write('{"id": 3, "kind": "answer", "stat')  # the process died mid-write
    pipe = FakePipeline("kgrag", GOOD_ANSWERS)
    runner.run_eval(pipe, questions[:3], tmp_path, _config(), progress=False)
    assert pipe.calls == [questions[2].text]
    assert [json.loads(line)["id"] for line in _lines(tmp_path)] == [1, 2, 3]


def test_other_config_in_the_same_dir_is_refused_naming_the_difference(tmp_path, questions):
    runner.run_eval(FakePipeline(), questions[:1], tmp_path, _config(), progress=False)
    with pytest.raises(ConfigError, match=r"seed: 0 there, 1 now"):
        runner.run_eval(FakePipeline(), questions[:1], tmp_path, _config(seed=1), progress=False)
    with pytest.raises(ConfigError, match=r"top_k: 5 there, 30 now"):
        runner.run_eval(FakePipeline(), questions[:1], tmp_path, _config(top_k=30), progress=False)


def test_limit_may_grow_but_not_shrink(tmp_path, questions):
    sample = datasets.sample(questions, 3, seed=0)
    runner.run_eval(FakePipeline(), sample, tmp_path, _config(limit=3), progress=False)
    bigger = datasets.sample(questions, 5, seed=0)
    pipe = FakePipeline()
    res = runner.run_eval(pipe, bigger, tmp_path, _config(limit=5), progress=False)
    assert len(pipe.calls) == 2 and res.resumed == 3
    assert json.loads((tmp_path / runner.RUN_FILE).read_text())["config"]["limit"] == 5
    with pytest.raises(ConfigError, match="may only grow"):
        runner.run_eval(FakePipeline(), sample, tmp_path, _config(limit=3), progress=False)


def test_retry_errors_answers_failed_questions_again(tmp_path, questions):
    failing = FakePipeline("kgrag", GOOD_ANSWERS, fail_on=[questions[0].text])
    runner.run_eval(failing, questions[:2], tmp_path, _config(), progress=False)
    fixed = FakePipeline("kgrag", GOOD_ANSWERS)
    res = runner.run_eval(fixed, questions[:2], tmp_path, _config(), retry_errors=True, progress=False)  # fmt: skip
    assert fixed.calls == [questions[0].text]
    assert res.aggregate["errors"] == 0 and res.aggregate["hit1_entity"] == 1.0
    assert len(runner.read_records(tmp_path)) == 2  # the retried record replaced the old one


def test_candidate_ceiling_and_checker_are_recorded(tmp_path, questions):
    def checker(q, answer):
        return {"mistakes": [] if answer.text in q.answers else [answer.text], "omissions": 0}

    pipe = FakePipeline("kgrag", GOOD_ANSWERS, FakeRetriever(), n_hops=1, top_k=2)
    res = runner.run_eval(
        pipe, questions[:6], tmp_path, _config(n_hops=1, top_k=2),
        retriever=FakeRetriever(), checker=checker, progress=False,
    )  # fmt: skip
    by_id = {r["id"]: r["metrics"] for r in res.records}
    assert by_id[1]["in_candidates"] is True and by_id[1]["candidates"] == 3
    assert "mistakes" in res.aggregate and "omissions" in res.aggregate
    assert res.aggregate["in_candidates"] == 1.0


def test_ceiling_run_over_the_grid(tmp_path):
    qs = datasets.load_split(DATA, 2, "dev")
    cfg = runner.CeilingConfig("2-hop/qa_dev.txt", 2, "dev", None, 0, (1, 2), (1, 10), "f")
    retr = FakeRetriever()
    res = runner.run_ceiling(retr, qs, tmp_path, cfg, progress=False)
    rec = {r["id"]: r for r in res.records}
    # "what genres are the movies written by [John Shirley] in" -> Action is 2 hops away.
    assert rec[1]["by_n"]["1"]["in_candidates"] is False
    assert rec[1]["by_n"]["2"]["in_candidates"] is True
    assert rec[1]["by_n"]["2"]["in_top_k"] == {"1": False, "10": True}
    assert rec[1]["query"] == "what genres are the movies written by John Shirley in"
    agg = res.aggregate
    assert agg["n"] == 4 and agg["by_n"]["1"]["in_candidates"] == 0.0
    assert agg["by_n"]["2"]["in_candidates"] == 1.0
    # One candidates() call per question and N; resuming makes none.
    assert len(retr.calls) == 8
    again = FakeRetriever()
    runner.run_ceiling(again, qs, tmp_path, cfg, progress=False)
    assert again.calls == []


def test_run_name_spells_the_config():
    assert runner.run_name(_config(limit=30, model="/x/y/Model-Q4.gguf"), "metaqa") == (
        "metaqa-1hop-dev-kgrag-N2-K5-Model-Q4-s0-n30"
    )
    # Another dataset: its folder's name, and a set without a hop count by its folder.
    conj = _config(data_file="conj/qa_dev.txt", hops=None, limit=None)
    assert runner.run_name(conj, "wc 2014") == "wc-2014-conj-dev-kgrag-N2-K5-fake-s0-all"
    ceiling = runner.CeilingConfig("conj/qa_dev.txt", None, "dev", 3, 1)
    assert runner.run_name(ceiling, "bands") == "bands-conj-dev-ceiling-s1-n3"
