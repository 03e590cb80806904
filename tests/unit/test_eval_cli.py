"""``kgqa eval`` end to end through click, with the factory replaced by a fake."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_eval_fakes import BAND_ANSWERS, BANDS, DATA, FakeFactory

from kgqa.commands import eval_cmd
from kgqa.errors import ConfigError

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """No config file, no KGQA_* variables, a fake factory; work in tmp_path."""
    for var in list(os.environ):
        if var.startswith(("KGQA_", "NEO4J_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("kgqa.factory.Factory", FakeFactory)
    FakeFactory.built = []


def _run(*args):
    return CliRunner().invoke(eval_cmd.eval, list(args), catch_exceptions=True)


def test_metaqa_short_real_run_json_and_resume(tmp_path):
    args = ["metaqa", "--data", str(DATA), "--hops", "1", "--limit", "3", "--seed", "0",
            "--mode", "kaping", "--n-hops", "1", "--top-k", "5", "--out", "run", "--json",
            "--no-progress"]  # fmt: skip
    result = _run(*args)
    assert result.exit_code == 0, result.output
    agg = json.loads(result.stdout)
    assert {"n", "hit1_paper", "hit1_entity", "f1", "seconds_median"} <= agg.keys()
    assert agg["n"] == 3
    lines = (tmp_path / "run" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 3
    record = json.loads(lines[0])
    assert (record["mode"], record["n_hops"], record["top_k"]) == ("kaping", 1, 5)
    (factory,) = FakeFactory.built
    assert factory.closed
    assert [p.mode for p in factory.pipelines] == ["kaping"]
    assert len(factory.pipelines[0].calls) == 3
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["config"]["data_file"] == "1-hop/qa_dev.txt"
    assert manifest["entity_names"].endswith("kb.txt")
    # The same command again: everything is resumed, nothing answered.
    again = _run(*[a for a in args if a != "--json"])
    assert again.exit_code == 0, again.output
    assert "0 answered now, 3 resumed" in again.stdout
    assert "Hit@1 (paper)" in again.stdout
    assert FakeFactory.built[-1].pipelines[0].calls == []


def test_metaqa_default_out_dir_is_named_after_the_config(tmp_path):
    result = _run("metaqa", "--data", str(DATA), "--hops", "2", "--limit", "2", "--mode", "llm",
                  "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name == "metaqa-2hop-dev-llm-N3-K30-qwen2.5-coder-1.5b-s0-n2"


def test_metaqa_other_config_in_same_out_is_refused(tmp_path):
    base = ["metaqa", "--data", str(DATA), "--limit", "2", "--out", "run", "--no-progress"]
    assert _run(*base, "--seed", "0").exit_code == 0
    result = _run(*base, "--seed", "1")
    assert isinstance(result.exception, ConfigError)
    assert "seed: 0 there, 1 now" in str(result.exception)


def test_metaqa_without_data_says_to_pass_data():
    result = _run("metaqa", "--limit", "1")
    assert isinstance(result.exception, ConfigError)
    assert "pass --data" in str(result.exception)


def test_grid_ceiling_only_uses_no_pipeline(tmp_path):
    result = _run("grid", "--data", str(DATA), "--hops", "1,2", "--limit", "3", "--seeds", "0-1",
                  "--n-values", "1,2", "--k-values", "1,10", "--ceiling-only", "--json",
                  "--no-progress", "--out", "runs")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 2 * 2 * 2  # hops x N x K, seeds folded into mean ± std
    assert all(r["seeds"] == [0, 1] for r in rows)
    two_hop_n1 = [r for r in rows if r["hops"] == 2 and r["N"] == 1]
    assert all(r["in_candidates_mean"] == 0.0 for r in two_hop_n1)
    assert all(not f.pipelines for f in FakeFactory.built)
    assert len(list((tmp_path / "runs").iterdir())) == 4  # one run per hop and seed


def test_grid_builds_one_pipeline_per_cell(tmp_path):
    result = _run("grid", "--data", str(DATA), "--hops", "2", "--limit", "2", "--n-values",
                  "1,2", "--k-values", "10", "--json", "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["N"], r["K"]) for r in rows] == [(1, 10), (2, 10)]
    hops = [f.settings.retrieval.hops for f in FakeFactory.built]
    assert hops == [1, 2]
    assert {"hit1_paper_mean", "hit1_entity_mean", "f1_mean"} <= rows[0].keys()


def test_compare_runs_every_mode_on_the_same_sample_then_report(tmp_path):
    result = _run("compare", "--data", str(DATA), "--hops", "1,2", "--limit", "3",
                  "--modes", "kgrag,kaping,llm", "--json", "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["hops"], r["mode"]) for r in rows] == [
        (1, "kgrag"), (1, "kaping"), (1, "llm"), (2, "kgrag"), (2, "kaping"), (2, "llm"),
    ]  # fmt: skip
    (factory,) = FakeFactory.built
    calls = {p.mode: p.calls for p in factory.pipelines}
    assert calls["kgrag"] == calls["kaping"] == calls["llm"]
    rep = CliRunner().invoke(eval_cmd.eval, ["report", "runs", "--out", "rep"])
    assert rep.exit_code == 0, rep.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Figure 6" in md
    assert (tmp_path / "rep" / "fig6_modes_hit1_paper.png").is_file()


def test_bad_lists_are_usage_errors():
    result = _run("compare", "--data", str(DATA), "--modes", "kgrag,nope")
    assert result.exit_code == 2 and "modes are" in result.output
    result = _run("grid", "--data", str(DATA), "--seeds", "5-1")
    assert result.exit_code == 2 and "0-9" in result.output


@pytest.mark.parametrize("name", ["run", "metaqa", "grid", "compare", "report"])
def test_every_command_has_help(name):
    command = eval_cmd.eval.commands[name]
    assert command.help and command.help.strip()
    result = CliRunner().invoke(eval_cmd.eval, [name, "--help"])
    assert result.exit_code == 0
    assert isinstance(command, click.Command)


def test_parse_ints():
    assert eval_cmd.parse_ints("0-3,7", "--seeds") == [0, 1, 2, 3, 7]
    assert eval_cmd.parse_ints("2", "--hops") == [2]


def test_eval_is_registered_on_the_kgqa_command():
    from kgqa.cli import cli

    assert cli.commands["eval"] is eval_cmd.eval


def test_qtype_choices_match_the_library():
    from kgqa.eval.experiments import QTYPE_READERS

    assert tuple(QTYPE_READERS) == eval_cmd.QTYPES


# -- any dataset in MetaQA's layout (tests/fixtures/eval/bands: invented, not movies) ----------


@pytest.fixture
def bands(monkeypatch):
    """The fake factory stands for the bands data folder: its KB and its answers."""
    monkeypatch.setattr(FakeFactory, "kb", BANDS / "kb.txt")
    monkeypatch.setattr(FakeFactory, "answers", BAND_ANSWERS)


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


def test_run_on_a_conj_set_passes_every_entity_and_names_the_run_after_the_data(tmp_path, bands):
    result = _run("run", "--data", str(BANDS), "--set", "conj", "--mode", "kaping", "--json",
                  "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    agg = json.loads(result.stdout)
    assert (agg["n"], agg["errors"], agg["hit1_entity"]) == (4, 0, 1.0)
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name == "bands-conj-dev-kaping-N3-K30-qwen2.5-coder-1.5b-s0-all"
    assert agg["run_dir"] == str(Path("runs") / run.name)
    (factory,) = FakeFactory.built
    assert factory.pipelines[0].entities == [
        ("Aster City", "Dune Rock"),
        ("Ida Vale", "Bo Renn"),
        ("Cello", "Copper Owls"),
        ("Glass Jazz", "Port Selby"),
    ]
    first = _records(run)[0]
    assert first["entities"] == ["Aster City", "Dune Rock"] and first["hops"] is None
    assert first["answer"]["entities"] == ["Aster City", "Dune Rock"]  # the answer document
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["config"]["data_file"] == "conj/qa_dev.txt"
    assert manifest["config"]["hops"] is None and manifest["dataset"] == "bands"
    assert manifest["entity_names"].endswith("bands/kb.txt")
    # Checked against the data folder's graph: every answer is one triple from both topics.
    assert agg["checked"] == 4 and agg["mistakes_total"] == 0 and agg["mistake_rate"] == 0.0
    assert "metaqa" not in run.name


def test_run_reads_qtype_labels_only_when_told_how(tmp_path, bands):
    base = ["run", "--data", str(BANDS), "--set", "2", "--mode", "kgrag", "--json", "--no-progress"]
    # The 2-hop labels are the dataset's own, not MetaQA's: read as MetaQA's (the default),
    # each question records why it was not checked; the run itself goes on.
    labels = _run(*base, "--out", "labels")
    assert labels.exit_code == 0, labels.output
    assert "checked" not in json.loads(labels.stdout)
    errors = {r["metrics"].get("faith_error", "") for r in _records(tmp_path / "labels")}
    assert all("unknown MetaQA qtype" in e for e in errors) and len(errors) == 4
    # --qtypes none: checked without a gold path (no omissions), mistakes found.
    plain = _run(*base, "--qtypes", "none", "--out", "plain")
    assert plain.exit_code == 0, plain.output
    agg = json.loads(plain.stdout)
    assert (agg["n"], agg["hit1_entity"], agg["hit1_paper"]) == (4, 1.0, 0.75)
    assert agg["checked"] == 4 and "omissions" not in agg
    last = _records(tmp_path / "plain")[3]
    assert last["qtype"] == "genre_to_band_to_city"
    spans = {(m["stage"], m["span"], m["reason"]) for m in last["metrics"]["faith"]["mistakes"]}
    assert spans == {("answer", "Atlantis", "not in KB"), ("sub-answer 1", "Atlantis", "not in KB")}
    assert agg["mistakes_total"] == 2 and agg["questions_with_mistakes"] == 0.25


def test_run_on_a_missing_set_names_the_sets_there(bands):
    result = _run("run", "--data", str(BANDS), "--set", "3-hop")
    assert isinstance(result.exception, ConfigError)
    assert "question sets there: 1-hop, 2-hop, conj" in str(result.exception)


def test_compare_and_grid_cover_every_set_of_a_dataset_and_report_them(tmp_path, monkeypatch):
    # MetaQA's fixture first, then the bands dataset into the same runs/ folder.
    args = ["compare", "--modes", "kgrag,llm", "--limit", "2", "--json", "--no-progress"]
    assert _run(*args, "--data", str(DATA), "--hops", "1").exit_code == 0
    monkeypatch.setattr(FakeFactory, "kb", BANDS / "kb.txt")
    monkeypatch.setattr(FakeFactory, "answers", BAND_ANSWERS)
    result = _run(*args, "--data", str(BANDS), "--qtypes", "none")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["hops"], r["mode"]) for r in rows] == [
        (1, "kgrag"), (1, "llm"), (2, "kgrag"), (2, "llm"), ("conj", "kgrag"), ("conj", "llm"),
    ]  # fmt: skip
    assert all(r["n"] == 2 for r in rows)
    ceiling = _run("grid", "--data", str(BANDS), "--hops", "1,conj", "--ceiling-only", "--limit",
                   "3", "--n-values", "1", "--k-values", "2", "--json", "--no-progress")  # fmt: skip
    assert ceiling.exit_code == 0, ceiling.output
    cells = json.loads(ceiling.stdout)
    assert [(r["hops"], r["N"], r["K"]) for r in cells] == [(1, 1, 2), ("conj", 1, 2)]
    assert cells[1]["in_candidates_mean"] == 1.0  # conj gold is one hop from both entities
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert sum(n.startswith("bands-") for n in names) == 8
    assert sum(n.startswith("metaqa-") for n in names) == 2
    assert "bands-conj-dev-ceiling-s0-n3" in names
    rep = CliRunner().invoke(eval_cmd.eval, ["report", "runs", "--out", "rep"])
    assert rep.exit_code == 0, rep.output
    md = (tmp_path / "rep" / "report.md").read_text()
    # Two datasets: a data column, and each set named with its dataset.
    assert "| data | hops | mode | N | K |" in md
    assert "| bands | conj | kgrag |" in md
    assert "| mode | bands 1-hop | bands 2-hop | bands conj | metaqa 1-hop |" in md
    assert "**bands conj, dev, seeds 0, 3 questions**" in md
    assert (tmp_path / "rep" / "fig5_ceiling.png").is_file()
