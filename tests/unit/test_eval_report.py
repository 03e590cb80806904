"""Reports from the fixture run directories (tests/fixtures/eval/run_dirs, made by make_runs.py)."""

from __future__ import annotations

import shutil

import pytest
from test_eval_fakes import FIXTURES

from kgqa.errors import ConfigError
from kgqa.eval import report

pytestmark = pytest.mark.unit

# Not "runs/": .gitignore keeps real runs out of the repo.
RUNS = FIXTURES / "run_dirs"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path.name} is not a PNG"
    assert data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_mean_std_uses_the_sample_std():
    assert report.mean_std([0.5, 1.0]) == (0.75, pytest.approx(0.353553, abs=1e-6))
    assert report.mean_std([0.4]) == (0.4, 0.0)
    assert report.mean_std([]) == (None, None)
    assert report.fmt_ms([0.5, 1.0]) == "0.750 ± 0.354"


def test_cells_group_seeds_of_one_config():
    runs = [report.load_run(p) for p in report.find_runs([RUNS])]
    cells = report.group_cells(runs)
    grid = [c for c in cells if c.key[0] == "answer" and c.config["mode"] == "kgrag"]
    assert all(c.seeds == [0, 1] for c in cells)
    assert len(grid) == 2 * 5  # two hops x (four grid cells + N3/K30)
    two_hop_n1 = next(
        c for c in grid if (c.config["hops"], c.config["n_hops"], c.config["top_k"]) == (2, 1, 10)
    )
    assert two_hop_n1.values("hit1_paper") == [0.0, 0.0]  # 2-hop gold is out of reach at N=1


def test_report_writes_markdown_tables_and_valid_pngs(tmp_path):
    md_path = report.write_report([RUNS], tmp_path / "out")
    md = md_path.read_text(encoding="utf-8")
    assert "| hops | mode | N | K | model | seeds | questions | Hit@1 paper |" in md
    assert "## Modes per hop (Experiment 2, Figure 6)" in md
    assert "| KG-RAG (full) | 0.500 ± 0.236 | 0.833 ± 0.236 |" in md
    assert "## N × K grid: kgrag, fake (Experiment 1, Figure 5)" in md
    assert "## Number of sub-questions per hop (Figure 8)" in md
    assert "| 2 | kgrag | 0 | 0 | 6 |" in md  # six 2-hop questions, two sub-questions each
    assert "## Retrieval ceiling (no LLM)" in md
    assert "| 2 | 1.000 ± 0.000 | 0.000 ± 0.000 | 1.000 ± 0.000 |" in md
    pngs = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert pngs == [
        "fig5_ceiling.png",
        "fig5_grid_kgrag_fake_hit1_entity.png",
        "fig5_grid_kgrag_fake_hit1_paper.png",
        "fig6_modes_hit1_entity.png",
        "fig6_modes_hit1_paper.png",
        "fig8_subquestions.png",
    ]
    for name in pngs:
        width, height = _png_size(tmp_path / "out" / name)
        assert width > 300 and height > 200
        assert f"]({name})" in md  # linked relative to the report


def test_report_on_one_run_dir_has_no_comparison_charts(tmp_path):
    one = next(p for p in RUNS.iterdir() if "llm" in p.name)
    md = report.write_report([one], tmp_path).read_text(encoding="utf-8")
    assert "## All answer runs" in md and "Figure 6" not in md
    assert not list(tmp_path.glob("*.png"))


def test_report_reads_records_not_the_stored_aggregate(tmp_path):
    run = next(p for p in RUNS.iterdir() if "kgrag-N3-K30" in p.name and "2hop" in p.name)
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    (copy / "aggregate.json").write_text('{"n": 999}')
    assert report.load_run(copy).aggregate["n"] == 3


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no run directories"):
        report.find_runs([tmp_path])
