"""benchmarks/bench_server.py still runs: its in-memory variant (the sample KB, a stand-in LLM)
for a fraction of a second per cell, every answer identical to the sequential one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_load_benchmark_runs_and_finds_no_error(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_server.py"), "--fake"]
    cmd += ["--duration", "0.5", "--clients", "1,3", "--questions", "4", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert [(r["clients"], r["cache"]) for r in result["rows"]] == [
        (1, False),
        (1, True),
        (3, False),
        (3, True),
    ]
    assert all(r["errors"] == 0 and r["answered"] > 0 for r in result["rows"])
    assert "| K | cache |" in done.stdout
