"""What a wheel of kgqa ships: every package under kgqa/ and every data file the code reads
(pyproject.toml lists packages explicitly, so a new folder must be added there; an editable
install would never notice)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]


def test_every_python_folder_under_kgqa_is_a_listed_package() -> None:
    listed = set(_setuptools()["packages"])
    folders = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "kgqa").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert folders - listed == set()


def test_the_packaged_profiles_ship() -> None:
    data = _setuptools()["package-data"]["kgqa.data"]
    assert any(Path("profiles/metaqa.toml").match(pattern) for pattern in data)
    assert (ROOT / "kgqa" / "data" / "profiles" / "metaqa.toml").is_file()
