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
    data = _setuptools()["package-data"]["kgqa.data.profiles"]
    assert any(Path("metaqa.toml").match(pattern) for pattern in data)
    assert (ROOT / "kgqa" / "data" / "profiles" / "metaqa.toml").is_file()


def test_the_page_of_kgqa_serve_ships() -> None:
    data = _setuptools()["package-data"]
    assert any(Path("index.html").match(p) for p in data["kgqa.server.static"])
    assert any(Path("cytoscape.min.js").match(p) for p in data["kgqa.server.static.vendor"])
    assert (ROOT / "kgqa" / "server" / "static" / "index.html").is_file()
