"""Running the real ``kgqa`` CLI in the test process: its exit code and what it printed."""

from __future__ import annotations

import pytest


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``kgqa <argv>`` through the CLI's own entry point: (exit code, stdout, stderr)."""
    from kgqa.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
