"""kgqa.eval.experiments as a library: the functions the eval commands wrap, called with a
fake factory (no click)."""

from __future__ import annotations

import json

import pytest
from test_eval_fakes import BAND_ANSWERS, BANDS, DATA, FakeFactory

from kgqa.errors import ConfigError, GraphUnavailable
from kgqa.eval import experiments
from kgqa.eval.datasets import QuestionSet
from kgqa.eval.metaqa import gold_path
from kgqa.settings import load_settings

pytestmark = pytest.mark.unit


@pytest.fixture
def factory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(FakeFactory, "built", [])
    return FakeFactory(load_settings({}, config=None))


def test_open_dataset_picks_the_qtype_reader():
    assert experiments.open_dataset(DATA).gold_path is gold_path
    assert experiments.open_dataset(DATA, "none").gold_path is None
    with pytest.raises(ConfigError, match="--qtypes must be one of metaqa, none"):
        experiments.open_dataset(DATA, "freebase")
    with pytest.raises(ConfigError, match="is not a directory"):
        experiments.open_dataset(DATA / "nope")


def test_run_set_writes_a_resumable_run_with_gold_path_omissions(factory, tmp_path):
    dataset = experiments.open_dataset(DATA)
    one = QuestionSet.named("2-hop")
    result = experiments.run_set(factory, dataset, one, "dev", mode="kgrag", limit=3, seed=0,
                                 progress=False)  # fmt: skip
    assert result.out_dir.parent.name == "runs"
    assert result.out_dir.name == "metaqa-2hop-dev-kgrag-N3-K30-qwen2.5-coder-1.5b-s0-n3"
    assert (result.answered, result.aggregate["n"], result.aggregate["checked"]) == (3, 3, 3)
    # MetaQA's qtype labels give gold paths, hence omissions.
    assert "omissions" in result.aggregate
    first = result.records[0]
    assert first["metrics"]["faith"]["path_source"] == "gold"
    manifest = json.loads((result.out_dir / "run.json").read_text())
    assert manifest["settings"]["retrieval"]["hops"] == 3 and "neo4j" not in manifest["settings"]
    again = experiments.run_set(factory, dataset, one, "dev", mode="kgrag", limit=3, seed=0,
                                progress=False)  # fmt: skip
    assert (again.answered, again.resumed) == (0, 3)


def test_run_set_without_check_or_ceiling(factory, tmp_path):
    dataset = experiments.open_dataset(DATA)
    result = experiments.run_set(factory, dataset, QuestionSet.named("1"), "dev", mode="kaping",
                                 limit=2, seed=1, out=tmp_path / "x", check=False, ceiling=False,
                                 progress=False)  # fmt: skip
    assert result.out_dir == tmp_path / "x"
    assert "checked" not in result.aggregate and "in_candidates" not in result.aggregate


def test_a_graph_that_is_down_says_how_to_skip_the_check(factory):
    class Down(FakeFactory):
        def rubric(self):
            raise GraphUnavailable("Neo4j is not reachable at bolt://127.0.0.1:7687")

    down = Down(factory.settings)
    dataset = experiments.open_dataset(DATA)
    with pytest.raises(GraphUnavailable, match="--no-check skips it"):
        experiments.run_set(down, dataset, QuestionSet.named("1"), "dev", mode="llm", limit=1,
                            seed=0, progress=False)  # fmt: skip


def test_grid_builds_one_factory_per_cell_and_closes_it(factory, monkeypatch, tmp_path):
    monkeypatch.setattr(FakeFactory, "kb", BANDS / "kb.txt")
    monkeypatch.setattr(FakeFactory, "answers", BAND_ANSWERS)
    built = []

    def factory_for(n, k):
        f = FakeFactory(load_settings({"retrieval.hops": n, "retrieval.top_k": k}, config=None))
        built.append(f)
        return f

    dataset = experiments.open_dataset(BANDS, "none")
    sets = [QuestionSet.named("1-hop"), QuestionSet.named("conj")]
    samples = experiments.Samples(dataset, sets, "dev", 2, [0, 1])
    table = experiments.grid(factory_for, samples, n_values=[1, 2], k_values=[5], mode="kgrag",
                             out=tmp_path / "runs", progress=False)  # fmt: skip
    assert [(r["hops"], r["N"], r["K"]) for r in table.rows] == [
        (1, 1, 5), (1, 2, 5), ("conj", 1, 5), ("conj", 2, 5),
    ]  # fmt: skip
    assert all(r["seeds"] == [0, 1] for r in table.rows)
    assert table.keys == ["hops", "N", "K"] and "hit1_entity" in table.metrics
    assert [f.settings.retrieval.hops for f in built] == [1, 2] and all(f.closed for f in built)
    # Each factory answered every (set, seed) sample: 2 sets x 2 seeds x 2 questions.
    assert [len(f.pipelines[0].calls) for f in built] == [8, 8]


def test_compare_rows_follow_the_sets_then_the_modes(factory, monkeypatch, tmp_path):
    dataset = experiments.open_dataset(DATA)
    samples = experiments.Samples(
        dataset, [QuestionSet.named("2"), QuestionSet.named("1")], "dev", 2, [0]
    )
    table = experiments.compare(factory, samples, modes=["llm", "kgrag"], out=tmp_path / "runs",
                                progress=False)  # fmt: skip
    assert [(r["hops"], r["mode"]) for r in table.rows] == [
        (2, "llm"), (2, "kgrag"), (1, "llm"), (1, "kgrag"),
    ]  # fmt: skip
    assert "mistake_rate" in table.metrics
