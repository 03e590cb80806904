"""``kgqa eval`` end to end through click, with the factory replaced by a fake."""

from __future__ import annotations

import json
import os

import click
import pytest
from click.testing import CliRunner
from test_eval_fakes import DATA, FakeFactory

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


@pytest.mark.parametrize("name", ["metaqa", "grid", "compare", "report"])
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
